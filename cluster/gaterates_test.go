package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// waitPeers polls until every node's view of the other nodes' counts for the account satisfies
// ok: the reports are gossiped every interval.
func waitPeers(t *testing.T, g []*gateNode, accountID string, ok func(i int, p shotd.PeerCounts) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < len(g); {
		p := g[i].rates.Peers(accountID)
		if ok(i, p) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never saw the wanted counts of %s: %+v", i+1, accountID, p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ratedGateNodes starts three real nodes, each with its admission and Rates, and creates acc
// on every node's store.
func ratedGateNodes(t *testing.T, accs ...shotd.Account) []*gateNode {
	t.Helper()
	nodes := startCluster(t, 3)
	cfg := RatesConfig{Interval: 100 * time.Millisecond}
	var g []*gateNode
	for i, n := range nodes {
		g = append(g, startRatedGateNode(t, n, n.NodeName(), cfg))
		for _, acc := range accs {
			if _, err := g[i].st.CreateAccountWithID(acc.ID, acc.ID+"@example.test", acc.Plan, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	return g
}

// TestGateRateAcrossNodes: an account spread over three nodes gets its requests_per_minute and
// its status allowance for the whole cluster, not each node's: once the nodes have heard of each
// other's requests, every one refuses the next with rate_limited and says 0 remaining. The
// requests of a node that falls silent still count on the others: they happened. Restarted under
// its name, that node learns its earlier run's counts back from the others.
func TestGateRateAcrossNodes(t *testing.T) {
	acc := shotd.Account{ID: "acc_rate", Plan: "p", CreatedAt: time.Now().UTC().Add(-time.Hour), EmailVerified: true}
	g := ratedGateNodes(t, acc)
	plan := shotd.Plan{Name: "p", MonthlyQuota: 100,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 6, StatusRequestsPerMinute: 3, Concurrency: 5, QueueLimit: 10, FailuresPerMinute: 10}}
	admit := func(n *gateNode, kind shotd.AdmitKind) (shotd.LimitsSnapshot, error) {
		t.Helper()
		_, l, err := n.gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: kind})
		return l, err
	}
	for i, n := range g { // 6 in all: the whole minute's allowance, 2 per node
		for range 2 {
			if _, err := admit(n, shotd.AdmitCacheHit); err != nil {
				t.Fatalf("node %d: %v", i+1, err)
			}
		}
		if _, err := admit(n, shotd.AdmitStatus); err != nil { // 3 in all
			t.Fatalf("node %d status: %v", i+1, err)
		}
	}
	waitPeers(t, g, acc.ID, func(_ int, p shotd.PeerCounts) bool { return p.Requests == 4 && p.StatusRequests == 2 })
	for i, n := range g {
		for _, kind := range []shotd.AdmitKind{shotd.AdmitCacheHit, shotd.AdmitStatus} {
			l, err := admit(n, kind)
			if code(err) != shotd.CodeRateLimited {
				t.Fatalf("node %d, kind %d, with the account's allowance used across the cluster: %v, want rate_limited", i+1, kind, err)
			}
			if e := shotd.AsError(err); e.RetryAfter < 1 || e.RetryAfter > 60 {
				t.Fatalf("node %d: Retry-After %d", i+1, e.RetryAfter)
			}
			if l.RateRemaining != 0 {
				t.Fatalf("node %d, kind %d: %d remaining, want 0 (%+v)", i+1, kind, l.RateRemaining, l)
			}
		}
	}

	// Node 1 falls silent (dies, or is cut off): its requests still count on the others.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g[0].rates.Close(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // past the 3 s of silence after which its reports were dropped
	waitPeers(t, g[1:], acc.ID, func(_ int, p shotd.PeerCounts) bool { return p.Requests == 4 && p.StatusRequests == 2 })
	if _, err := admit(g[2], shotd.AdmitCacheHit); code(err) != shotd.CodeRateLimited {
		t.Fatalf("node 3 with node 1 silent: %v, want rate_limited", err)
	}

	// Node 1's counts restarted under its name: a new run, which counts from nothing.
	again, err := StartRates(g[0].node, RatesConfig{Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Close(context.Background()) })
	waitPeers(t, []*gateNode{{rates: again}}, acc.ID, func(_ int, p shotd.PeerCounts) bool {
		return p.Requests == 6 && p.StatusRequests == 3
	})
}

// TestGateFailuresAcrossNodes: renders that failed on two nodes count against the account's
// failures_per_minute on every node, a third one included.
func TestGateFailuresAcrossNodes(t *testing.T) {
	acc := shotd.Account{ID: "acc_fail", Plan: "p", CreatedAt: time.Now().UTC().Add(-time.Hour), EmailVerified: true}
	g := ratedGateNodes(t, acc)
	plan := shotd.Plan{Name: "p", MonthlyQuota: 100,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000, Concurrency: 5, QueueLimit: 10, FailuresPerMinute: 2}}
	for i, n := range g[:2] {
		res, _, err := n.gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		if _, err := n.gate.Settle(acc.ID, res.Ticket, shotd.OutcomeFailed); err != nil {
			t.Fatal(err)
		}
	}
	waitPeers(t, g, acc.ID, func(i int, p shotd.PeerCounts) bool {
		if i == 2 {
			return p.Failures == 2 && p.FailuresDay == 2
		}
		return p.Failures == 1 && p.FailuresDay == 1
	})
	for i, n := range g {
		_, _, err := n.gate.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if code(err) != shotd.CodeFailureLimit {
			t.Fatalf("node %d after two failures across the cluster: %v, want failure_limit", i+1, err)
		}
	}
}

// TestJobFailureCountsAcrossNodes: a job whose page fails counts against the account's failure
// limits on the node that rendered it (whose account actors never see a cluster job) and, by its
// report, on the others.
func TestJobFailureCountsAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	cfg := RatesConfig{Interval: 100 * time.Millisecond}
	var rates []*Rates
	for _, n := range nodes[:2] {
		r, err := StartRates(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()) })
		rates = append(rates, r)
	}
	acc := shotd.Account{ID: "acc_jobfail", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 2}}
	jn := startJobsNode(t, nodes[0], func(context.Context, *shotd.Options) (*shotd.Output, error) {
		return nil, shotd.Errorf(shotd.CodeNavigationFailed, "the page did not load")
	}, nil, func(c *JobsConfig) { c.Failed = rates[0].CountJobFailure })
	jobs, _, err := jn.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if job := waitJob(t, jn.jobs, acc.ID, jobs[0].JobID, 30*time.Second); job.Status != shotd.JobFailed {
		t.Fatalf("job %s, want failed", job.Status)
	}
	if p := rates[0].Peers(acc.ID); p.Failures != 1 || p.FailuresDay != 1 {
		t.Fatalf("the rendering node's own count: %+v, want 1 failure", p)
	}
	deadline := time.Now().Add(20 * time.Second)
	for p := rates[1].Peers(acc.ID); p.Failures != 1 || p.FailuresDay != 1; p = rates[1].Peers(acc.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("the other node never heard of the job's failure: %+v", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
