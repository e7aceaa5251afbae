package store

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

var bucketUsage = []byte("usage") // account id + "/" + period start (RFC 3339) -> Usage

func usageKey(accountID string, periodStart time.Time) string {
	return accountID + "/" + periodStart.Format(time.RFC3339)
}

// Usage returns the account's counts for the billing period that contains now; a period without
// renders yet has zero counts.
func (s *Store) Usage(acc shotd.Account, now time.Time) (shotd.Usage, error) {
	return view(s, func(tx *bbolt.Tx) (shotd.Usage, error) { return getUsage(tx, acc, now) })
}

func getUsage(tx *bbolt.Tx, acc shotd.Account, now time.Time) (shotd.Usage, error) {
	start, end := shotd.BillingPeriod(acc.CreatedAt, now)
	var u shotd.Usage
	if _, err := getJSON(tx.Bucket(bucketUsage), usageKey(acc.ID, start), &u); err != nil {
		return shotd.Usage{}, err
	}
	u.PeriodStart, u.PeriodEnd = start, end
	return u, nil
}

// RecordUsage adds d to the account's counts for the period that contains now and bills each
// success: to Used while Used is below quota, then to BonusUsed, taking one of the account's
// BonusScreenshots each (never below 0; admission is what keeps successes within quota plus
// bonus, so BonusUsed beyond the bonus there was means admission let too many through). The
// counts and the account change in one transaction, which concurrent writes (other usage, jobs,
// files) may share (group.go), so that a render costs async accepts no commit of its own. It
// returns the new counts and the account as stored, reads the account from the database rather
// than trusting acc beyond its ID, and returns an error wrapping ErrNotFound when the account
// does not exist.
func (s *Store) RecordUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int) (shotd.Usage, shotd.Account, error) {
	return s.recordUsage(acc, now, d, quota, "")
}

// recordUsage is RecordUsage; for the end of job jobID (not "") it is made only once: with the
// job's mark of an end not yet counted (EndJob), which it deletes in the same transaction.
func (s *Store) recordUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int, jobID string) (shotd.Usage, shotd.Account, error) {
	if d.Succeeded < 0 || d.Failed < 0 || d.CacheHits < 0 {
		return shotd.Usage{}, shotd.Account{}, fmt.Errorf("store: usage delta %+v: counts must not be negative", d)
	}
	quota = max(quota, 0)
	var (
		u            shotd.Usage
		a            shotd.Account
		bonusChanged bool
	)
	// The group may run fn more than once (alone, after a round-mate failed): it sets every
	// result from what it reads, never adds to what a previous run left.
	err := s.group.update(func(tx *bbolt.Tx) error {
		var err error
		bonusChanged = false
		if a, err = getAccount(tx, acc.ID); err != nil {
			return refuse(err) // nothing written: the round commits without it
		}
		if jobID != "" {
			unbilled := tx.Bucket(bucketUnbilled)
			if unbilled.Get([]byte(jobID)) == nil {
				return refuse(errCounted) // counted already (at a start, BillEndedJobs)
			}
			if err := unbilled.Delete([]byte(jobID)); err != nil {
				return err
			}
		}
		if u, err = getUsage(tx, a, now); err != nil {
			return refuse(err)
		}
		u.Succeeded += d.Succeeded
		u.Failed += d.Failed
		u.CacheHits += d.CacheHits
		for range d.Succeeded {
			if u.Used < quota {
				u.Used++
				continue
			}
			u.BonusUsed++
			if a.BonusScreenshots > 0 {
				a.BonusScreenshots--
				bonusChanged = true
			}
		}
		if bonusChanged {
			if err := putJSON(tx.Bucket(bucketAccounts), a.ID, a); err != nil {
				return err
			}
		}
		if err := addDaily(tx, a.ID, now, d); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketUsage), usageKey(a.ID, u.PeriodStart), u)
	})
	if errors.Is(err, errCounted) {
		return shotd.Usage{}, shotd.Account{}, nil
	}
	if err != nil {
		if !errors.Is(err, shotd.ErrNotFound) {
			err = fmt.Errorf("store: record usage of %s: %w", acc.ID, err)
		}
		return shotd.Usage{}, shotd.Account{}, err
	}
	if bonusChanged {
		s.cache.invalidateAccount(a.ID)
	}
	return u, a, nil
}
