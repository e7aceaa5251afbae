package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shotd/shotd"
)

// testRates is a Rates without a connection, on a clock the test moves.
func testRates(node string, now *time.Time) *Rates {
	return newRates(node, RatesConfig{Now: func() time.Time { return *now }})
}

// relay passes from's reports to each of to, through their JSON encoding, as a node would
// receive them.
func relay(t *testing.T, from *Rates, to ...*Rates) {
	t.Helper()
	for _, m := range from.reports(from.now()) {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var got ratesMessage
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		for _, r := range to {
			r.take(got, r.now())
		}
	}
}

// TestRatesReportAndMerge: counts reported by two nodes add up on a third, with the earliest
// reset; a later report of an account replaces the earlier one; events leave the windows as
// they age, the day's failures after a day; a report that names an account no more keeps it.
func TestRatesReportAndMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 400e6, time.UTC)
	now := t0
	a, b, c := testRates("a", &now), testRates("b", &now), testRates("c", &now)
	a.Count("acc", shotd.WindowRequests, now.Add(-10*time.Second))
	a.Count("acc", shotd.WindowRequests, now)
	a.Count("acc", shotd.WindowStatus, now)
	a.Count("acc", shotd.WindowFailures, now)
	b.Count("acc", shotd.WindowRequests, now)
	b.Count("other", shotd.WindowRequests, now)
	relay(t, a, c)
	relay(t, b, c)
	p := c.Peers("acc")
	if p.Requests != 3 || p.StatusRequests != 1 || p.Failures != 1 || p.FailuresDay != 1 {
		t.Fatalf("peers %+v, want 3 requests, 1 status, 1 failure in the minute and the day", p)
	}
	// The oldest request came 10 s ago, in a bucket that ends 9.4 s ago: it leaves at most a
	// second late, never early.
	if want := t0.Add(-10 * time.Second).Add(time.Minute); p.RequestsReset.Before(want) || p.RequestsReset.After(want.Add(time.Second)) {
		t.Fatalf("requests reset %v, want within a second after %v", p.RequestsReset, want)
	}
	if got := a.Peers("acc"); got != (shotd.PeerCounts{}) {
		t.Fatalf("a node's own counts are not its peers': %+v", got)
	}

	// b counts more of acc: its new report replaces the old, and keeps other unchanged.
	b.Count("acc", shotd.WindowRequests, now)
	relay(t, b, c)
	if p := c.Peers("acc"); p.Requests != 4 {
		t.Fatalf("after b's second report: %d requests, want 4", p.Requests)
	}
	if p := c.Peers("other"); p.Requests != 1 {
		t.Fatalf("other: %d requests, want 1", p.Requests)
	}

	// 55 s on, with heartbeats: the request of 10 s before has left the minute.
	for range 110 {
		now = now.Add(500 * time.Millisecond)
		relay(t, a, c)
		relay(t, b, c)
	}
	p = c.Peers("acc")
	if p.Requests != 3 || p.Failures != 1 {
		t.Fatalf("55 s on: %+v, want 3 requests and the failure still in the minute", p)
	}
	now = now.Add(6 * time.Second)
	relay(t, a, c)
	relay(t, b, c)
	p = c.Peers("acc")
	if p.Requests != 0 || p.StatusRequests != 0 || p.Failures != 0 || p.FailuresDay != 1 {
		t.Fatalf("a minute on: %+v, want only the day's failure", p)
	}
	if len(b.own) != 0 {
		t.Fatalf("b forgets accounts whose counts left every window: %d left", len(b.own))
	}
	now = t0.Add(24*time.Hour + time.Minute)
	relay(t, a, c)
	relay(t, b, c)
	if p := c.Peers("acc"); p != (shotd.PeerCounts{}) {
		t.Fatalf("a day on: %+v, want nothing", p)
	}
}

// reportedOnce makes node c, which hears node a report a request and a failure of account acc
// at now, and nothing from a afterwards.
func reportedOnce(t *testing.T, now *time.Time) *Rates {
	t.Helper()
	a, c := testRates("a", now), testRates("c", now)
	a.Count("acc", shotd.WindowRequests, *now)
	a.Count("acc", shotd.WindowFailures, *now)
	relay(t, a, c)
	return c
}

// TestRatesSilentNodeCounts: the reports of a node that stops sending count until their windows
// pass, the minute's after a minute, the day's failures after a day; then the node is forgotten.
func TestRatesSilentNodeCounts(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := t0
	c := reportedOnce(t, &now)
	now = t0.Add(30 * time.Second) // silent meanwhile
	c.reports(now)
	if p := c.Peers("acc"); p.Requests != 1 || p.Failures != 1 || p.FailuresDay != 1 {
		t.Fatalf("30 s into a's silence: %+v, want its request and failure", p)
	}
	now = t0.Add(2 * time.Minute)
	c.reports(now)
	if p := c.Peers("acc"); p.Requests != 0 || p.Failures != 0 || p.FailuresDay != 1 {
		t.Fatalf("2 min into a's silence: %+v, want the day's failure alone", p)
	}
	now = t0.Add(24*time.Hour + time.Minute)
	c.reports(now)
	if p := c.Peers("acc"); p != (shotd.PeerCounts{}) {
		t.Fatalf("a day on: %+v, want nothing", p)
	}
	if len(c.peers) != 0 {
		t.Fatalf("a node with nothing left in any window is kept: %d", len(c.peers))
	}
}

