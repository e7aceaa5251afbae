package shotd

import "time"

// AdmitKind says what a request wants from its account.
type AdmitKind int

// Kinds of admission.
const (
	AdmitRender AdmitKind = iota // a sync render: rate, quota reservation, a concurrency slot
	AdmitJobs                    // async or bulk: rate, quota reservations and queue places for Jobs jobs
	AdmitStatus                  // usage, jobs, batches, files: the status allowance only
	// AdmitCacheHit is a sync request served from the response cache: plan features and rate
	// only, since it renders nothing (no quota, no slot, no failure window). The hit is counted
	// at once; there is nothing to settle.
	AdmitCacheHit
	// AdmitStoredHit is a sync cache hit of a store=true request, which uploads the cached file:
	// plan features, rate, the failure window and a concurrency slot, since the upload holds the
	// file and a connection for up to a minute and may fail; no quota reservation, since it is
	// not billed. Settled with its Ticket: OutcomeCacheHit, or OutcomeOfHit of a failed upload.
	AdmitStoredHit
)

// Ticketed reports whether an admission of kind k holds a concurrency slot and is settled
// exactly once with its Ticket.
func (k AdmitKind) Ticketed() bool { return k == AdmitRender || k == AdmitStoredHit }

// Admission is a request asking its account to be let in. Account and Plan are the current
// records.
type Admission struct {
	Account  Account
	Plan     Plan
	Kind     AdmitKind
	Jobs     int      // AdmitJobs: how many jobs the request creates
	Features []string // plan features the request needs
	// Peers is what the other nodes of a cluster reported counting for the account
	// (cluster.Rates): the account actor adds it to its own counts. Zero on a single node.
	Peers PeerCounts
}

// Window names one of an account's counted windows: the per-minute rate, the status allowance,
// and the failures (per minute and per day alike).
type Window int

// Windows an account counts in.
const (
	WindowRequests Window = iota
	WindowStatus
	WindowFailures
)

// PeerCounts is what the other nodes of a cluster counted for an account, in the windows of its
// per-minute and per-day limits. Each reset is when the oldest of those events leaves its window
// (zero when there is none).
type PeerCounts struct {
	Requests, StatusRequests, Failures, FailuresDay             int
	RequestsReset, StatusReset, FailuresReset, FailuresDayReset time.Time
}

// Apply takes the peers' requests (status requests when status is set) off a snapshot that
// counts the node's own only: the account's remaining rate, and its reset when a peer's oldest
// request leaves the window first (or the node counted none).
func (p PeerCounts) Apply(l LimitsSnapshot, status bool) LimitsSnapshot {
	n, reset := p.Requests, p.RequestsReset
	if status {
		n, reset = p.StatusRequests, p.StatusReset
	}
	if n <= 0 || l.RateLimit <= 0 {
		return l
	}
	if !reset.IsZero() && (l.RateRemaining >= l.RateLimit || reset.Before(l.RateReset)) {
		l.RateReset = reset // the node's own window is empty, or a peer's request leaves first
	}
	l.RateRemaining = max(l.RateRemaining-n, 0)
	return l
}

// AdmitResult lets a request in. An AdmitRender or AdmitStoredHit is settled exactly once with its Ticket.
type AdmitResult struct {
	Ticket uint64
	Limits LimitsSnapshot
}

// LimitsSnapshot is an account's limits as they stand after an admission or a settlement: what
// the X-Quota-*, X-RateLimit-* and X-Concurrency-* headers say.
type LimitsSnapshot struct {
	QuotaLimit           int
	QuotaRemaining       int
	QuotaReset           time.Time
	RateLimit            int
	RateRemaining        int
	RateReset            time.Time
	ConcurrencyLimit     int
	ConcurrencyRemaining int
}

// Outcome is how an admitted render ended, which decides its billing and whether it counts
// against the account's failure window.
type Outcome int

// Outcomes of a render.
const (
	OutcomeSucceeded Outcome = iota // bill one screenshot
	OutcomeFailed                   // the render failed: release, count a failure
	OutcomeCacheHit                 // served from the cache: release, count a hit
	OutcomeReleased                 // nothing was rendered and it was not the page's fault: release only
)

// OutcomeOf classifies a render error: errors of the service itself (busy, unavailable, limits
// down) are released, not counted against the account.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OutcomeSucceeded
	}
	switch CodeOf(err) {
	case CodeRendererBusy, CodeRendererUnavailable, CodeServiceUnavailable:
		return OutcomeReleased
	}
	return OutcomeFailed
}

// OutcomeOfHit classifies how a cache hit's upload (store=true) ended: nil is a hit; the
// client's storage refusing it or out of reach (storage_failed, host_not_allowed) is the
// account's failure, as a fresh render's failed upload is; anything else (the cached file could
// not be read: internal_error) is the service's own trouble, released.
func OutcomeOfHit(err error) Outcome {
	if err == nil {
		return OutcomeCacheHit
	}
	switch CodeOf(err) {
	case CodeStorageFailed, CodeHostNotAllowed:
		return OutcomeFailed
	}
	return OutcomeReleased
}
