package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestBillingPeriod(t *testing.T) {
	tests := []struct {
		name      string
		created   string
		now       string
		wantStart string
		wantEnd   string
	}{
		{"mid month", "2026-01-15T10:00:00Z", "2026-03-20T00:00:00Z", "2026-03-15T10:00:00Z", "2026-04-15T10:00:00Z"},
		{"before the anniversary this month", "2026-01-15T10:00:00Z", "2026-03-10T00:00:00Z", "2026-02-15T10:00:00Z", "2026-03-15T10:00:00Z"},
		{"on the anniversary day before its time", "2026-01-15T10:00:00Z", "2026-03-15T09:59:59.999Z", "2026-02-15T10:00:00Z", "2026-03-15T10:00:00Z"},
		{"exactly at the start", "2026-01-15T10:00:00Z", "2026-03-15T10:00:00Z", "2026-03-15T10:00:00Z", "2026-04-15T10:00:00Z"},
		{"the first period", "2026-01-15T10:00:00Z", "2026-01-15T10:00:01Z", "2026-01-15T10:00:00Z", "2026-02-15T10:00:00Z"},
		{"31st: into February", "2026-01-31T08:30:00Z", "2026-02-27T23:00:00Z", "2026-01-31T08:30:00Z", "2026-02-28T08:30:00Z"},
		{"31st: February 28th in a common year", "2026-01-31T08:30:00Z", "2026-03-01T00:00:00Z", "2026-02-28T08:30:00Z", "2026-03-31T08:30:00Z"},
		{"31st: back to the 31st in March", "2026-01-31T08:30:00Z", "2026-03-31T08:30:00Z", "2026-03-31T08:30:00Z", "2026-04-30T08:30:00Z"},
		{"31st: April 30th", "2026-01-31T08:30:00Z", "2026-05-01T00:00:00Z", "2026-04-30T08:30:00Z", "2026-05-31T08:30:00Z"},
		{"31st: February 29th in a leap year", "2027-12-31T00:00:00Z", "2028-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "2028-03-31T00:00:00Z"},
		{"30th: February 29th in a leap year", "2027-11-30T12:00:00Z", "2028-02-29T12:00:00Z", "2028-02-29T12:00:00Z", "2028-03-30T12:00:00Z"},
		{"29th: February 28th in a common year", "2028-02-29T12:00:00Z", "2029-03-01T00:00:00Z", "2029-02-28T12:00:00Z", "2029-03-29T12:00:00Z"},
		{"29th: February 29th again in the next leap year", "2028-02-29T12:00:00Z", "2032-03-01T00:00:00Z", "2032-02-29T12:00:00Z", "2032-03-29T12:00:00Z"},
		{"century common year 2100", "2099-01-29T00:00:00Z", "2100-03-01T00:00:00Z", "2100-02-28T00:00:00Z", "2100-03-29T00:00:00Z"},
		{"across new year", "2026-03-20T06:00:00Z", "2027-01-05T00:00:00Z", "2026-12-20T06:00:00Z", "2027-01-20T06:00:00Z"},
		{"december anniversary", "2026-12-31T23:59:59Z", "2027-01-31T00:00:00Z", "2026-12-31T23:59:59Z", "2027-01-31T23:59:59Z"},
		{"nanoseconds of the time of day kept", "2026-01-15T10:00:00.123456789Z", "2026-01-20T00:00:00Z", "2026-01-15T10:00:00.123456789Z", "2026-02-15T10:00:00.123456789Z"},
		{"zones are read in UTC", "2026-02-01T01:00:00+02:00", "2026-03-31T22:30:00-02:00", "2026-03-31T23:00:00Z", "2026-04-30T23:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, _ := time.Parse(time.RFC3339Nano, tt.created)
			now, _ := time.Parse(time.RFC3339Nano, tt.now)
			start, end := BillingPeriod(created, now)
			if !start.Equal(utc(tt.wantStart)) || !end.Equal(utc(tt.wantEnd)) {
				t.Fatalf("BillingPeriod(%s, %s) = %s, %s; want %s, %s", tt.created, tt.now,
					start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), tt.wantStart, tt.wantEnd)
			}
			if start.Location() != time.UTC || end.Location() != time.UTC {
				t.Fatalf("period not in UTC: %v, %v", start, end)
			}
		})
	}
}

