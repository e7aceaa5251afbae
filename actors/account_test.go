package actors_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/store"
)

// fakeClock drives the account actors' windows and billing periods. It starts a minute ahead of
// the wall clock so that accounts created during a test are never in the future of it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Now().Add(time.Minute)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// accountsHarness is a real actor system with the account router on a real bbolt store.
type accountsHarness struct {
	sys      *actor.ActorSystem
	st       *store.Store
	accounts *actors.Accounts
	stopped  bool
}

// startAccounts opens the store in dir and starts the account actors on it; the test's cleanup
// stops them and closes the store.
func startAccounts(tb testing.TB, dir string, now func() time.Time, idle time.Duration) *accountsHarness {
	return startAccountsOn(tb, dir, nil, actors.AccountsConfig{Now: now, Idle: idle})
}

// startAccountsOn is startAccounts with a usage store wrapped by wrap (nil: the store itself).
func startAccountsOn(tb testing.TB, dir string, wrap func(*store.Store) actors.UsageStore, cfg actors.AccountsConfig) *accountsHarness {
	tb.Helper()
	st := storetest.Open(tb, dir)
	cfg.Store = st
	if wrap != nil {
		cfg.Store = wrap(st)
	}
	sys := actors.NewSystem(zerolog.Nop())
	a, err := actors.StartAccounts(sys, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h := &accountsHarness{sys: sys, st: st, accounts: a}
	tb.Cleanup(func() { h.stop(tb) })
	return h
}

// stop closes the account actors (which waits for their usage writes), the system and the store.
func (h *accountsHarness) stop(tb testing.TB) {
	tb.Helper()
	if h.stopped {
		return
	}
	h.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.accounts.Close(ctx); err != nil {
		tb.Errorf("close accounts: %v", err)
	}
	h.sys.Shutdown()
	if err := h.st.Close(ctx); err != nil {
		tb.Errorf("close store: %v", err)
	}
}

func (h *accountsHarness) account(tb testing.TB, plan string, bonus int) shotd.Account {
	tb.Helper()
	acc, err := h.st.CreateAccount("limits@example.test", plan, true)
	if err != nil {
		tb.Fatal(err)
	}
	if bonus > 0 {
		acc = h.setBonus(tb, acc.ID, bonus)
	}
	return acc
}

func (h *accountsHarness) setBonus(tb testing.TB, id string, bonus int) shotd.Account {
	tb.Helper()
	acc, err := h.st.UpdateAccount(id, func(a *shotd.Account) error { a.BonusScreenshots = bonus; return nil })
	if err != nil {
		tb.Fatal(err)
	}
	return acc
}

// fresh reads the account as the key cache would hand it to a request.
// render admits one render of acc on plan and settles it with o.
func (h *accountsHarness) render(tb testing.TB, acc shotd.Account, plan shotd.Plan, o shotd.Outcome) {
	tb.Helper()
	admitSettle(tb, h.accounts, shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}, o)
}

func (h *accountsHarness) fresh(tb testing.TB, id string) shotd.Account {
	tb.Helper()
	acc, err := h.st.Account(id)
	if err != nil {
		tb.Fatal(err)
	}
	return acc
}

// waitStored waits until the stored usage satisfies ok: usage writes run beside the actor.
func (h *accountsHarness) waitStored(tb testing.TB, acc shotd.Account, now time.Time, ok func(shotd.Usage) bool) shotd.Usage {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, err := h.st.Usage(acc, now)
		if err != nil {
			tb.Fatal(err)
		}
		if ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			tb.Fatalf("stored usage %+v never reached the wanted state", u)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testPlan has every limit far away; tests lower the one they exercise.
func testPlan(name string) shotd.Plan {
	return shotd.Plan{Name: name, MonthlyQuota: 100,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 100, StatusRequestsPerMinute: 1000,
			Concurrency: 10, QueueLimit: 10, FailuresPerMinute: 10},
		Features: shotd.AllFeatures}
}

func codeOf(err error) shotd.Code {
	if err == nil {
		return ""
	}
	return shotd.CodeOf(err)
}

// step is one move of a limits script.
type step struct {
	op       string // render (admit and hold), settle (the oldest held render), status, jobs, hit, advance
	times    int    // repeat; 0 means once
	jobs     int
	features []string
	outcome  shotd.Outcome
	advance  time.Duration
	want     shotd.Code // "" for admitted
	// Checked on the last repetition when not negative.
	retryAfter, rateRemaining, rateLimit, quotaRemaining, concRemaining int
}

func st(op string) step {
	return step{op: op, retryAfter: -1, rateRemaining: -1, rateLimit: -1, quotaRemaining: -1, concRemaining: -1}
}

