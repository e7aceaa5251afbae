package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

// bucketUnbilled holds a mark for each job whose end is recorded and whose usage (billed
// success, or counted failure) is not yet: job id -> unbilledJob. The end and the mark are one
// transaction (EndJob), the usage and the mark's deletion another (RecordJobUsage), so that a
// process killed between the two leaves the mark, which the next start counts (BillEndedJobs).
var bucketUnbilled = []byte("unbilled_jobs")

// errCounted: the job's usage was counted already; nothing is written.
var errCounted = errors.New("store: the job's usage is counted already")

type unbilledJob struct {
	AccountID string    `json:"account_id"`
	Count     string    `json:"count"` // what it counts: succeeded (billed), failed, cache_hit
	At        time.Time `json:"at"`    // the end, the period and day it counts in
}

// counts names the outcomes a job's end counts in its account's usage.
var counts = map[shotd.Outcome]string{shotd.OutcomeSucceeded: "succeeded", shotd.OutcomeFailed: "failed", shotd.OutcomeCacheHit: "cache_hit"}

// EndJob is UpdateJob for the update that ends the job, whose outcome o its account's usage is
// to count: when the job ends, a mark of that is written in the same transaction
// (RecordJobUsage deletes it). A released outcome counts nothing and leaves no mark.
func (s *Store) EndJob(jobID string, fn func(*shotd.Job) error, o shotd.Outcome) (shotd.Job, error) {
	return s.updateJob(jobID, fn, func(tx *bbolt.Tx, j shotd.Job) error {
		count, ok := counts[o]
		if !ok {
			return nil
		}
		return putJSON(tx.Bucket(bucketUnbilled), j.JobID, unbilledJob{AccountID: j.AccountID, Count: count, At: j.UpdatedAt})
	})
}

// RecordJobUsage is RecordUsage for the end of job jobID, made once: with the job's mark, which
// it deletes in the same transaction; without it (counted at a start, or the job deleted) it
// writes nothing.
func (s *Store) RecordJobUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int, jobID string) (shotd.Usage, shotd.Account, error) {
	return s.recordUsage(acc, now, d, quota, jobID)
}

// BillEndedJobs counts the usage of the jobs whose end was recorded and whose usage was not (the
// process was killed in between, or the usage write failed): each in the period and day of its
// end, a success billed against its account's plan's quota (quotaOf; false: the plan is not
// configured, and the mark is kept for a start that has it). Run at start, before any account
// loads its usage. It returns how many it counted.
func (s *Store) BillEndedJobs(quotaOf func(plan string) (int, bool)) (int, error) {
	type mark struct {
		id string
		unbilledJob
	}
	var marks []mark
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketUnbilled).ForEach(func(k, v []byte) error {
			var u unbilledJob
			if err := json.Unmarshal(v, &u); err != nil {
				return fmt.Errorf("store: unbilled job %s: %w", k, err)
			}
			marks = append(marks, mark{string(k), u})
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range marks {
		acc, err := s.Account(m.AccountID)
		if errors.Is(err, shotd.ErrNotFound) { // the account is gone: nothing to count in
			if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketUnbilled).Delete([]byte(m.id)) }); err != nil {
				return n, err
			}
			continue
		}
		if err != nil {
			return n, err
		}
		quota, ok := quotaOf(acc.Plan)
		if !ok {
			continue
		}
		var d shotd.UsageDelta
		switch m.Count {
		case "succeeded":
			d.Succeeded = 1
		case "failed":
			d.Failed = 1
		case "cache_hit":
			d.CacheHits = 1
		}
		if _, _, err := s.recordUsage(acc, m.At, d, quota, m.id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
