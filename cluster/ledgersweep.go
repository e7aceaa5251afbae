package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd"
)

// sweptPeriods: the sweep reads the ledger records of the periods that started within this
// (a month's period, a day's margin, and the hour a job's reservation lasts past its end); the
// older ones are what the accounts were billed, and hold nothing live.
const sweptPeriods = 32*24*time.Hour + JobLease

// recent reports whether the ledger record key (LedgerKey) is of a period that started after
// since; a key not of that form is read.
func recent(key string, since time.Time) bool {
	i := strings.LastIndexByte(key, '.')
	start, err := strconv.ParseInt(key[i+1:], 10, 64)
	return i < 0 || err != nil || time.Unix(start, 0).After(since)
}

// sweepUpdateTimeout bounds the sweep's write of one ledger record: one that cannot be written
// (no quorum, a record of a newer version) does not hold the pass up.
const sweepUpdateTimeout = 10 * time.Second

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
	dropped, _, err := sweepLedgerAfter(ctx, js, l, jobs, "")
	return dropped, err
}

// sweepLedgerAfter is sweepReservations over the records whose keys sort after after ("": all),
// each record dealt with as soon as it is read, so that a pass cut by ctx has done what it read.
// last is the last record dealt with when ctx cut the pass ("" when the pass ended), where the
// next pass goes on: on a ledger too large for one pass, every record is reached in turn.
func sweepLedgerAfter(ctx context.Context, js jetstream.JetStream, l *Ledger, jobs jetstream.KeyValue, after string) (dropped int, last string, err error) {
	since := l.now().Add(-sweptPeriods)
	keep := func(key string) bool { return key > after && recent(key, since) }
	serr := scanWhere(ctx, js, l.kv, ">", keep, func(key string, data []byte) {
		if ctx.Err() != nil {
			return
		}
		n, rerr := sweepRecord(ctx, js, l, jobs, key, data)
		dropped += n
		err = errors.Join(err, rerr)
		if ctx.Err() == nil {
			last = key
		}
	})
	if ctx.Err() == nil {
		last = "" // the whole ledger was read: the next pass starts over
	}
	return dropped, last, errors.Join(serr, err)
}

