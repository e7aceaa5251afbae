package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// Admitter is the single node's admission (actors.Accounts): rate, failures, features and the
// node's own counts. httpd.Gate has the same methods.
type Admitter interface {
	Admit(req shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error)
	Settle(accountID string, ticket uint64, o shotd.Outcome) (shotd.LimitsSnapshot, error)
	ReleaseJobs(accountID string, n int)
	Usage(acc shotd.Account, plan shotd.Plan) (*shotd.UsageReport, error)
}

// Gate is the admission of a node in cluster mode: the node's own admission first (its account
// actor keeps rate, failure and feature checks in memory, unchanged), then the cluster's quota
// ledger, which alone decides quota and concurrency across nodes. A render the ledger refuses is
// released at once from the node's actor. Settle bills or drops the ledger reservation before
// the actor's.
//
// The per-minute rate, the status allowance and the failure limits are the node's actor's, with
// what the other nodes reported counting for the account added (Rates, gossiped every half
// second): no round trip at admission, and an account passes its limit by at most what the other
// nodes admit in one report's time. Without Rates they are each node's alone.
type Gate struct {
	inner   Admitter
	ledger  *Ledger
	rates   *Rates
	timeout time.Duration
	now     func() time.Time
	log     zerolog.Logger

	mu    sync.Mutex
	holds map[uint64]Hold // by the inner admission's ticket
}

// GateConfig tunes a Gate.
type GateConfig struct {
	// Timeout bounds an admission's ledger call (default 2 s: then service_unavailable). A
	// settle gets fifteen times as long: after a node dies its streams elect new leaders, which
	// takes seconds, and a bill must not be lost to that.
	Timeout time.Duration
	Now     func() time.Time
	Log     zerolog.Logger
	// Rates shares the rate and failure counts with the other nodes; nil: each node counts its
	// own only.
	Rates *Rates
}

// NewGate wraps inner with the ledger.
func NewGate(inner Admitter, ledger *Ledger, cfg GateConfig) *Gate {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Gate{inner: inner, ledger: ledger, rates: cfg.Rates, timeout: cfg.Timeout, now: cfg.Now, log: cfg.Log, holds: map[uint64]Hold{}}
}

func (g *Gate) key(acc shotd.Account) (string, time.Time) {
	start, end := shotd.BillingPeriod(acc.CreatedAt, g.now())
	return LedgerKey(acc.ID, start), end
}

// Admit lets a request in when both the node and the cluster do. Jobs (async, bulk) pass the
// node's checks (rate, failures, features) here and give the node's places back at once: their
// quota is reserved in the ledger by Jobs.Submit, all of them or none, and each job's render
// claims a concurrency slot of the account's across the cluster when it starts.
func (g *Gate) Admit(req shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error) {
	if g.rates != nil {
		req.Peers = g.rates.Peers(req.Account.ID)
	}
	res, lim, err := g.inner.Admit(req)
	if err == nil && req.Kind == shotd.AdmitJobs {
		g.inner.ReleaseJobs(req.Account.ID, max(req.Jobs, 1))
	}
	if err != nil || !req.Kind.Ticketed() {
		return res, lim, err
	}
	key, end := g.key(req.Account)
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	var h Hold
	var st LedgerState
	if req.Kind == shotd.AdmitStoredHit {
		// A stored cache hit uploads a file: a concurrency slot across the cluster, no quota.
		h, st, err = g.ledger.ReserveSlot(ctx, key, req.Plan.Concurrency)
	} else {
		h, st, err = g.ledger.Reserve(ctx, key, req.Plan.MonthlyQuota, req.Plan.Concurrency, true)
	}
	lim = g.limits(lim, req.Plan, st)
	lim.QuotaReset = end
	var e *shotd.Error
	if errors.As(err, &e) && e.Code == shotd.CodeQuotaExceeded {
		// The single node's words: the same refusal whichever mode answers it.
		err = shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up until %s",
			req.Plan.MonthlyQuota, end.Format(time.RFC3339))
	}
	if err != nil {
		if _, serr := g.inner.Settle(req.Account.ID, res.Ticket, shotd.OutcomeReleased); serr != nil {
			g.log.Warn().Err(serr).Str("account", req.Account.ID).Msg("release of a render the cluster refused")
		}
		return nil, lim, err
	}
	g.mu.Lock()
	g.holds[res.Ticket] = h
	g.mu.Unlock()
	res.Limits = lim
	return res, lim, nil
}

