package actors

import (
	"time"

	"github.com/shotd/shotd"
)

// Admit asks an account actor to let one request in; the reply is a *shotd.AdmitResult or a
// *Denied. Account and Plan are the current records (the key cache is invalidated on every
// change, so they are fresh).
type Admit struct {
	shotd.Admission
	// Ticket names the render if it is admitted; Accounts.Admit sets it, so that it can release
	// an admission whose answer came too late. Zero: the actor picks one.
	Ticket uint64
	// Deadline is when the asker stops waiting (Accounts.Admit sets it): an Admit handled later
	// is refused, because nobody would use, settle or release what it granted.
	Deadline time.Time
}

// Denied refuses the request; Err is a catalogue error (with RetryAfter for 429s).
type Denied struct {
	Err    *shotd.Error
	Limits shotd.LimitsSnapshot
}

// Settle ends an admitted render: it bills or releases the reservation and frees the slot. The
// reply is a *SettleResult.
type Settle struct {
	AccountID string
	Ticket    uint64
	Outcome   shotd.Outcome
}

// SettleResult answers Settle with the limits after it.
type SettleResult struct {
	Limits shotd.LimitsSnapshot
}

// GetUsage asks for the usage record of the account; the reply is a *shotd.UsageReport.
type GetUsage struct {
	Account shotd.Account
	Plan    shotd.Plan
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
	Outcome   shotd.Outcome
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