// TestBillingPeriodsTile: over eight years from days that meet short months, each period
// contains now, and the next one starts where it ends: no gap, no overlap.
func TestBillingPeriodsTile(t *testing.T) {
	for _, created := range []time.Time{utc("2026-01-31T23:00:00Z"), utc("2027-02-28T00:00:00Z"), utc("2028-02-29T05:00:00Z"), utc("2026-05-30T12:00:00Z"), utc("2026-01-01T00:00:00Z")} {
		start, end := BillingPeriod(created, created)
		if !start.Equal(created) {
			t.Fatalf("created %v: first period starts %v", created, start)
		}
		for range 100 {
			for _, now := range []time.Time{start, start.Add(end.Sub(start) / 2), end.Add(-time.Nanosecond)} {
				if s, e := BillingPeriod(created, now); !s.Equal(start) || !e.Equal(end) {
					t.Fatalf("created %v, now %v: period %v-%v, want %v-%v", created, now, s, e, start, end)
				}
			}
			nextStart, nextEnd := BillingPeriod(created, end)
			if !nextStart.Equal(end) || !nextEnd.After(nextStart) {
				t.Fatalf("created %v: period after %v-%v is %v-%v", created, start, end, nextStart, nextEnd)
			}
			if d := end.Sub(start); d < 28*24*time.Hour || d > 31*24*time.Hour {
				t.Fatalf("created %v: period %v-%v lasts %v", created, start, end, d)
			}
			start, end = nextStart, nextEnd
		}
	}
}

func TestRecordUsageBilling(t *testing.T) {
	s, _ := openStore(t)
	acc, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	acc, err = s.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.BonusScreenshots = 3; return nil })
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, a, err := s.KeyCache().Lookup(key.AccessKey); err != nil || a.BonusScreenshots != 3 {
		t.Fatalf("Lookup = %+v, %v", a, err) // now cached
	}
	const quota = 5
	now := acc.CreatedAt.Add(time.Hour)

	steps := []struct {
		name      string
		delta     UsageDelta
		want      Usage // period left out
		wantBonus int
	}{
		{"within quota", UsageDelta{Succeeded: 4}, Usage{Used: 4, Succeeded: 4}, 3},
		{"across the quota boundary into bonus", UsageDelta{Succeeded: 3}, Usage{Used: 5, BonusUsed: 2, Succeeded: 7}, 1},
		{"failures and cache hits are not billed", UsageDelta{Failed: 2, CacheHits: 5}, Usage{Used: 5, BonusUsed: 2, Succeeded: 7, Failed: 2, CacheHits: 5}, 1},
		{"the last bonus and past it: never below zero", UsageDelta{Succeeded: 3}, Usage{Used: 5, BonusUsed: 5, Succeeded: 10, Failed: 2, CacheHits: 5}, 0},
		{"nothing", UsageDelta{}, Usage{Used: 5, BonusUsed: 5, Succeeded: 10, Failed: 2, CacheHits: 5}, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			// A stale account value is fine: the stored account is what counts.
			u, a, err := s.RecordUsage(acc, now, st.delta, quota)
			if err != nil {
				t.Fatal(err)
			}
			wantStart, wantEnd := BillingPeriod(acc.CreatedAt, now)
			want := st.want
			want.PeriodStart, want.PeriodEnd = wantStart, wantEnd
			if !u.PeriodStart.Equal(wantStart) || !u.PeriodEnd.Equal(wantEnd) {
				t.Fatalf("period %v-%v, want %v-%v", u.PeriodStart, u.PeriodEnd, wantStart, wantEnd)
			}
			u.PeriodStart, u.PeriodEnd = want.PeriodStart, want.PeriodEnd
			if u != want {
				t.Fatalf("usage %+v, want %+v", u, want)
			}
			if a.BonusScreenshots != st.wantBonus || a.ID != acc.ID {
				t.Fatalf("account %+v, want bonus %d", a, st.wantBonus)
			}
			if got, err := s.Usage(acc, now); err != nil || got != u {
				t.Fatalf("Usage = %+v, %v; want %+v", got, err, u)
			}
			if got, err := s.Account(acc.ID); err != nil || got.BonusScreenshots != st.wantBonus {
				t.Fatalf("stored account %+v, %v", got, err)
			}
			// The key cache sees the bonus change at once.
			if _, a, err := s.KeyCache().Lookup(key.AccessKey); err != nil || a.BonusScreenshots != st.wantBonus {
				t.Fatalf("cached account %+v, %v; want bonus %d", a, err, st.wantBonus)
			}
		})
	}

	// The next period starts from zero; the old one stays as it was.
	_, end := BillingPeriod(acc.CreatedAt, now)
	next, err := s.Usage(acc, end)
	if err != nil || next != (Usage{PeriodStart: end, PeriodEnd: next.PeriodEnd}) || !next.PeriodEnd.After(end) {
		t.Fatalf("usage of the next period %+v, %v; want zero counts from %v", next, err, end)
	}
	u, _, err := s.RecordUsage(acc, end, UsageDelta{Succeeded: 1}, quota)
	if err != nil || u.Used != 1 || u.Succeeded != 1 || u.BonusUsed != 0 {
		t.Fatalf("first success of the next period: %+v, %v", u, err)
	}
	if old, err := s.Usage(acc, now); err != nil || old.Succeeded != 10 {
		t.Fatalf("old period changed: %+v, %v", old, err)
	}
}