func (s step) n(times int) step         { s.times = times; return s }
func (s step) wants(c shotd.Code) step  { s.want = c; return s }
func (s step) retry(sec int) step       { s.retryAfter = sec; return s }
func (s step) rate(remaining int) step  { s.rateRemaining = remaining; return s }
func (s step) rateOf(limit int) step    { s.rateLimit = limit; return s }
func (s step) quota(remaining int) step { s.quotaRemaining = remaining; return s }
func (s step) conc(remaining int) step  { s.concRemaining = remaining; return s }
func (s step) out(o shotd.Outcome) step { s.outcome = o; return s }
func (s step) need(f ...string) step    { s.features = f; return s }
func (s step) jobsOf(n int) step        { s.jobs = n; return s }
func after(d time.Duration) step        { s := st("advance"); s.advance = d; return s }

// TestAdmitLimits plays scripts against one account each: every limit at its boundary, N
// allowed and the next refused with its code, Retry-After and headers.
func TestAdmitLimits(t *testing.T) {
	released := shotd.OutcomeReleased
	tests := []struct {
		name  string
		plan  func(p *shotd.Plan)
		steps []step
	}{
		{
			name: "requests per minute",
			plan: func(p *shotd.Plan) { p.RequestsPerMinute = 3 },
			steps: []step{
				st("render").rate(2).rateOf(3), st("settle").out(released),
				st("render").rate(1), st("settle").out(released),
				st("render").rate(0), st("settle").out(released),
				st("render").wants(shotd.CodeRateLimited).retry(60).rate(0),
				after(30 * time.Second),
				st("render").wants(shotd.CodeRateLimited).retry(30),
				after(30 * time.Second), // the first three leave the window together
				st("render").rate(2),
			},
		},
		{
			name: "the window slides",
			plan: func(p *shotd.Plan) { p.RequestsPerMinute = 2 },
			steps: []step{
				st("render"), st("settle").out(released),
				after(40 * time.Second),
				st("render"), st("settle").out(released),
				st("render").wants(shotd.CodeRateLimited).retry(20),
				after(20 * time.Second), // the first left; the second stays 40 s more
				st("render").rate(0), st("settle").out(released),
				st("render").wants(shotd.CodeRateLimited).retry(40),
			},
		},
		{
			name: "status endpoints have their own allowance",
			plan: func(p *shotd.Plan) { p.RequestsPerMinute = 1; p.StatusRequestsPerMinute = 3 },
			steps: []step{
				st("render").rate(0).rateOf(1), st("settle").out(released),
				st("render").wants(shotd.CodeRateLimited),
				st("status").rateOf(3).rate(2),
				st("status").n(2).rate(0),
				st("status").wants(shotd.CodeRateLimited).retry(60).rateOf(3).rate(0),
				after(time.Minute),
				st("status").rate(2),
				st("render").rate(0),
			},
		},
		{
			name: "failures per minute",
			plan: func(p *shotd.Plan) { p.FailuresPerMinute = 2 },
			steps: []step{
				st("render"), st("settle").out(shotd.OutcomeFailed),
				after(10 * time.Second),
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render").wants(shotd.CodeFailureLimit).retry(50).quota(100),
				after(50 * time.Second), // the first failure left the window
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render").wants(shotd.CodeFailureLimit).retry(10),
			},
		},
		{
			name: "failures per day",
			plan: func(p *shotd.Plan) { p.FailuresPerDay = 3 },
			steps: []step{
				st("render"), st("settle").out(shotd.OutcomeFailed),
				after(time.Hour),
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render"), st("settle").out(shotd.OutcomeFailed),
				after(2 * time.Minute), // out of the per-minute window, not out of the day
				st("render").wants(shotd.CodeFailureLimit).retry(23*3600 - 120),
				st("jobs").jobsOf(1).wants(shotd.CodeFailureLimit),
				st("hit"),                           // a cache hit renders nothing: never refused for failures
				after(23*time.Hour - 2*time.Minute), // the first failure left the day
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render").wants(shotd.CodeFailureLimit).retry(3600),
			},
		},
		{
			// Reserved like the quota: every render admitted and not ended may still fail, so a
			// bulk admitted just under the budget cannot pass it by its queue.
			name: "failures per day are reserved at admission",
			plan: func(p *shotd.Plan) { p.FailuresPerDay = 3 },
			steps: []step{
				st("render").n(2), st("settle").out(shotd.OutcomeFailed).n(2),
				st("jobs").jobsOf(2).wants(shotd.CodeFailureLimit).retry(24 * 3600),
				st("jobs").jobsOf(1), // held: not settled here
				st("render").wants(shotd.CodeFailureLimit).retry(5),
				st("hit"),
				st("jobs").jobsOf(4).wants(shotd.CodeFailureLimit),
			},
		},
		{
			name: "a sync render under way reserves a failure",
			plan: func(p *shotd.Plan) { p.FailuresPerDay = 2 },
			steps: []step{
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render"), // held
				st("render").wants(shotd.CodeFailureLimit).retry(5),
				st("settle").out(shotd.OutcomeSucceeded),
				st("render"),
			},
		},
		{
			name: "no daily bound when zero",
			plan: func(p *shotd.Plan) { p.FailuresPerMinute = 100; p.FailuresPerDay = 0 },
			steps: []step{
				st("render").n(5), st("settle").out(shotd.OutcomeFailed).n(5),
				st("render").n(5), st("settle").out(shotd.OutcomeFailed).n(5),
				st("render"),
			},
		},
		{
			name: "released renders are not failures",
			plan: func(p *shotd.Plan) { p.FailuresPerMinute = 1 },
			steps: []step{
				st("render").n(3), st("settle").out(released).n(3),
				st("render"), st("settle").out(shotd.OutcomeFailed),
				st("render").wants(shotd.CodeFailureLimit),
			},
		},
		{
			name: "concurrency",
			plan: func(p *shotd.Plan) { p.Concurrency = 2 },
			steps: []step{
				st("render").conc(1),
				st("render").conc(0),
				st("render").wants(shotd.CodeConcurrencyLimit).retry(1).conc(0),
				st("settle").out(shotd.OutcomeSucceeded).conc(1),
				st("render").conc(0),
			},
		},
		{
			name: "queue limit: nothing counted",
			plan: func(p *shotd.Plan) { p.QueueLimit = 2; p.RequestsPerMinute = 10; p.MonthlyQuota = 5 },
			steps: []step{
				st("jobs").jobsOf(2).rate(9).quota(3),
				st("jobs").jobsOf(1).wants(shotd.CodeQueueLimit).rate(9).quota(3),
				st("jobs").jobsOf(1).wants(shotd.CodeQueueLimit).rate(9).quota(3),
				st("render").rate(8).quota(2), // sync renders do not wait in the queue
			},
		},
		{
			// Queued jobs hold failures of the day's budget too: a full queue still says so.
			name: "a full queue is queue_limit before the failure budget",
			plan: func(p *shotd.Plan) { p.QueueLimit = 3; p.FailuresPerDay = 3 },
			steps: []step{
				st("jobs").jobsOf(3),
				st("jobs").jobsOf(1).wants(shotd.CodeQueueLimit).retry(5),
				st("render").wants(shotd.CodeFailureLimit).retry(5), // no queue: the budget
			},
		},
		{
			name: "a bulk larger than the queue",
			plan: func(p *shotd.Plan) { p.QueueLimit = 3 },
			steps: []step{
				st("jobs").jobsOf(4).wants(shotd.CodeQueueLimit).rate(100),
				st("jobs").jobsOf(3).rate(99),
			},
		},
		{
			name: "monthly quota",
			plan: func(p *shotd.Plan) { p.MonthlyQuota = 2 },
			steps: []step{
				st("render").quota(1), st("settle").out(shotd.OutcomeSucceeded).quota(1),
				st("render").quota(0), st("settle").out(shotd.OutcomeSucceeded).quota(0),
				st("render").wants(shotd.CodeQuotaExceeded).quota(0),
				st("jobs").jobsOf(1).wants(shotd.CodeQuotaExceeded),
			},
		},
		{
			name: "reservations hold the quota until settled",
			plan: func(p *shotd.Plan) { p.MonthlyQuota = 2 },
			steps: []step{
				st("render").n(2).quota(0),
				st("render").wants(shotd.CodeQuotaExceeded),
				st("settle").out(shotd.OutcomeFailed).quota(1), // released, not billed
				st("settle").out(shotd.OutcomeCacheHit).quota(2),
				st("render").n(2), st("settle").out(shotd.OutcomeSucceeded).n(2).quota(0),
				st("render").wants(shotd.CodeQuotaExceeded),
			},
		},
		{
			name: "the billing period resets",
			plan: func(p *shotd.Plan) { p.MonthlyQuota = 1 },
			steps: []step{
				st("render"), st("settle").out(shotd.OutcomeSucceeded),
				st("render").wants(shotd.CodeQuotaExceeded),
				after(32 * 24 * time.Hour),
				st("render").quota(0),
			},
		},
		{
			name: "cache hits need no quota, slot or failure allowance",
			plan: func(p *shotd.Plan) {
				p.MonthlyQuota, p.Concurrency, p.FailuresPerMinute, p.RequestsPerMinute = 1, 1, 1, 6
				p.Features = []string{shotd.FeatureCache}
			},
			steps: []step{
				st("render").rate(5).quota(0).conc(0), // holds the only slot and the quota
				st("hit").rate(4).quota(0).conc(0),
				st("render").wants(shotd.CodeQuotaExceeded).rate(3),
				st("settle").out(shotd.OutcomeFailed).quota(1).conc(1),
				st("render").wants(shotd.CodeFailureLimit).rate(3),
				st("hit").rate(2).quota(1).conc(1),
				st("hit").need(shotd.FeaturePDF).wants(shotd.CodeFeatureNotAvailable).rate(2),
				st("hit").n(2).rate(0),
				st("hit").wants(shotd.CodeRateLimited).retry(60).rate(0),
			},
		},
		{
			name: "plan features",
			plan: func(p *shotd.Plan) { p.Features = []string{shotd.FeatureCache} },
			steps: []step{
				st("render").need(shotd.FeaturePDF).wants(shotd.CodeFeatureNotAvailable).rate(100),
				st("jobs").jobsOf(1).need(shotd.FeatureAsync).wants(shotd.CodeFeatureNotAvailable),
				st("render").need(shotd.FeatureCache).rate(99),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			h := startAccounts(t, t.TempDir(), clock.Now, 0)
			plan := testPlan("limits")
			tt.plan(&plan)
			acc := h.account(t, plan.Name, 0)
			var held []uint64
			for i, s := range tt.steps {
				for r := range max(s.times, 1) {
					var (
						limits shotd.LimitsSnapshot
						err    error
						res    *shotd.AdmitResult
					)
					switch s.op {
					case "advance":
						clock.Advance(s.advance)
						continue
					case "render", "status", "jobs", "hit":
						kind := map[string]shotd.AdmitKind{"render": shotd.AdmitRender, "status": shotd.AdmitStatus,
							"jobs": shotd.AdmitJobs, "hit": shotd.AdmitCacheHit}[s.op]
						res, limits, err = h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: kind, Jobs: s.jobs, Features: s.features})
						if err == nil && s.op == "render" {
							held = append(held, res.Ticket)
						}
					case "settle":
						if len(held) == 0 {
							t.Fatalf("step %d: nothing to settle", i)
						}
						limits, err = h.accounts.Settle(acc.ID, held[0], s.outcome)
						held = held[1:]
					}
					if got := codeOf(err); got != s.want {
						t.Fatalf("step %d (%s #%d): got %q (%v), want %q", i, s.op, r+1, got, err, s.want)
					}
					if r < max(s.times, 1)-1 {
						continue
					}
					checkLimits(t, i, s, err, limits, clock.Now())
				}
			}
		})
	}
}

