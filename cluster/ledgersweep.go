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
// reservation, or a job deleted). A job's reservation lasts JobLease otherwise: an hour of quota
// lost. Each is dropped only if it is still as read, in one compare-and-swap per record, which
// also forgets the bills of jobs that ended (no delivery bills them again). It returns how many
// reservations it dropped.
func sweepReservations(ctx context.Context, js jetstream.JetStream, l *Ledger, jobs jetstream.KeyValue) (int, error) {
	type stale struct {
		key   string
		res   map[string]reservation
		bills []string // of jobs that ended, past the tries of the call that billed them
	}
	var found []stale
	err := scan(ctx, js, l.kv, ">", func(key string, data []byte) {
		var r ledgerRecord
		if decode(l.log, "ledger", key, data, &r) != nil {
			return
		}
		now := l.now()
		s := stale{key: key, res: map[string]reservation{}}
		for id, v := range r.Res {
			jobID, ok := strings.CutPrefix(id, jobHoldPrefix)
			if !ok || !now.Before(v.Expires) { // not a job's, or expired: update prunes it
				continue
			}
			if jobStale(ctx, l, jobs, jobID, v, now) {
				s.res[id] = v
			}
		}
		for id, until := range r.Bills {
			if jobID, ok := strings.CutPrefix(id, jobHoldPrefix); ok && now.After(time.Unix(until, 0)) && jobEnded(ctx, l, jobs, jobID) {
				s.bills = append(s.bills, id)
			}
		}
		if len(s.res) > 0 || len(s.bills) > 0 {
			found = append(found, s)
		}
	})
	dropped := 0
	for _, s := range found {
		var ids []string
		_, uerr := l.update(ctx, s.key, func(r *ledgerRecord, now time.Time) error {
			ids = ids[:0]
			for id, v := range r.Res {
				if was, ok := s.res[id]; ok && v.Node == was.Node && v.Slot == was.Slot && v.Expires.Equal(was.Expires) {
					delete(r.Res, id)
					ids = append(ids, id)
				}
			}
			forgot := 0
			for _, id := range s.bills {
				if _, ok := r.Bills[id]; ok {
					delete(r.Bills, id)
					forgot++
				}
			}
			if len(ids) == 0 && forgot == 0 {
				return errSettled
			}
			return nil
		})
		if uerr != nil {
			err = errors.Join(err, uerr)
			continue
		}
		dropped += len(ids)
		if len(ids) > 0 {
			l.log.Warn().Str("ledger", s.key).Strs("reservations", ids).Msg("reservations of jobs ended or gone released unbilled")
		}
	}
	return dropped, err
}

// jobStale reports whether the reservation v of job jobID holds quota for nothing: the job ended,
// or it was never claimed and has no record past the grace. A record that cannot be read keeps it.
func jobStale(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string, v reservation, now time.Time) bool {
	final, found, ok := readJob(ctx, l, jobs, jobID)
	if ok && !found {
		// A queued job's reservation is never renewed: it was taken JobLease before it expires.
		return !v.Slot && now.Sub(v.Expires.Add(-JobLease)) > reservationGrace
	}
	return ok && final
}

// jobEnded reports whether job jobID ended or is gone: no delivery bills it any more.
func jobEnded(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) bool {
	final, found, ok := readJob(ctx, l, jobs, jobID)
	return ok && (final || !found)
}

// readJob reads whether job jobID has a record (found) and ended (final); ok is false when the
// record could not be read.
func readJob(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) (final, found, ok bool) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e, err := jobs.Get(gctx, jobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, false, true
	}
	var r jobRecord
	if err != nil || decode(l.log, "job", jobKey(jobID), e.Value(), &r) != nil {
		return false, false, false
	}
	return r.Job.Final(), true, true
}
