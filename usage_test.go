package shotd

import (
	"encoding/json"
	"testing"
	"time"
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

// TestLimitsJSON pins the JSON of a plan and of a usage report (GET /api/v1/usage): their
// shared PlanLimits stand, field by field, where they stood before they were one type.
func TestLimitsJSON(t *testing.T) {
	limits := PlanLimits{RequestsPerMinute: 1, StatusRequestsPerMinute: 2, Concurrency: 3, QueueLimit: 4,
		FailuresPerMinute: 5, FailuresPerDay: 6}
	const fields = `"requests_per_minute":1,"status_requests_per_minute":2,"concurrency":3,"queue_limit":4,` +
		`"failures_per_minute":5,"failures_per_day":6`
	var u UsageReport
	u.Quota.Limit, u.Quota.Reset = 10, utc("2026-03-15T10:00:00Z")
	u.PlanLimits = limits
	u.Renders.Failed, u.Jobs.Waiting = 7, 8
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"plan", Plan{Name: "p", MonthlyQuota: 10, PlanLimits: limits, Features: []string{FeaturePDF}},
			`{"name":"p","monthly_quota":10,` + fields + `,"features":["pdf"]}`},
		{"usage report", u, `{"quota":{"limit":10,"used":0,"remaining":0,"bonus":0,"reset":"2026-03-15T10:00:00Z"},` +
			fields + `,"renders":{"succeeded":0,"failed":7,"cache_hits":0},"jobs":{"waiting":8,"running":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