// sweepRecord deals with one ledger record, key, read as data: it queues again its orphan jobs,
// ends its undone ones, and drops its stale reservations and the bills of ended jobs.
func sweepRecord(ctx context.Context, js jetstream.JetStream, l *Ledger, jobs jetstream.KeyValue, key string, data []byte) (int, error) {
	var r ledgerRecord
	if decode(l.log, "ledger", key, data, &r) != nil {
		return 0, nil
	}
	now := l.now()
	stale := map[string]reservation{}
	var bills, orphans, undone []string // bills: of jobs that ended, past the tries of the call that billed them
	for id, v := range r.Res {
		jobID, ok := strings.CutPrefix(id, jobHoldPrefix)
		if !ok || !now.Before(v.Expires) { // not a job's, or expired: update prunes it
			continue
		}
		isStale, orphan := jobStale(ctx, l, jobs, jobID, v, now)
		if isStale {
			stale[id] = v
		}
		if orphan && v.Undone {
			undone = append(undone, jobID) // its request failed: ended, not queued
		} else if orphan {
			orphans = append(orphans, jobID)
		}
	}
	for id, until := range r.Bills {
		if jobID, ok := strings.CutPrefix(id, jobHoldPrefix); ok && now.After(time.Unix(until, 0)) && jobEnded(ctx, l, jobs, jobID) {
			bills = append(bills, id)
		}
	}
	var err error
	for _, id := range orphans {
		err = errors.Join(err, requeue(ctx, js, l, jobs, id))
	}
	for _, id := range undone {
		err = errors.Join(err, endUndone(ctx, l, jobs, id))
	}
	if len(stale) == 0 && len(bills) == 0 {
		return 0, err
	}
	var ids []string
	uctx, cancel := context.WithTimeout(ctx, sweepUpdateTimeout)
	defer cancel()
	_, uerr := l.update(uctx, key, func(r *ledgerRecord, now time.Time) error {
		ids = ids[:0]
		for id, v := range r.Res {
			if was, ok := stale[id]; ok && v.Node == was.Node && v.Slot == was.Slot && v.Expires.Equal(was.Expires) {
				delete(r.Res, id)
				ids = append(ids, id)
			}
		}
		forgot := 0
		for _, id := range bills {
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
		return 0, errors.Join(err, uerr)
	}
	if len(ids) > 0 {
		l.log.Warn().Str("ledger", key).Strs("reservations", ids).Msg("reservations of jobs ended or gone released unbilled")
	}
	return len(ids), err
}

// jobStale reports whether the reservation v of job jobID holds quota for nothing (stale): the
// job ended, or it was never claimed and has no record past the grace. A record that cannot be
// read keeps it. orphan: the job has been queued past the grace without ever starting, and was
// not queued again yet: its message may be missing (requeue).
func jobStale(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string, v reservation, now time.Time) (stale, orphan bool) {
	r, found, ok := readJob(ctx, l, jobs, jobID)
	if ok && !found {
		// A queued job's reservation is never renewed: it was taken JobLease before it expires.
		return !v.Slot && now.Sub(v.Expires.Add(-JobLease)) > reservationGrace, false
	}
	if !ok {
		return false, false
	}
	return r.Job.Final(), orphanCandidate(r, now)
}

// orphanCandidate: a job queued for longer than the grace that never started and was not
// queued again. Its node may have died between its record and its message: a job nobody runs,
// with its reservation held, and perhaps a 202 answered.
func orphanCandidate(r jobRecord, now time.Time) bool {
	return r.Job.Status == shotd.JobQueued && r.Starts == 0 && !r.Billing && !r.Requeued &&
		now.Sub(r.Job.UpdatedAt) > reservationGrace
}

// requeue queues job jobID's message again if the job is still an orphan candidate, then says
// so in its record, so that a job waiting for a slot (its message in the stream all along) gets
// at most one more. The message has the id of the first: within two minutes of it the stream
// drops it; later it does not, and the job has two messages. That is harmless: a node does not
// take over a job that another live node renders (Ledger.Claim: errClaimed), nor run one twice
// itself (Jobs.enter), and a message of an ended job is acknowledged. Checking the stream for
// the job's message instead would need a subject per job, which nodes of the previous version
// (whose consumer filters one subject) would undo in a rolling restart.
func requeue(ctx context.Context, js jetstream.JetStream, l *Ledger, jobs jetstream.KeyValue, jobID string) error {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, _, err := readJobRev(gctx, l, jobs, jobID)
	if err != nil || !orphanCandidate(r, l.now()) {
		return err
	}
	data, _ := json.Marshal(workMsg{V: recordVersion, Kind: "job", ID: jobID})
	if _, err := js.Publish(gctx, subjectJob, data, jetstream.WithMsgID("job-"+jobID)); err != nil {
		return fmt.Errorf("cluster: queue job %s again: %w", jobID, err)
	}
	l.log.Warn().Str("job", jobID).Msg("job queued for a while without starting: its message queued again")
	// Marked even when a node took the job on the message just sent: the mark says it has had
	// its one more message.
	return markJob(gctx, l, jobs, jobID, func(r *jobRecord) bool {
		was := r.Requeued
		r.Requeued = true
		return !was
	})
}

// markJob changes job jobID's record with change (false: leave it as it is) in a
// compare-and-swap, read again when another write came between, until ctx ends: a node may
// take the job or write its webhook's state at any moment, several times in a row. Any other
// failure ends it.
func markJob(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string, change func(*jobRecord) bool) error {
	_, err := casRecord(ctx,
		func(ctx context.Context) (jobRecord, uint64, []byte, error) {
			r, rev, err := readJobRev(ctx, l, jobs, jobID)
			return r, rev, nil, err
		},
		func(ctx context.Context, r *jobRecord, rev uint64) ([]byte, error) {
			return nil, writeJobRev(ctx, jobs, jobID, *r, rev)
		},
		func(r *jobRecord) error {
			if !change(r) {
				return errUnchanged
			}
			return nil
		},
		func(attempt int, err error) error {
			if conflict(err) && pause(ctx, attempt) {
				return nil
			}
			return err
		})
	return err
}

// readJobRev reads job jobID's record and its revision, for writeJobRev.
func readJobRev(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) (jobRecord, uint64, error) {
	var r jobRecord
	e, err := jobs.Get(ctx, jobKey(jobID))
	if err != nil {
		return r, 0, err
	}
	if err := decode(l.log, "job", jobKey(jobID), e.Value(), &r); err != nil {
		return r, 0, err
	}
	r.Job.Webhook = r.Hook.state() // encode moves it to Hook
	return r, e.Revision(), nil
}

// writeJobRev writes r back if nobody wrote it since its revision rev.
func writeJobRev(ctx context.Context, jobs jetstream.KeyValue, jobID string, r jobRecord, rev uint64) error {
	data, err := r.encode()
	if err == nil {
		_, err = jobs.Update(ctx, jobKey(jobID), data, rev)
	}
	return err
}

// endUndone ends failed job jobID, whose request failed after its record was written and whose
// undo could neither remove nor end it (its reservation says so): the request was answered 503,
// so the job must not run. The next sweep drops its reservation (its job ended).
func endUndone(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) error {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ended := false
	err := markJob(gctx, l, jobs, jobID, func(r *jobRecord) bool {
		if undoneJob(r) != nil {
			return false
		}
		r.Job.UpdatedAt = l.now().UTC()
		ended = true
		return true
	})
	if err == nil && ended {
		l.log.Warn().Str("job", jobID).Msg("job of a failed request left queued: ended failed")
	}
	return err
}

// jobEnded reports whether job jobID ended or is gone: no delivery bills it any more.
func jobEnded(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) bool {
	r, found, ok := readJob(ctx, l, jobs, jobID)
	return ok && (!found || r.Job.Final())
}

// readJob reads job jobID's record (found: it has one); ok is false when it could not be read.
func readJob(ctx context.Context, l *Ledger, jobs jetstream.KeyValue, jobID string) (r jobRecord, found, ok bool) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, _, err := readJobRev(gctx, l, jobs, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return r, false, true
	}
	return r, err == nil, err == nil
}