// TestRatesRestartedNode: a node restarted under its name starts counting from nothing; what its
// earlier run reported still counts beside what the new run reports, until its windows pass.
func TestRatesRestartedNode(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := t0
	c := reportedOnce(t, &now)
	now = t0.Add(5 * time.Second)
	again := testRates("a", &now) // the same node, restarted
	again.Count("acc", shotd.WindowRequests, now)
	for range ratesFullEvery { // its full reports too
		relay(t, again, c)
	}
	if p := c.Peers("acc"); p.Requests != 2 || p.FailuresDay != 1 {
		t.Fatalf("after a's restart: %+v, want both runs' requests and the first run's failure", p)
	}
	now = t0.Add(61 * time.Second)
	relay(t, again, c)
	if p := c.Peers("acc"); p.Requests != 1 || p.FailuresDay != 1 {
		t.Fatalf("a minute after the first run's request: %+v, want the second run's request and the failure", p)
	}
}

// TestRatesRelayToRestartedNode: a node restarted under its name learns its earlier run's counts
// from a peer, which relays them once when it hears the new run: its own admissions count them
// again, beside its new run's.
func TestRatesRelayToRestartedNode(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := t0
	c := reportedOnce(t, &now)
	now = t0.Add(time.Second) // restarted at once: its earlier run spoke a second ago
	again := testRates("a", &now)
	again.Count("acc", shotd.WindowRequests, now)
	relay(t, again, c)
	relay(t, c, again)
	if p := again.Peers("acc"); p.Requests != 1 || p.Failures != 1 || p.FailuresDay != 1 {
		t.Fatalf("the restarted node's view of its earlier run: %+v, want its request and failure", p)
	}
	if msgs := c.reports(now); len(msgs) != 1 || msgs[0].Via != "" {
		t.Fatalf("relayed again without a new run: %+v", msgs)
	}
	now = t0.Add(61 * time.Second)
	if p := again.Peers("acc"); p.Requests != 0 || p.FailuresDay != 1 {
		t.Fatalf("a minute on: %+v, want the day's failure alone", p)
	}
}

// TestRatesRelayOfSilentRuns: a node that joins learns from a relay the counts of a node that
// died before it came; a node that still hears that node itself keeps its own, newer reports.
func TestRatesRelayOfSilentRuns(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := t0
	a, c, d := testRates("a", &now), testRates("c", &now), testRates("d", &now)
	a.Count("acc", shotd.WindowRequests, now)
	relay(t, a, c, d)
	now = t0.Add(2 * time.Second) // c no longer hears a; d does, and hears a second request
	a.Count("acc", shotd.WindowRequests, now)
	relay(t, a, d)
	joiner := testRates("j", &now)
	relay(t, joiner, c, d)
	msgs := c.reports(now)
	var relays int
	for _, m := range msgs {
		if m.Via != "" {
			relays++
			if m.Via != "c" || m.Node != "a" || m.Run != a.run {
				t.Fatalf("relay %+v, want a's run by c", m)
			}
		}
	}
	if relays != 1 {
		t.Fatalf("c sent %d relays, want 1", relays)
	}
	for _, m := range msgs {
		for _, r := range []*Rates{joiner, d} {
			r.take(m, now)
		}
	}
	if p := joiner.Peers("acc"); p.Requests != 1 {
		t.Fatalf("the joiner's view of a, which died before it came: %+v, want c's last report of it", p)
	}
	if p := d.Peers("acc"); p.Requests != 2 {
		t.Fatalf("d, which hears a: %+v, want a's own report of 2 requests", p)
	}
}

// TestRatesJobFailures: a job's failure on this node counts in its own admissions (its actors
// never see it) and in the report to the others, once each.
func TestRatesJobFailures(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	a, c := testRates("a", &now), testRates("c", &now)
	a.CountJobFailure("acc")
	a.Count("acc", shotd.WindowFailures, now) // a sync render's, which its actor counted
	if p := a.Peers("acc"); p.Failures != 1 || p.FailuresDay != 1 || p.Requests != 0 {
		t.Fatalf("own job failures: %+v, want 1", p)
	}
	relay(t, a, c)
	if p := c.Peers("acc"); p.Failures != 2 || p.FailuresDay != 2 {
		t.Fatalf("reported failures: %+v, want 2", p)
	}
}

