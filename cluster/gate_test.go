package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/store"
)

// gateNode is one node's admission: real account actors on a real bbolt store, wrapped by a
// Gate on that node's ledger.
type gateNode struct {
	st    *store.Store
	inner *actors.Accounts
	gate  *Gate
	rates *Rates // nil unless started with startRatedGateNode
	node  *Node  // nil for a single node's
}

// startGateNode starts a node's admission on n's ledger; with n nil, the single node's alone
// (gate nil).
func startGateNode(t testing.TB, n *Node, name string) *gateNode {
	t.Helper()
	return startGateNodeWith(t, n, name, nil)
}

// startRatedGateNode is startGateNode with the rate and failure counts shared with the other
// nodes (Rates on n, tuned by cfg).
func startRatedGateNode(t testing.TB, n *Node, name string, cfg RatesConfig) *gateNode {
	t.Helper()
	r, err := StartRates(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return startGateNodeWith(t, n, name, r)
}

func startGateNodeWith(t testing.TB, n *Node, name string, rates *Rates) *gateNode {
	t.Helper()
	st, err := store.Open(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.NewSystem(zerolog.Nop())
	cfg := actors.AccountsConfig{Store: st}
	if rates != nil {
		cfg.Tally = rates
	}
	acc, err := actors.StartAccounts(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	g := &gateNode{st: st, inner: acc, rates: rates, node: n}
	var l *Ledger
	if n != nil {
		l = NewLedger(n.Ledger, name, LedgerConfig{Log: log})
		g.gate = NewGate(acc, l, GateConfig{Log: log, Rates: rates})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = acc.Close(ctx)
		sys.Shutdown()
		if l != nil {
			_ = l.Close(ctx)
		}
		_ = st.Close(ctx)
	})
	return g
}

// TestGateAcrossNodes: one account rendering through two nodes at once gets exactly its quota,
// never more than its concurrency at once, both nodes report the same usage, and nothing stays
// reserved.
func TestGateAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	g := []*gateNode{startGateNode(t, nodes[0], "n1"), startGateNode(t, nodes[2], "n3")}
	// The same account on both nodes (in cluster mode it comes from the shared bucket).
	created := time.Now().UTC().Add(-time.Hour)
	acc := shotd.Account{ID: "acc_shared", Plan: "p", CreatedAt: created, EmailVerified: true}
	for _, n := range g {
		if _, err := n.st.CreateAccountWithID(acc.ID, "a@example.test", "p", true); err != nil {
			t.Fatal(err)
		}
	}
	plan := shotd.Plan{Name: "p", MonthlyQuota: 20,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 100000, StatusRequestsPerMinute: 1000,
			Concurrency: 2, QueueLimit: 10, FailuresPerMinute: 1000}}
	var ok, quota, busy, running, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		n := g[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, _, err := n.gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
				switch code(err) {
				case "":
				case shotd.CodeQuotaExceeded:
					quota.Add(1)
					return
				case shotd.CodeConcurrencyLimit:
					busy.Add(1)
					time.Sleep(time.Millisecond)
					continue
				default:
					t.Error(err)
					return
				}
				r := running.Add(1)
				for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				running.Add(-1)
				if _, err := n.gate.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err != nil {
					t.Error(err)
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != int64(plan.MonthlyQuota) {
		t.Fatalf("%d successes, want exactly the quota %d", ok.Load(), plan.MonthlyQuota)
	}
	if peak.Load() > int64(plan.Concurrency) {
		t.Fatalf("%d renders at once, concurrency %d", peak.Load(), plan.Concurrency)
	}
	for i, n := range g {
		u, err := n.gate.Usage(acc, plan)
		if err != nil {
			t.Fatal(err)
		}
		if u.Quota.Used != plan.MonthlyQuota || u.Quota.Remaining != 0 {
			t.Fatalf("node %d reports used %d remaining %d, want %d and 0", i+1, u.Quota.Used, u.Quota.Remaining, plan.MonthlyQuota)
		}
		if n.gate.Outstanding() != 0 || n.gate.ledger.Held() != 0 {
			t.Fatalf("node %d still holds reservations", i+1)
		}
	}
	// A cache hit needs no quota; jobs pass the node's checks here, their quota is reserved when
	// they are queued (Jobs.Submit, TestJobsQuota).
	if _, _, err := g[0].gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitCacheHit}); err != nil {
		t.Fatalf("cache hit at quota: %v", err)
	}
	if _, _, err := g[1].gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitJobs, Jobs: 1}); err != nil {
		t.Fatalf("jobs: got %v, want the node's admission", err)
	}
}