func checkLimits(t *testing.T, i int, s step, err error, l shotd.LimitsSnapshot, now time.Time) {
	t.Helper()
	if s.retryAfter >= 0 {
		if got := shotd.AsError(err).RetryAfter; got != s.retryAfter {
			t.Fatalf("step %d: Retry-After %d, want %d", i, got, s.retryAfter)
		}
	}
	if err != nil && s.want == shotd.CodeFeatureNotAvailable && !strings.Contains(err.Error(), s.features[0]) {
		t.Fatalf("step %d: %q does not name the feature %s", i, err, s.features[0])
	}
	checks := []struct {
		name      string
		got, want int
	}{
		{"rate remaining", l.RateRemaining, s.rateRemaining},
		{"rate limit", l.RateLimit, s.rateLimit},
		{"quota remaining", l.QuotaRemaining, s.quotaRemaining},
		{"concurrency remaining", l.ConcurrencyRemaining, s.concRemaining},
	}
	for _, c := range checks {
		if c.want >= 0 && c.got != c.want {
			t.Fatalf("step %d (%s): %s %d, want %d (limits %+v)", i, s.op, c.name, c.got, c.want, l)
		}
	}
	if l.RateLimit > 0 && (l.RateReset.Before(now) || l.RateReset.After(now.Add(time.Minute))) {
		t.Fatalf("step %d: rate reset %v not within a minute of %v", i, l.RateReset, now)
	}
}

