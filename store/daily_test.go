package store

import (
	"testing"
	"time"

	"github.com/shotd/shotd"
)

func TestDailyUsage(t *testing.T) {
	s, _ := openStore(t)
	acc, err := s.CreateAccount("d@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateAccount("o@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	records := []struct {
		name string
		acc  string
		at   time.Time
		d    shotd.UsageDelta
	}{
		{"today", acc.ID, now, shotd.UsageDelta{Succeeded: 2, Failed: 1}},
		{"today again", acc.ID, now.Add(-9 * time.Hour), shotd.UsageDelta{CacheHits: 3}},
		{"yesterday late", acc.ID, now.Add(-10*time.Hour - time.Minute), shotd.UsageDelta{Succeeded: 1}},
		{"four days ago", acc.ID, now.AddDate(0, 0, -4), shotd.UsageDelta{Failed: 2}},
		{"out of the window", acc.ID, now.AddDate(0, 0, -40), shotd.UsageDelta{Succeeded: 9}},
		{"another account", other.ID, now, shotd.UsageDelta{Succeeded: 5}},
	}
	for _, r := range records {
		a, _ := s.Account(r.acc)
		if _, _, err := s.RecordUsage(a, r.at, r.d, 1000); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
	}
	days, err := s.DailyUsage(acc.ID, 30, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 30 || days[0].Date != "2026-10-27" || days[29].Date != "2026-11-25" {
		t.Fatalf("got %d days from %s to %s", len(days), days[0].Date, days[len(days)-1].Date)
	}
	want := map[string]shotd.DayUsage{
		"2026-11-25": {Date: "2026-11-25", Succeeded: 2, Failed: 1, CacheHits: 3},
		"2026-11-24": {Date: "2026-11-24", Succeeded: 1},
		"2026-11-21": {Date: "2026-11-21", Failed: 2},
	}
	for _, d := range days {
		w, ok := want[d.Date]
		if !ok {
			w = shotd.DayUsage{Date: d.Date}
		}
		if d != w {
			t.Errorf("%s: %+v, want %+v", d.Date, d, w)
		}
	}
}