// TestRatesWire: buckets travel as ages, so a receiver whose clock is ahead places them at the
// same distance from its own now; bad buckets (out of order, no count) and reports of an unknown
// version or from the node itself are dropped.
func TestRatesWire(t *testing.T) {
	sent := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var tl tally
	tl.add(shotd.WindowRequests, sent.Add(-30*time.Second))
	tl.add(shotd.WindowRequests, sent.Add(-30*time.Second))
	tl.add(shotd.WindowRequests, sent.Add(-2*time.Second))
	w := tl.wire(sent)
	if len(w.Requests) != 2 || w.Requests[0] != (wireBucket{29000, 2}) || w.Requests[1] != (wireBucket{1000, 1}) {
		t.Fatalf("wire %v", w.Requests)
	}
	ahead := sent.Add(time.Hour) // the receiver's clock
	got := w.tally(ahead)
	n, first := got.requests.count(ahead, minuteSpan)
	if n != 3 || !first.Equal(ahead.Add(-29*time.Second)) {
		t.Fatalf("received %d from %v, want 3 from %v", n, first, ahead.Add(-29*time.Second))
	}
	bad := accountRates{Requests: []wireBucket{{5000, 1}, {9000, 4}, {1000, 0}, {1000, -3}, {500, 2}}}
	if n, _ := bad.tally(ahead).requests.count(ahead, minuteSpan); n != 3 {
		t.Fatalf("bad buckets: %d counted, want 3", n)
	}

	now := sent
	r := testRates("c", &now)
	for _, m := range []ratesMessage{
		{V: ratesVersion + 1, Node: "a", Accounts: map[string]accountRates{"acc": w}},
		{V: ratesVersion, Node: "c", Accounts: map[string]accountRates{"acc": w}},
	} {
		data, _ := json.Marshal(m)
		r.receive(&nats.Msg{Data: data})
	}
	r.receive(&nats.Msg{Data: []byte("{not json")})
	if len(r.peers) != 0 {
		t.Fatalf("kept %d reports", len(r.peers))
	}
	data, _ := json.Marshal(ratesMessage{V: ratesVersion, Node: "a", Accounts: map[string]accountRates{"acc": w}})
	r.receive(&nats.Msg{Data: data})
	if p := r.Peers("acc"); p.Requests != 3 {
		t.Fatalf("good report: %+v", p)
	}
}

// TestRatesChunks: a full report of many accounts is split into messages of at most ratesChunk
// accounts, and an interval with nothing changed sends one empty message (which nodes of the
// previous version need to keep counting the node).
func TestRatesChunks(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	a := testRates("a", &now)
	if msgs := a.reports(now); len(msgs) != 1 || len(msgs[0].Accounts) != 0 {
		t.Fatalf("nothing counted: %+v", msgs)
	}
	for i := range 2*ratesChunk + 1 {
		a.Count(string(rune('A'+i%26))+string(rune('a'+i/26)), shotd.WindowRequests, now)
	}
	msgs := a.reports(now)
	total := 0
	for _, m := range msgs {
		if len(m.Accounts) > ratesChunk {
			t.Fatalf("message of %d accounts", len(m.Accounts))
		}
		total += len(m.Accounts)
	}
	if total != 2*ratesChunk+1 || len(msgs) != 3 {
		t.Fatalf("%d accounts in %d messages", total, len(msgs))
	}
	if msgs := a.reports(now); len(msgs) != 1 || len(msgs[0].Accounts) != 0 {
		t.Fatalf("nothing changed: %+v", msgs)
	}
}

// TestPeerCountsApply: the peers' requests come off the remaining rate, and the reset is the
// peers' when the node counted none or theirs leaves first.
func TestPeerCountsApply(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	empty := shotd.LimitsSnapshot{RateLimit: 10, RateRemaining: 10, RateReset: now}
	own := shotd.LimitsSnapshot{RateLimit: 10, RateRemaining: 7, RateReset: now.Add(40 * time.Second)}
	p := shotd.PeerCounts{Requests: 4, RequestsReset: now.Add(50 * time.Second), StatusRequests: 20, StatusReset: now.Add(5 * time.Second)}
	if l := p.Apply(empty, false); l.RateRemaining != 6 || !l.RateReset.Equal(p.RequestsReset) {
		t.Fatalf("none of its own: %+v", l)
	}
	if l := p.Apply(own, false); l.RateRemaining != 3 || !l.RateReset.Equal(own.RateReset) {
		t.Fatalf("its own leave first: %+v", l)
	}
	if l := p.Apply(own, true); l.RateRemaining != 0 || !l.RateReset.Equal(p.StatusReset) {
		t.Fatalf("status: %+v", l)
	}
	if l := (shotd.PeerCounts{}).Apply(own, false); l != own {
		t.Fatalf("no peers changed %+v", l)
	}
}