func TestRecordUsageRefused(t *testing.T) {
	s, _ := openStore(t)
	acc, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		acc     shotd.Account
		delta   UsageDelta
		wantErr error // errAny: some error
	}{
		{"unknown account", shotd.Account{ID: "nobody", CreatedAt: acc.CreatedAt}, UsageDelta{Succeeded: 1}, ErrNotFound},
		{"negative success", acc, UsageDelta{Succeeded: -1}, errAny},
		{"negative failure", acc, UsageDelta{Failed: -1}, errAny},
		{"negative cache hit", acc, UsageDelta{CacheHits: -1}, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.RecordUsage(tt.acc, time.Now(), tt.delta, 10)
			if err == nil || tt.wantErr != errAny && !errors.Is(err, tt.wantErr) {
				t.Fatalf("RecordUsage = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if u, err := s.Usage(acc, time.Now()); err != nil || u.Succeeded != 0 || u.Used != 0 {
		t.Fatalf("a refused RecordUsage counted: %+v, %v", u, err)
	}
}

func TestUsageSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := reopen(t, nil, dir)
	acc, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	acc, err = s.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.BonusScreenshots = 2; return nil })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	want, _, err := s.RecordUsage(acc, now, UsageDelta{Succeeded: 3, Failed: 1, CacheHits: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	defer s.Close(context.Background())
	got, err := s.Usage(acc, now)
	if err != nil || got != want || got.Used != 2 || got.BonusUsed != 1 {
		t.Fatalf("usage after reopen %+v, %v; want %+v", got, err, want)
	}
	if a, err := s.Account(acc.ID); err != nil || a.BonusScreenshots != 1 {
		t.Fatalf("bonus after reopen %+v, %v; want 1", a, err)
	}
}

// TestRecordUsageConcurrent: 50 callers at once count exactly, bill exactly the quota, then the
// bonus.
func TestRecordUsageConcurrent(t *testing.T) {
	s, _ := openStore(t)
	acc, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	acc, err = s.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.BonusScreenshots = 25; return nil })
	if err != nil {
		t.Fatal(err)
	}
	const callers, quota = 50, 10
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			d := UsageDelta{Succeeded: 1}
			switch i % 5 {
			case 3:
				d = UsageDelta{Failed: 1}
			case 4:
				d = UsageDelta{CacheHits: 1}
			}
			if _, _, err := s.RecordUsage(acc, now, d, quota); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	u, err := s.Usage(acc, now)
	if err != nil {
		t.Fatal(err)
	}
	// 30 successes: 10 on the quota, 20 on the bonus; 10 failures, 10 cache hits.
	if u.Succeeded != 30 || u.Used != quota || u.BonusUsed != 20 || u.Failed != 10 || u.CacheHits != 10 {
		t.Fatalf("usage %+v after 50 concurrent calls", u)
	}
	if a, err := s.Account(acc.ID); err != nil || a.BonusScreenshots != 5 {
		t.Fatalf("account %+v, %v; want 5 bonus left", a, err)
	}
}