// TestQuotaExactUnderConcurrency: 50 requests at once against a quota of 10 get exactly 10
// successes and 40 quota_exceeded, and exactly 10 are billed in the store.
func TestQuotaExactUnderConcurrency(t *testing.T) {
	tests := []struct {
		name     string
		failRate float64 // share of admitted renders that fail, then retry
	}{
		{"all succeed", 0},
		{"some fail and retry", 0.3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAccounts(t, t.TempDir(), nil, 0)
			plan := testPlan("exact")
			plan.MonthlyQuota, plan.Concurrency, plan.RequestsPerMinute, plan.FailuresPerMinute = 10, 50, 100000, 100000
			acc := h.account(t, plan.Name, 0)
			var succeeded, exceeded, other atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 50 {
				wg.Go(func() {
					<-start
					for {
						res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
						if codeOf(err) == shotd.CodeQuotaExceeded {
							exceeded.Add(1)
							return
						}
						if err != nil {
							other.Add(1)
							return
						}
						time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // the render
						o := shotd.OutcomeSucceeded
						if rand.Float64() < tt.failRate {
							o = shotd.OutcomeFailed
						}
						if _, err := h.accounts.Settle(acc.ID, res.Ticket, o); err != nil {
							other.Add(1)
							return
						}
						if o == shotd.OutcomeSucceeded {
							succeeded.Add(1)
							return
						}
					}
				})
			}
			close(start)
			wg.Wait()
			if succeeded.Load() != 10 || exceeded.Load() != 40 || other.Load() != 0 {
				t.Fatalf("%d succeeded, %d quota_exceeded, %d other; want 10, 40, 0", succeeded.Load(), exceeded.Load(), other.Load())
			}
			u, err := h.accounts.Usage(acc, plan)
			if err != nil {
				t.Fatal(err)
			}
			if u.Quota.Used != 10 || u.Quota.Remaining != 0 || u.Renders.Succeeded != 10 {
				t.Fatalf("usage %+v, want 10 used and none remaining", u.Quota)
			}
			stored := h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.Succeeded >= 10 })
			if stored.Used != 10 || stored.Succeeded != 10 || stored.BonusUsed != 0 {
				t.Fatalf("stored usage %+v, want exactly 10 billed", stored)
			}
		})
	}
}