// TestGateRefusalReleasesTheNode: a render the cluster refuses does not keep the node's own
// concurrency slot or reservation.
func TestGateRefusalReleasesTheNode(t *testing.T) {
	nodes := startCluster(t, 1)
	n := startGateNode(t, nodes[0], "n1")
	a, err := n.st.CreateAccount("b@example.test", "p", true)
	if err != nil {
		t.Fatal(err)
	}
	plan := shotd.Plan{Name: "p", MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
			Concurrency: 1, QueueLimit: 1, FailuresPerMinute: 1000}}
	// Another node used the quota already.
	other := NewLedger(nodes[0].Ledger, "other", LedgerConfig{})
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	key, _ := n.gate.key(a)
	for range plan.MonthlyQuota {
		h, _, err := other.Reserve(context.Background(), key, plan.MonthlyQuota, 1, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Settle(context.Background(), h, true); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		_, lim, err := n.gate.Admit(shotd.Admission{Account: a, Plan: plan, Kind: shotd.AdmitRender})
		if code(err) != shotd.CodeQuotaExceeded {
			t.Fatalf("got %v, want quota_exceeded (the node's own slot must have been released)", err)
		}
		if lim.QuotaRemaining != 0 {
			t.Fatalf("limits say %d remaining", lim.QuotaRemaining)
		}
	}
}

// TestGateNotBilled: a success the ledger cannot bill (its reservation lost and the quota used)
// comes back as a NotBilled error carrying service_unavailable.
func TestGateNotBilled(t *testing.T) {
	nodes := startCluster(t, 1)
	n := startGateNode(t, nodes[0], "n1")
	a, err := n.st.CreateAccount("nb@example.test", "p", true)
	if err != nil {
		t.Fatal(err)
	}
	plan := shotd.Plan{Name: "p", MonthlyQuota: 1,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
			Concurrency: 5, QueueLimit: 1, FailuresPerMinute: 1000}}
	res, _, err := n.gate.Admit(shotd.Admission{Account: a, Plan: plan, Kind: shotd.AdmitRender})
	if err != nil {
		t.Fatal(err)
	}
	// Another node drops the reservation as if its lease had ended, and bills the last unit.
	key, _ := n.gate.key(a)
	ctx := context.Background()
	e, err := nodes[0].Ledger.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Ledger.Update(ctx, key, []byte(`{"v":1,"billed":1}`), e.Revision()); err != nil {
		t.Fatal(err)
	}
	_, err = n.gate.Settle(a.ID, res.Ticket, shotd.OutcomeSucceeded)
	var nb interface{ NotBilled() bool }
	if !errors.As(err, &nb) || !nb.NotBilled() || code(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("got %v, want a NotBilled service_unavailable", err)
	}
}

