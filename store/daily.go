package store

import (
	"fmt"
	"time"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

// bucketUsageDaily: account id + "/" + UTC date (2006-01-02) -> DayUsage. RecordUsage adds to it
// in the transaction that bills, so the daily counts always add up to the period's.
var bucketUsageDaily = []byte("usage_daily")

// dailyRetention is how long daily counts are kept: the dashboard shows 30 days; a year lets an
// operator look further back through the admin API.
const dailyRetention = 366 * 24 * time.Hour

func dayKey(accountID string, day time.Time) string {
	return accountID + "/" + day.UTC().Format(time.DateOnly)
}

// addDaily adds d to the account's count of now's UTC day and drops the entry that fell out of
// the retention window today, so the bucket stays bounded without a sweeper of its own.
func addDaily(tx *bbolt.Tx, accountID string, now time.Time, d shotd.UsageDelta) error {
	b := tx.Bucket(bucketUsageDaily)
	key := dayKey(accountID, now)
	var u shotd.DayUsage
	if _, err := getJSON(b, key, &u); err != nil {
		return err
	}
	u.Date = now.UTC().Format(time.DateOnly)
	u.Succeeded += d.Succeeded
	u.Failed += d.Failed
	u.CacheHits += d.CacheHits
	if err := b.Delete([]byte(dayKey(accountID, now.Add(-dailyRetention)))); err != nil {
		return err
	}
	return putJSON(b, key, u)
}

// DailyUsage returns the account's counts for the days UTC days that end with now's, oldest
// first, a day without renders as zeros. days is at least 1 and at most the retention.
func (s *Store) DailyUsage(accountID string, days int, now time.Time) ([]shotd.DayUsage, error) {
	days = min(max(days, 1), int(dailyRetention/(24*time.Hour)))
	out := make([]shotd.DayUsage, days)
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsageDaily)
		for i := range days {
			day := now.UTC().AddDate(0, 0, i-days+1)
			if _, err := getJSON(b, dayKey(accountID, day), &out[i]); err != nil {
				return err
			}
			out[i].Date = day.Format(time.DateOnly)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: daily usage of %s: %w", accountID, err)
	}
	return out, nil
}