// TestBonusAfterQuota: bonus screenshots are used only after the plan quota, and one added by
// the operator later is usable at once.
func TestBonusAfterQuota(t *testing.T) {
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("bonus")
	plan.MonthlyQuota = 2
	acc := h.account(t, plan.Name, 1)
	succeed := func(n int) {
		t.Helper()
		for range n {
			h.render(t, h.fresh(t, acc.ID), plan, shotd.OutcomeSucceeded)
		}
	}
	refused := func() {
		t.Helper()
		_, _, err := h.accounts.Admit(shotd.Admission{Account: h.fresh(t, acc.ID), Plan: plan, Kind: shotd.AdmitRender})
		if codeOf(err) != shotd.CodeQuotaExceeded {
			t.Fatalf("got %v, want quota_exceeded", err)
		}
	}

	succeed(2)
	stored := h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.Succeeded == 2 })
	if stored.Used != 2 || stored.BonusUsed != 0 || h.fresh(t, acc.ID).BonusScreenshots != 1 {
		t.Fatalf("after the plan quota: %+v, bonus %d; want the bonus untouched", stored, h.fresh(t, acc.ID).BonusScreenshots)
	}
	succeed(1)
	refused()
	stored = h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.Succeeded == 3 })
	if stored.Used != 2 || stored.BonusUsed != 1 || h.fresh(t, acc.ID).BonusScreenshots != 0 {
		t.Fatalf("after the bonus: %+v, bonus %d", stored, h.fresh(t, acc.ID).BonusScreenshots)
	}
	h.setBonus(t, acc.ID, 2) // the operator grants more
	succeed(2)
	refused()
	u, err := h.accounts.Usage(h.fresh(t, acc.ID), plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 2 || u.Quota.Bonus != 0 || u.Quota.Remaining != 0 || u.Renders.Succeeded != 5 {
		t.Fatalf("usage %+v %+v", u.Quota, u.Renders)
	}
}

// TestStaleBonusRecord: a request may carry an account record read before the last bonus
// screenshot was billed (it looked its key up just before); it must not give the bonus back.
func TestStaleBonusRecord(t *testing.T) {
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("stale")
	plan.MonthlyQuota = 1
	acc := h.account(t, plan.Name, 1)
	stale := h.fresh(t, acc.ID) // bonus 1
	for range 2 {
		h.render(t, h.fresh(t, acc.ID), plan, shotd.OutcomeSucceeded)
	}
	h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.BonusUsed == 1 })
	time.Sleep(50 * time.Millisecond) // the write's report reaches the actor: nothing is pending
	if _, err := h.accounts.Usage(h.fresh(t, acc.ID), plan); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: stale, Plan: plan, Kind: shotd.AdmitRender}); codeOf(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("with a stale record: %v, want quota_exceeded", err)
	}
	// An operator's grant is usable by the next request that carries it.
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: h.fresh(t, acc.ID), Plan: plan, Kind: shotd.AdmitRender}); codeOf(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("without bonus: %v", err)
	}
	h.setBonus(t, acc.ID, 1)
	h.render(t, h.fresh(t, acc.ID), plan, shotd.OutcomeSucceeded) // after the grant
	// And the stale record once more, now while the debit may still be on its way to the disk.
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: stale, Plan: plan, Kind: shotd.AdmitRender}); codeOf(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("with a stale record during a write: %v, want quota_exceeded", err)
	}
}

