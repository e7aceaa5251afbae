package actors_test

import (
	"slices"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
)

// BenchmarkAdmission measures what admission adds to a sync render: one Admit (rate, failures,
// quota reservation, concurrency slot) and one Settle (bill, free the slot) through the account
// router, with a real actor system and a real bbolt store. The target is under 100 µs at p50.
func BenchmarkAdmission(b *testing.B) {
	tests := []struct {
		name    string
		outcome shotd.Outcome
	}{
		{"billed", shotd.OutcomeSucceeded}, // the usage write runs beside the actor, off the request path
		{"released", shotd.OutcomeReleased},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			h := startAccounts(b, b.TempDir(), nil, 0)
			plan := benchPlan()
			acc := h.account(b, plan.Name, 0)
			m := shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}
			// Warm up: the account actor is spawned and its usage loaded on first use.
			admitSettle(b, h.accounts, m, tt.outcome)

			timeRounds(b, func() { admitSettle(b, h.accounts, m, tt.outcome) })
		})
	}
}

// BenchmarkAdmissionWithKey adds what precedes Admit on the request path: the access key lookup
// (the key cache) and the check of a signature.
func BenchmarkAdmissionWithKey(b *testing.B) {
	h := startAccounts(b, b.TempDir(), nil, 0)
	plan := benchPlan()
	acc := h.account(b, plan.Name, 0)
	key, err := h.st.CreateKey(acc.ID, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	keys := h.st.KeyCache()
	ps := option.Params{{Name: "access_key", Values: []string{key.AccessKey}}, {Name: "url", Values: []string{"https://example.com/"}},
		{Name: "viewport_width", Values: []string{"800"}}}
	sig := sign.Sign(key.SecretKey, "/api/v1/screenshot", ps)
	round := func() {
		k, a, err := keys.Lookup(key.AccessKey)
		if err != nil || !sign.VerifySignature(k.SecretKey, "/api/v1/screenshot", ps, sig) {
			b.Fatalf("lookup: %v", err)
		}
		admitSettle(b, h.accounts, shotd.Admission{Account: a, Plan: plan, Kind: shotd.AdmitRender}, shotd.OutcomeSucceeded)
	}
	round()
	timeRounds(b, round)
}

// BenchmarkAdmissionParallel is the same round trip from many goroutines on one account: they
// all queue on that account's mailbox, as concurrent requests of one customer do.
func BenchmarkAdmissionParallel(b *testing.B) {
	h := startAccounts(b, b.TempDir(), nil, 0)
	plan := benchPlan()
	acc := h.account(b, plan.Name, 0)
	m := shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}
	admitSettle(b, h.accounts, m, shotd.OutcomeReleased)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			admitSettle(b, h.accounts, m, shotd.OutcomeReleased)
		}
	})
}

func benchPlan() shotd.Plan {
	p := testPlan("bench")
	p.MonthlyQuota = 1 << 30
	p.RequestsPerMinute = 1 << 30
	p.Concurrency = 1 << 20
	return p
}

// admitSettle admits m and settles its ticket with o.
func admitSettle(tb testing.TB, a *actors.Accounts, m shotd.Admission, o shotd.Outcome) {
	tb.Helper()
	res, l, err := a.Admit(m)
	if err != nil {
		tb.Fatalf("admit: %v (limits %+v)", err, l)
	}
	if _, err := a.Settle(m.Account.ID, res.Ticket, o); err != nil {
		tb.Fatalf("settle: %v", err)
	}
}

// timeRounds runs round once per benchmark iteration and reports the p50 and p99 of its
// durations.
func timeRounds(b *testing.B, round func()) {
	d := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		round()
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, d)
}

// reportPercentiles reports the p50 and p99 of the per-operation durations.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p50 := d[len(d)/2]
	p99 := d[min(len(d)*99/100, len(d)-1)]
	b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(d[len(d)*9/10].Nanoseconds())/1e3, "p90-µs")
}
