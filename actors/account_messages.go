package actors

import (
	"time"

	"github.com/shotd/shotd"
)

// AdmitKind says what a request wants from its account.
type AdmitKind int

// Kinds of admission.
const (
	AdmitRender AdmitKind = iota // a sync render: rate, quota reservation, a concurrency slot
	AdmitJobs                    // async or bulk: rate, quota reservations and queue places for Jobs jobs
	AdmitStatus                  // usage, jobs, batches, files: the status allowance only
	// AdmitCacheHit is a sync request served from the response cache: plan features and rate
	// only, since it renders nothing (no quota, no slot, no failure window). The hit is counted
	// at once; there is nothing to Settle.
	AdmitCacheHit
)

// Admit asks an account actor to let one request in. Account and Plan are the current records
// (the key cache is invalidated on every change, so they are fresh).
type Admit struct {
	Account  shotd.Account
	Plan     shotd.Plan
	Kind     AdmitKind
	Jobs     int      // AdmitJobs: how many jobs the request creates
	Features []string // plan features the request needs
	// Ticket names the render if it is admitted; Accounts.Admit sets it, so that it can release
	// an admission whose answer came too late. Zero: the actor picks one.
	Ticket uint64
	// Deadline is when the asker stops waiting (Accounts.Admit sets it): an Admit handled later
	// is refused, because nobody would use, settle or release what it granted.
	Deadline time.Time
}

// AdmitResult lets the request in. Settle an AdmitRender exactly once with its Ticket.
type AdmitResult struct {
	Ticket uint64
	Limits LimitsSnapshot
}

// Denied refuses the request; Err is a catalogue error (with RetryAfter for 429s).
type Denied struct {
	Err    *shotd.Error
	Limits LimitsSnapshot
}

// Outcome is how an admitted render ended.
type Outcome int

// Outcomes of Settle.
const (
	Succeeded Outcome = iota // bill one screenshot
	Failed                   // the render failed: release, count a failure
	CacheHit                 // served from the cache: release, count a hit
	Released                 // nothing was rendered and it was not the page's fault: release only
)

// Settle ends an admitted render: it bills or releases the reservation and frees the slot. The
// reply is a *SettleResult.
type Settle struct {
	AccountID string
	Ticket    uint64
	Outcome   Outcome
}

// SettleResult answers Settle with the limits after it.
type SettleResult struct {
	Limits LimitsSnapshot
}

// LimitsSnapshot is what the X-Quota-*, X-RateLimit-* and X-Concurrency-* headers say.
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

// GetUsage asks for the usage record of operator contract 5.5; the reply is a *UsageResult.
type GetUsage struct {
	Account shotd.Account
	Plan    shotd.Plan
}

// UsageResult is the body of GET /api/v1/usage.
type UsageResult struct {
	Quota struct {
		Limit     int       `json:"limit"`
		Used      int       `json:"used"`
		Remaining int       `json:"remaining"`
		Bonus     int       `json:"bonus"`
		Reset     time.Time `json:"reset"`
	} `json:"quota"`
	RequestsPerMinute       int `json:"requests_per_minute"`
	StatusRequestsPerMinute int `json:"status_requests_per_minute"`
	Concurrency             int `json:"concurrency"`
	QueueLimit              int `json:"queue_limit"`
	FailuresPerMinute       int `json:"failures_per_minute"`
	FailuresPerDay          int `json:"failures_per_day"`
	Renders                 struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		CacheHits int `json:"cache_hits"`
	} `json:"renders"`
	Jobs struct {
		Waiting int `json:"waiting"`
		Running int `json:"running"`
	} `json:"jobs"`
}

// AcquireJobSlot asks for a concurrency slot for a queued job; the reply (*JobSlotGranted) comes
// when a slot is free: jobs wait, they never fail with concurrency_limit.
type AcquireJobSlot struct {
	Account shotd.Account
	Plan    shotd.Plan
	JobID   string
}

// JobSlotGranted answers AcquireJobSlot. Settle the job with SettleJob.
type JobSlotGranted struct {
	JobID string
}

// SettleJob ends a job's render: bill or release its reservation, free its slot and queue place.
// Started tells whether it held a slot (a job cancelled before dispatch did not).
type SettleJob struct {
	AccountID string
	JobID     string
	Outcome   Outcome
	Started   bool
}

// RestoreJobs re-registers jobs found unfinished at start: they hold queue places and quota
// reservations again.
type RestoreJobs struct {
	Account shotd.Account
	Plan    shotd.Plan
	Count   int
}

// accountIdle is what an idle account actor tells the router, with the number of account
// messages it has handled: the router passivates it only when that is all it forwarded.
type accountIdle struct {
	id      string
	handled uint64
}

// idleCheck is what an account actor's idle timer sends it.
type idleCheck struct{}

// closeAccounts asks the router to stop every account actor; it answers *accountsClosed.
type closeAccounts struct{}

// accountsClosed answers closeAccounts once every account actor has stopped.
type accountsClosed struct{}

// usagePersisted carries the store's answer to a usage write back into the actor.
type usagePersisted struct {
	err        error
	bonusDebit int // 1 when the write billed a bonus screenshot
}