// TestNotBilled: failed renders, cache hits and released admissions bill nothing; each is
// counted where it belongs.
func TestNotBilled(t *testing.T) {
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("free")
	plan.MonthlyQuota = 1
	acc := h.account(t, plan.Name, 0)
	for _, o := range []shotd.Outcome{shotd.OutcomeFailed, shotd.OutcomeCacheHit, shotd.OutcomeReleased, shotd.OutcomeFailed, shotd.OutcomeCacheHit} {
		h.render(t, acc, plan, o)
	}
	u, err := h.accounts.Usage(acc, plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 0 || u.Quota.Remaining != 1 || u.Renders.Succeeded != 0 || u.Renders.Failed != 2 || u.Renders.CacheHits != 2 {
		t.Fatalf("usage %+v %+v: want nothing billed, 2 failed, 2 cache hits", u.Quota, u.Renders)
	}
	if u.PlanLimits != plan.PlanLimits || u.PlanLimits == (shotd.PlanLimits{}) {
		t.Fatalf("usage limits %+v: want the plan's, %+v", u.PlanLimits, plan.PlanLimits)
	}
	stored := h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.Failed == 2 && u.CacheHits == 2 })
	if stored.Used != 0 || stored.Succeeded != 0 {
		t.Fatalf("stored %+v: want nothing billed", stored)
	}
	// Settling twice changes nothing.
	res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	if u, _ := h.accounts.Usage(acc, plan); u.Quota.Used != 1 || u.Renders.Succeeded != 1 {
		t.Fatalf("settled twice: %+v %+v", u.Quota, u.Renders)
	}
}

// TestCacheHitAdmission: an admitted hit is counted at once, in memory and in the store, and
// holds nothing: no reservation, no slot, no ticket to settle.
func TestCacheHitAdmission(t *testing.T) {
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("hits")
	plan.MonthlyQuota, plan.Concurrency = 1, 1
	acc := h.account(t, plan.Name, 0)
	for range 3 {
		res, l, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitCacheHit})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ticket != 0 || l.QuotaRemaining != 1 || l.ConcurrencyRemaining != 1 {
			t.Fatalf("hit admitted with ticket %d, limits %+v: it must hold nothing", res.Ticket, l)
		}
	}
	u, err := h.accounts.Usage(acc, plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 0 || u.Quota.Remaining != 1 || u.Renders.CacheHits != 3 || u.Renders.Succeeded != 0 {
		t.Fatalf("usage %+v %+v: want 3 hits, nothing billed or reserved", u.Quota, u.Renders)
	}
	stored := h.waitStored(t, acc, time.Now(), func(u shotd.Usage) bool { return u.CacheHits == 3 })
	if stored.Used != 0 || stored.Succeeded != 0 {
		t.Fatalf("stored %+v: want nothing billed", stored)
	}
	// The render it did not reserve for is still admitted.
	h.render(t, acc, plan, shotd.OutcomeSucceeded)
}

