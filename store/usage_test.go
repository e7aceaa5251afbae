package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

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
		delta     shotd.UsageDelta
		want      shotd.Usage // period left out
		wantBonus int
	}{
		{"within quota", shotd.UsageDelta{Succeeded: 4}, shotd.Usage{Used: 4, Succeeded: 4}, 3},
		{"across the quota boundary into bonus", shotd.UsageDelta{Succeeded: 3}, shotd.Usage{Used: 5, BonusUsed: 2, Succeeded: 7}, 1},
		{"failures and cache hits are not billed", shotd.UsageDelta{Failed: 2, CacheHits: 5}, shotd.Usage{Used: 5, BonusUsed: 2, Succeeded: 7, Failed: 2, CacheHits: 5}, 1},
		{"the last bonus and past it: never below zero", shotd.UsageDelta{Succeeded: 3}, shotd.Usage{Used: 5, BonusUsed: 5, Succeeded: 10, Failed: 2, CacheHits: 5}, 0},
		{"nothing", shotd.UsageDelta{}, shotd.Usage{Used: 5, BonusUsed: 5, Succeeded: 10, Failed: 2, CacheHits: 5}, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			// A stale account value is fine: the stored account is what counts.
			u, a, err := s.RecordUsage(acc, now, st.delta, quota)
			if err != nil {
				t.Fatal(err)
			}
			wantStart, wantEnd := shotd.BillingPeriod(acc.CreatedAt, now)
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
	_, end := shotd.BillingPeriod(acc.CreatedAt, now)
	next, err := s.Usage(acc, end)
	if err != nil || next != (shotd.Usage{PeriodStart: end, PeriodEnd: next.PeriodEnd}) || !next.PeriodEnd.After(end) {
		t.Fatalf("usage of the next period %+v, %v; want zero counts from %v", next, err, end)
	}
	u, _, err := s.RecordUsage(acc, end, shotd.UsageDelta{Succeeded: 1}, quota)
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
		delta   shotd.UsageDelta
		wantErr error // errAny: some error
	}{
		{"unknown account", shotd.Account{ID: "nobody", CreatedAt: acc.CreatedAt}, shotd.UsageDelta{Succeeded: 1}, shotd.ErrNotFound},
		{"negative success", acc, shotd.UsageDelta{Succeeded: -1}, errAny},
		{"negative failure", acc, shotd.UsageDelta{Failed: -1}, errAny},
		{"negative cache hit", acc, shotd.UsageDelta{CacheHits: -1}, errAny},
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
	want, _, err := s.RecordUsage(acc, now, shotd.UsageDelta{Succeeded: 3, Failed: 1, CacheHits: 2}, 2)
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
			d := shotd.UsageDelta{Succeeded: 1}
			switch i % 5 {
			case 3:
				d = shotd.UsageDelta{Failed: 1}
			case 4:
				d = shotd.UsageDelta{CacheHits: 1}
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
