package store

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

var bucketUsage = []byte("usage") // account id + "/" + period start (RFC 3339) -> Usage

// Usage counts an account's renders in one billing period.
type Usage struct {
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Used        int       `json:"used"`       // successes billed to the plan quota
	BonusUsed   int       `json:"bonus_used"` // successes billed past the quota, to bonus screenshots
	Succeeded   int       `json:"succeeded"`
	Failed      int       `json:"failed"`
	CacheHits   int       `json:"cache_hits"`
}

// UsageDelta is what one settled request (or a few) adds to the counts.
type UsageDelta struct{ Succeeded, Failed, CacheHits int }

// BillingPeriod returns the billing period [start, end) that contains now. Periods are monthly
// from the account's creation, in UTC: each starts on the day of the month the account was
// created at its time of day, or on the last day of a month that is too short (created on
// the 31st: the 28th or 29th of February, the 30th of April).
func BillingPeriod(created, now time.Time) (start, end time.Time) {
	created, now = created.UTC(), now.UTC()
	y, m := now.Year(), now.Month()
	start = anniversary(created, y, m)
	if now.Before(start) {
		y, m = addMonth(y, m, -1)
		start = anniversary(created, y, m)
	}
	y, m = addMonth(y, m, 1)
	return start, anniversary(created, y, m)
}

// anniversary is created's day and time of day in month m of year y, clamped to the month's end.
func anniversary(created time.Time, y int, m time.Month) time.Time {
	d := created.Day()
	if last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day(); d > last {
		d = last
	}
	return time.Date(y, m, d, created.Hour(), created.Minute(), created.Second(), created.Nanosecond(), time.UTC)
}

func addMonth(y int, m time.Month, n int) (int, time.Month) {
	t := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	return t.Year(), t.Month()
}

func usageKey(accountID string, periodStart time.Time) string {
	return accountID + "/" + periodStart.Format(time.RFC3339)
}

// Usage returns the account's counts for the billing period that contains now; a period without
// renders yet has zero counts.
func (s *Store) Usage(acc shotd.Account, now time.Time) (Usage, error) {
	var u Usage
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		u, err = getUsage(tx, acc, now)
		return err
	})
	return u, err
}

func getUsage(tx *bbolt.Tx, acc shotd.Account, now time.Time) (Usage, error) {
	start, end := BillingPeriod(acc.CreatedAt, now)
	var u Usage
	if _, err := getJSON(tx.Bucket(bucketUsage), usageKey(acc.ID, start), &u); err != nil {
		return Usage{}, err
	}
	u.PeriodStart, u.PeriodEnd = start, end
	return u, nil
}

// RecordUsage adds d to the account's counts for the period that contains now and bills each
// success: to Used while Used is below quota, then to BonusUsed, taking one of the account's
// BonusScreenshots each (never below 0; admission is what keeps successes within quota plus
// bonus, so BonusUsed beyond the bonus there was means admission let too many through). The
// counts and the account change in one transaction; concurrent calls are coalesced into few
// commits (bbolt Batch), so a call may wait a few milliseconds. It returns the new counts and
// the account as stored, reads the account from the database rather than trusting acc beyond
// its ID, and returns an error wrapping ErrNotFound when the account does not exist.
func (s *Store) RecordUsage(acc shotd.Account, now time.Time, d UsageDelta, quota int) (Usage, shotd.Account, error) {
	if d.Succeeded < 0 || d.Failed < 0 || d.CacheHits < 0 {
		return Usage{}, shotd.Account{}, fmt.Errorf("store: usage delta %+v: counts must not be negative", d)
	}
	quota = max(quota, 0)
	var (
		u            Usage
		a            shotd.Account
		bonusChanged bool
	)
	// Batch may run fn more than once (alone, after a batch-mate failed): it sets every result
	// from what it reads, never adds to what a previous run left.
	err := s.db.Batch(func(tx *bbolt.Tx) error {
		var err error
		bonusChanged = false
		if a, err = getAccount(tx, acc.ID); err != nil {
			return err
		}
		if u, err = getUsage(tx, a, now); err != nil {
			return err
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
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("store: record usage of %s: %w", acc.ID, err)
		}
		return Usage{}, shotd.Account{}, err
	}
	if bonusChanged {
		s.cache.invalidateAccount(a.ID)
	}
	return u, a, nil
}
