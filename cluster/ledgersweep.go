package cluster

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// reservationGrace: the reservation of a queued job whose record is missing is dropped only once
// it is older than this. Its Submit writes the record just after the reservation, and deletes
// both when it fails, all within seconds.
const reservationGrace = time.Minute

// sweepReservations drops, from every record of the ledger, the reservations of jobs that hold
// quota for nothing: the job ended (its end drops the reservation, but that write can fail while
// the cluster elects a leader) or its record is missing (a failed Submit that could not undo its
// reservation, or a job deleted). Each is dropped only if it is still as read, in one
// compare-and-swap per record. A job's reservation lasts JobLease otherwise: an hour of quota
// lost. It returns how many it dropped.
func sweepReservations(ctx context.Context, l *Ledger, jobs jetstream.KeyValue) (int, error) {
	type stale struct {
		key string
		res map[string]reservation
	}
	var found []stale
	err := scan(ctx, l.kv, ">", func(key string, data []byte) {
		var r ledgerRecord
		if decode(l.log, "ledger", key, data, &r) != nil {
			return
		}
		now := l.now()
		s := stale{key: key, res: map[string]reservation{}}
		for id, v := range r.Res {
			jobID, ok := strings.CutPrefix(id, JobHoldID(""))
			if !ok || !now.Before(v.Expires) { // not a job's, or expired: update prunes it
				continue
			}
			if jobStale(ctx, l, jobs, jobID, v, now) {
				s.res[id] = v
			}
		}
		if len(s.res) > 0 {
			found = append(found, s)
		}
	})
	dropped := 0
	for _, s := range found {
		var ids []string
		if _, uerr := l.dropIf(ctx, s.key, func(id string, v reservation) bool {
			was, ok := s.res[id]
			if ok && v.Node == was.Node && v.Slot == was.Slot && v.Expires.Equal(was.Expires) {
				ids = append(ids, id)
				return true
			}
			return false
		}); uerr != nil {
			err = errors.Join(err, uerr)
			continue
		}
		dropped += len(ids)
		l.log.Warn().Str("ledger", s.key).Strs("reservations", ids).Msg("reservations of jobs ended or gone released unbilled")
	}
	return dropped, err
}

// jobStale reports whether the reservation v of job jobID holds quota for nothing: the job ended,
// or it was never claimed and has no record past the grace. A record that cannot be read keeps it.
func jobStale(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string, v reservation, now time.Time) bool {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e, err := jobs.Get(gctx, jobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// A queued job's reservation is never renewed: it was taken JobLease before it expires.
		return !v.Slot && now.Sub(v.Expires.Add(-JobLease)) > reservationGrace
	}
	if err != nil {
		return false
	}
	var r jobRecord
	return decode(l.log, "job", jobKey(jobID), e.Value(), &r) == nil && r.Job.Final()
}
