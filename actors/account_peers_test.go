package actors_test

import (
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
)

// recordingTally keeps what the account actors tell their Tally.
type recordingTally struct {
	mu     sync.Mutex
	counts map[shotd.Window]int
}

func (r *recordingTally) Count(_ string, w shotd.Window, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[w]++
}

func (r *recordingTally) get(w shotd.Window) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[w]
}

// TestAccountAdmitWithPeers: the counts other nodes reported (Admission.Peers) are added to the
// actor's own for the rate, the status allowance and both failure limits, in the refusals'
// Retry-After and the rate headers; everything the actor counts reaches its Tally.
func TestAccountAdmitWithPeers(t *testing.T) {
	clock := newClock()
	tally := &recordingTally{counts: map[shotd.Window]int{}}
	h := startAccountsOn(t, t.TempDir(), nil, actors.AccountsConfig{Now: clock.Now, Tally: tally})
	acc := h.account(t, "peers", 0)
	plan := testPlan("peers")
	plan.RequestsPerMinute, plan.StatusRequestsPerMinute = 5, 3
	plan.FailuresPerMinute, plan.FailuresPerDay = 3, 4
	now := clock.Now()
	admit := func(kind shotd.AdmitKind, p shotd.PeerCounts) (shotd.LimitsSnapshot, error) {
		t.Helper()
		_, l, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: kind, Peers: p})
		return l, err
	}
	want := func(name string, err error, code shotd.Code, retry int) {
		t.Helper()
		if codeOf(err) != code {
			t.Fatalf("%s: %v, want %q", name, err, code)
		}
		if code != "" && shotd.AsError(err).RetryAfter != retry {
			t.Fatalf("%s: Retry-After %d, want %d", name, shotd.AsError(err).RetryAfter, retry)
		}
	}

	// Rate: 3 of 5 used elsewhere, the oldest leaving in 20 s.
	peers := shotd.PeerCounts{Requests: 3, RequestsReset: now.Add(20 * time.Second)}
	l, err := admit(shotd.AdmitCacheHit, peers)
	want("first hit", err, "", 0)
	if l.RateRemaining != 1 || !l.RateReset.Equal(peers.RequestsReset) {
		t.Fatalf("after the first hit: remaining %d reset %v, want 1 and %v", l.RateRemaining, l.RateReset, peers.RequestsReset)
	}
	_, err = admit(shotd.AdmitCacheHit, peers)
	want("second hit", err, "", 0)
	l, err = admit(shotd.AdmitCacheHit, peers)
	want("third hit", err, shotd.CodeRateLimited, 20) // the peers' oldest leaves first
	if l.RateRemaining != 0 {
		t.Fatalf("refused: remaining %d, want 0", l.RateRemaining)
	}
	if _, err = admit(shotd.AdmitCacheHit, shotd.PeerCounts{}); err != nil {
		t.Fatalf("without the peers' counts the node has room: %v", err)
	}

	// Status allowance: 2 of 3 used elsewhere.
	sp := shotd.PeerCounts{StatusRequests: 2, StatusReset: now.Add(10 * time.Second), Requests: 50}
	l, err = admit(shotd.AdmitStatus, sp)
	want("status", err, "", 0)
	if l.RateLimit != 3 || l.RateRemaining != 0 || !l.RateReset.Equal(sp.StatusReset) {
		t.Fatalf("status limits %+v, want limit 3, remaining 0, reset %v", l, sp.StatusReset)
	}
	_, err = admit(shotd.AdmitStatus, sp)
	want("second status", err, shotd.CodeRateLimited, 10)

	// Failures: the minute's and the day's, counted elsewhere.
	_, err = admit(shotd.AdmitRender, shotd.PeerCounts{Failures: 3, FailuresReset: now.Add(30 * time.Second)})
	want("render past the minute's failures", err, shotd.CodeFailureLimit, 30)
	_, err = admit(shotd.AdmitRender, shotd.PeerCounts{FailuresDay: 4, FailuresDayReset: now.Add(time.Hour)})
	want("render past the day's failures", err, shotd.CodeFailureLimit, 3600)
	admitSettle(t, h.accounts, shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender,
		Peers: shotd.PeerCounts{FailuresDay: 2}}, shotd.OutcomeFailed)
	_, err = admit(shotd.AdmitRender, shotd.PeerCounts{FailuresDay: 3})
	want("one own and three reported failures", err, shotd.CodeFailureLimit, 86400)

	if r, s, f := tally.get(shotd.WindowRequests), tally.get(shotd.WindowStatus), tally.get(shotd.WindowFailures); r != 4 || s != 1 || f != 1 {
		t.Fatalf("tally heard %d requests, %d status, %d failures; want 4, 1, 1", r, s, f)
	}
}