// TestQuotaSurvivesRestart: what was billed is in bbolt; a new actor system on the same data
// directory continues from it. Close right after the last Settle: it must wait for the writes.
func TestQuotaSurvivesRestart(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	dir := t.TempDir()
	plan := testPlan("restart")
	plan.MonthlyQuota = 5

	h := startAccounts(t, dir, nil, 0)
	acc := h.account(t, plan.Name, 0)
	for _, o := range []shotd.Outcome{shotd.OutcomeSucceeded, shotd.OutcomeFailed, shotd.OutcomeSucceeded, shotd.OutcomeCacheHit, shotd.OutcomeSucceeded} {
		h.render(t, acc, plan, o)
	}
	h.stop(t)
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}); codeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("admit after close: %v, want service_unavailable", err)
	}

	h = startAccounts(t, dir, nil, 0)
	u, err := h.accounts.Usage(acc, plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 3 || u.Quota.Remaining != 2 || u.Renders.Succeeded != 3 || u.Renders.Failed != 1 || u.Renders.CacheHits != 1 {
		t.Fatalf("after restart: %+v %+v; want 3 used, 2 remaining, 3/1/1 renders", u.Quota, u.Renders)
	}
	for i := range 3 {
		res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if i == 2 {
			if codeOf(err) != shotd.CodeQuotaExceeded {
				t.Fatalf("render 6: %v, want quota_exceeded", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("render %d: %v", 4+i, err)
		}
		if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	h.stop(t)

	st := storetest.Open(t, dir)
	stored, err := st.Usage(acc, time.Now())
	st.Close(context.Background())
	if err != nil || stored.Used != 5 || stored.Succeeded != 5 {
		t.Fatalf("stored %+v, %v; want 5 billed", stored, err)
	}
	noGoroutinesLeft(t, goroutines)
}

// noGoroutinesLeft waits for the goroutine count to come back to before (usage writers, the
// sweeper, actor mailboxes).
func noGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	if err := testkit.WaitGoroutines(before, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// slowUsage is the real store whose first reads of usage wait for a signal: the account actor
// then cannot answer in time, as under a stuck disk.
type slowUsage struct {
	*store.Store
	release chan struct{}
	loads   atomic.Int64
	fail    error
}

func (s *slowUsage) Usage(acc shotd.Account, now time.Time) (shotd.Usage, error) {
	s.loads.Add(1)
	if s.release != nil {
		<-s.release
	}
	if s.fail != nil {
		return shotd.Usage{}, s.fail
	}
	return s.Store.Usage(acc, now)
}

// memUsage keeps one account's usage in memory, for a test where a disk write is too slow.
type memUsage struct {
	loads     atomic.Int64
	succeeded atomic.Int64
}

func (m *memUsage) Usage(acc shotd.Account, now time.Time) (shotd.Usage, error) {
	m.loads.Add(1)
	start, end := shotd.BillingPeriod(acc.CreatedAt, now)
	n := int(m.succeeded.Load())
	return shotd.Usage{PeriodStart: start, PeriodEnd: end, Used: n, Succeeded: n}, nil
}

func (m *memUsage) RecordUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int) (shotd.Usage, shotd.Account, error) {
	m.succeeded.Add(int64(d.Succeeded))
	u, _ := m.Usage(acc, now)
	m.loads.Add(-1)
	return u, acc, nil
}

func (m *memUsage) Account(id string) (shotd.Account, error) { return shotd.Account{ID: id}, nil }

// TestLimitsUnavailable: when the limits cannot be read or the actor does not answer in time,
// the request is refused with service_unavailable; an admission granted after the asker gave up
// holds nothing afterwards.
func TestLimitsUnavailable(t *testing.T) {
	t.Run("usage unreadable", func(t *testing.T) {
		su := &slowUsage{fail: errors.New("disk on fire")}
		h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { su.Store = s; return su }, actors.AccountsConfig{})
		plan := testPlan("down")
		acc := h.account(t, plan.Name, 0)
		for _, kind := range []shotd.AdmitKind{shotd.AdmitRender, shotd.AdmitJobs, shotd.AdmitStatus} {
			if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: kind, Jobs: 1}); codeOf(err) != shotd.CodeServiceUnavailable {
				t.Fatalf("kind %v: %v, want service_unavailable", kind, err)
			}
		}
	})
	t.Run("no answer in time", func(t *testing.T) {
		su := &slowUsage{release: make(chan struct{})}
		h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { su.Store = s; return su },
			actors.AccountsConfig{Timeout: 50 * time.Millisecond})
		plan := testPlan("slow")
		plan.Concurrency, plan.QueueLimit = 1, 1
		acc := h.account(t, plan.Name, 0)
		begin := time.Now()
		for _, kind := range []shotd.AdmitKind{shotd.AdmitRender, shotd.AdmitJobs} {
			if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: kind, Jobs: 1}); codeOf(err) != shotd.CodeServiceUnavailable {
				t.Fatalf("kind %v: %v, want service_unavailable", kind, err)
			}
		}
		if d := time.Since(begin); d > time.Second {
			t.Fatalf("refusals took %v", d)
		}
		close(su.release) // the actor now handles the two late Admits
		// Neither late Admit may hold the only slot, queue place or any quota.
		res, l, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err != nil {
			t.Fatalf("render after recovery: %v (limits %+v)", err, l)
		}
		if l.QuotaRemaining != 99 || l.ConcurrencyRemaining != 0 {
			t.Fatalf("limits %+v: the late admission still holds something", l)
		}
		if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitJobs, Jobs: 1}); err != nil {
			t.Fatalf("job after recovery: %v", err)
		}
		if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeReleased); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLateJobAdmissionGrantsNothing: a job admission that the account actor handles near the end
// of the asker's wait (here at 85% of it) is refused rather than granted: its grant could arrive
// after the asker gave up, and nothing would give its queue place and quota back.
func TestLateJobAdmissionGrantsNothing(t *testing.T) {
	su := &slowUsage{release: make(chan struct{})}
	h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { su.Store = s; return su },
		actors.AccountsConfig{Timeout: time.Second})
	plan := testPlan("late")
	plan.QueueLimit = 1
	acc := h.account(t, plan.Name, 0)
	time.AfterFunc(850*time.Millisecond, func() { close(su.release) })
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitJobs, Jobs: 1}); codeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("a job admission handled at 85%% of the wait: %v, want service_unavailable", err)
	}
	// The only queue place is free.
	if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitJobs, Jobs: 1}); err != nil {
		t.Fatalf("job after the late one: %v", err)
	}
}