// limits replaces the node's quota and concurrency figures with the cluster's.
func (g *Gate) limits(l shotd.LimitsSnapshot, plan shotd.Plan, st LedgerState) shotd.LimitsSnapshot {
	l.QuotaLimit = plan.MonthlyQuota
	l.QuotaRemaining = max(plan.MonthlyQuota-st.Billed-st.Reservations, 0)
	l.ConcurrencyLimit = plan.Concurrency
	l.ConcurrencyRemaining = max(plan.Concurrency-st.Slots, 0)
	return l
}

// Settle ends an admitted render in the ledger (billed on success), then in the node. A success
// that the ledger could not bill (its reservation lost past the quota, or no quorum until the
// deadline) returns the ledger's error as a NotBilled error, after the node's settle: the
// caller must not answer it as a success, or the account would get more than its quota.
func (g *Gate) Settle(accountID string, ticket uint64, o shotd.Outcome) (shotd.LimitsSnapshot, error) {
	g.mu.Lock()
	h, ok := g.holds[ticket]
	delete(g.holds, ticket)
	g.mu.Unlock()
	var lerr error
	var st LedgerState
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), 15*g.timeout)
		st, lerr = g.ledger.Settle(ctx, h, o == shotd.OutcomeSucceeded)
		cancel()
		if lerr != nil {
			g.log.Error().Err(lerr).Str("account", accountID).Msg("cluster ledger settle")
		}
	}
	no := o
	if lerr != nil && o == shotd.OutcomeSucceeded {
		// Not billed: the node must not count it either, or its own quota check would refuse
		// renders that the cluster's quota still has room for.
		no = shotd.OutcomeReleased
	}
	lim, err := g.inner.Settle(accountID, ticket, no)
	if g.rates != nil {
		lim = g.rates.Peers(accountID).Apply(lim, false)
	}
	if ok && lerr == nil {
		lim.QuotaRemaining = max(h.Quota-st.Billed-st.Reservations, 0)
		lim.ConcurrencyRemaining = max(lim.ConcurrencyLimit-st.Slots, 0)
	}
	if lerr != nil {
		if o == shotd.OutcomeSucceeded {
			return lim, NotBilledError{lerr}
		}
		return lim, lerr
	}
	return lim, err
}

// NotBilledError is what Settle returns for a success it could not bill. httpd asks for its
// NotBilled method (without importing this package) and answers the error instead of the file.
type NotBilledError struct{ Err error }

func (e NotBilledError) Error() string { return "not billed: " + e.Err.Error() }
func (e NotBilledError) Unwrap() error { return e.Err }

// NotBilled reports that the success was not billed.
func (e NotBilledError) NotBilled() bool { return true }

// ReleaseJobs does nothing: Admit gave the node's places of jobs back already, and their quota
// is reserved only once they are queued.
func (g *Gate) ReleaseJobs(string, int) {}

// Usage is the node's report with the cluster's billed count and reservations.
func (g *Gate) Usage(acc shotd.Account, plan shotd.Plan) (*shotd.UsageReport, error) {
	r, err := g.inner.Usage(acc, plan)
	if err != nil {
		return nil, err
	}
	key, _ := g.key(acc)
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	st, err := g.ledger.State(ctx, key)
	if err != nil {
		return nil, err
	}
	r.Quota.Limit = plan.MonthlyQuota
	r.Quota.Used = st.Billed
	r.Quota.Bonus = 0 // bonus screenshots are per node: not applied in cluster mode
	r.Quota.Remaining = max(plan.MonthlyQuota-st.Billed-st.Reservations, 0)
	return r, nil
}

// Outstanding counts the renders this gate admitted and has not settled.
func (g *Gate) Outstanding() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.holds)
}