// TestGateUnbilledSuccessNotCountedByTheNode: a success that the ledger could not bill (its
// reservation lapsed and the quota filled meanwhile) is not counted by the node either: once
// the cluster's quota has room again, the node admits as many renders as the cluster does.
func TestGateUnbilledSuccessNotCountedByTheNode(t *testing.T) {
	nodes := startCluster(t, 3)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	gn := startGateNode(t, nil, "")
	short := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{Log: log, Lease: 300 * time.Millisecond, NoRenew: true})
	other := NewLedger(nodes[1].Ledger, "n2", LedgerConfig{Log: log})
	t.Cleanup(func() { _ = short.Close(context.Background()); _ = other.Close(context.Background()) })
	gate := NewGate(gn.inner, short, GateConfig{Log: log})
	created := time.Now().UTC().Add(-time.Hour)
	acc := shotd.Account{ID: "acc_unbilled", Plan: "p", CreatedAt: created, EmailVerified: true}
	if _, err := gn.st.CreateAccountWithID(acc.ID, "u@example.test", "p", true); err != nil {
		t.Fatal(err)
	}
	plan := shotd.Plan{Name: "p", MonthlyQuota: 2,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
			Concurrency: 2, QueueLimit: 10, FailuresPerMinute: 1000}}
	admit := func() *shotd.AdmitResult {
		t.Helper()
		res, _, err := gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := admit()
	time.Sleep(3 * 300 * time.Millisecond) // its reservation lapses (this node renews nothing)
	key, _ := gate.key(acc)
	var hs []Hold
	for range 2 { // another node takes the whole quota meanwhile
		h, _, err := other.Reserve(context.Background(), key, plan.MonthlyQuota, plan.Concurrency, true)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	if _, err := gate.Settle(acc.ID, res.Ticket, shotd.OutcomeSucceeded); err == nil {
		t.Fatal("a success past the quota was billed")
	}
	for _, h := range hs { // the other node's renders fail: the quota is free again
		if _, err := other.Settle(context.Background(), h, false); err != nil {
			t.Fatal(err)
		}
	}
	for range plan.MonthlyQuota {
		if _, err := gate.Settle(acc.ID, admit().Ticket, shotd.OutcomeSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	checkBilled(t, other, acc, plan.MonthlyQuota)
}

// TestGateStoredHitTakesClusterSlot: a store=true cache hit holds one of the account's
// concurrency slots across the cluster (a render on another node waits for it), takes no quota
// (admitted with the quota used up) and is settled unbilled.
func TestGateStoredHitTakesClusterSlot(t *testing.T) {
	nodes := startCluster(t, 1)
	g := []*gateNode{startGateNode(t, nodes[0], "n1"), startGateNode(t, nodes[0], "n2")}
	acc := shotd.Account{ID: "acc_hit", Plan: "p", CreatedAt: time.Now().UTC().Add(-time.Hour), EmailVerified: true}
	for _, n := range g {
		if _, err := n.st.CreateAccountWithID(acc.ID, "h@example.test", "p", true); err != nil {
			t.Fatal(err)
		}
	}
	plan := shotd.Plan{Name: "p", MonthlyQuota: 1,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
			Concurrency: 1, QueueLimit: 1, FailuresPerMinute: 1000}}
	key, _ := g[0].gate.key(acc)
	h, _, err := g[0].gate.ledger.Reserve(context.Background(), key, plan.MonthlyQuota, plan.Concurrency, false)
	if err == nil {
		_, err = g[0].gate.ledger.Settle(context.Background(), h, true) // the quota is used
	}
	if err != nil {
		t.Fatal(err)
	}
	hit, _, err := g[0].gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitStoredHit})
	if err != nil {
		t.Fatalf("a stored hit with the quota used: %v, want admitted", err)
	}
	plan.MonthlyQuota = 2 // room for a render: only the slot is in the way
	if _, _, err := g[1].gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}); code(err) != shotd.CodeConcurrencyLimit {
		t.Fatalf("a render on another node during a stored hit: %v, want concurrency_limit", err)
	}
	if _, err := g[0].gate.Settle(acc.ID, hit.Ticket, shotd.OutcomeSucceeded); err != nil {
		t.Fatal(err)
	}
	if st := ledgerState(t, nodes[0], acc); st.Billed != 1 || st.Reservations != 0 || st.Slots != 0 {
		t.Fatalf("ledger %+v after the hit; want 1 billed (before it), nothing held", st)
	}
}