// TestPassivation: an idle account actor stops and a new one continues from the store, also
// after it was busy at an earlier idle check; and no admission is lost to a passivation that
// crosses it.
func TestPassivation(t *testing.T) {
	t.Run("again and again", func(t *testing.T) {
		su := &slowUsage{}
		h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { su.Store = s; return su },
			actors.AccountsConfig{Idle: 30 * time.Millisecond})
		plan := testPlan("idle")
		acc := h.account(t, plan.Name, 0)
		res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // idle checks while busy: no passivation
		if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err != nil {
			t.Fatal(err)
		}
		if su.loads.Load() != 1 {
			t.Fatalf("%d loads while busy, want 1", su.loads.Load())
		}
		for want := int64(2); want <= 3; want++ {
			// Now idle: passivated. A loaded machine may hold its usage write past one wait
			// (a write pending keeps it); the look that finds it alive starts the next wait.
			for try := 1; ; try++ {
				time.Sleep(200 * time.Millisecond)
				u, err := h.accounts.Usage(acc, plan)
				if err != nil {
					t.Fatal(err)
				}
				if u.Quota.Used != 1 {
					t.Fatalf("after passivation: %+v", u.Quota)
				}
				if n := su.loads.Load(); n == want {
					break
				} else if n != want-1 || try == 10 {
					t.Fatalf("%d loads, want %d: the idle actor was not passivated", n, want)
				}
			}
		}
	})
	t.Run("the day's failures are kept", func(t *testing.T) {
		// A passivated actor would forget them: waiting out the idle time must not reset
		// failures_per_day.
		su := &slowUsage{}
		h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { su.Store = s; return su },
			actors.AccountsConfig{Idle: 30 * time.Millisecond})
		plan := testPlan("daily")
		plan.FailuresPerDay = 1
		acc := h.account(t, plan.Name, 0)
		res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // idle, but holding the day's failure
		if _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}); codeOf(err) != shotd.CodeFailureLimit {
			t.Fatalf("after the idle time: %v, want failure_limit", err)
		}
		if su.loads.Load() != 1 {
			t.Fatalf("%d loads: the actor holding a failure of the day was passivated", su.loads.Load())
		}
	})
	t.Run("racing admissions", func(t *testing.T) {
		// Usage kept in memory: a bbolt commit takes longer than the idle time, and an actor
		// with a write pending never passivates.
		su := &memUsage{}
		h := startAccountsOn(t, t.TempDir(), func(s *store.Store) actors.UsageStore { return su },
			actors.AccountsConfig{Idle: time.Millisecond})
		plan := testPlan("race")
		plan.MonthlyQuota, plan.RequestsPerMinute = 100000, 100000
		acc := h.account(t, plan.Name, 0)
		var wg sync.WaitGroup
		var billed atomic.Int64
		for range 2 {
			wg.Go(func() {
				for range 400 {
					// Around the idle time, so that admissions often cross an idle report.
					time.Sleep(time.Duration(800+rand.IntN(600)) * time.Microsecond)
					res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
					if err != nil {
						t.Errorf("admit: %v", err)
						return
					}
					if _, err := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err != nil {
						t.Errorf("settle: %v", err)
						return
					}
					billed.Add(1)
				}
			})
		}
		wg.Wait()
		h.stop(t) // waits for the usage writes
		n := int(billed.Load())
		if got := int(su.succeeded.Load()); got != n {
			t.Fatalf("%d billed, want %d (%d passivations)", got, n, su.loads.Load()-1)
		}
		if su.loads.Load() < 10 {
			t.Fatalf("only %d passivations: the race was not exercised", su.loads.Load()-1)
		}
		t.Logf("%d renders, %d passivations", n, su.loads.Load()-1)
	})
}

// TestCloseRefusesLater: after Close every ask is refused with service_unavailable, quickly.
func TestCloseRefusesLater(t *testing.T) {
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("closed")
	acc := h.account(t, plan.Name, 0)
	if _, err := h.accounts.Usage(acc, plan); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.accounts.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ask := range []func() error{
		func() error { _, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan}); return err },
		func() error { _, err := h.accounts.Usage(acc, plan); return err },
		func() error { _, err := h.accounts.Settle(acc.ID, 1, shotd.OutcomeReleased); return err },
	} {
		if err := ask(); codeOf(err) != shotd.CodeServiceUnavailable {
			t.Fatalf("after close: %v", err)
		}
	}
}
