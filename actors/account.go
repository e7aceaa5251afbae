package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// UsageStore keeps the billed usage of each period and the bonus balance on the account.
// store.Store implements it.
type UsageStore interface {
	Usage(acc shotd.Account, now time.Time) (shotd.Usage, error)
	RecordUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int) (shotd.Usage, shotd.Account, error)
	Account(id string) (shotd.Account, error)
}

// JobUsageStore is a UsageStore that writes a job's usage once, with the mark its end left
// (store.Store: RecordJobUsage); a UsageStore without it records a job's usage as any other's.
type JobUsageStore interface {
	RecordJobUsage(acc shotd.Account, now time.Time, d shotd.UsageDelta, quota int, jobID string) (shotd.Usage, shotd.Account, error)
}

// accountActor is the only place that decides admission for its account: rate, failures, quota
// reservations, concurrency slots and queue places. It keeps the counts in memory and writes
// billed usage to the store from goroutines, so its mailbox never waits on a disk write.
type accountActor struct {
	acc   shotd.Account
	plan  shotd.Plan
	store UsageStore
	now   func() time.Time
	log   zerolog.Logger
	idle  time.Duration
	tally Tally // nil on a single node

	loadErr       error
	periodStart   time.Time
	periodEnd     time.Time
	used          int // billed to the plan quota this period
	bonus         int // bonus balance: the stored one less the debits not yet reported written
	bonusDebits   int // successes billed to the bonus whose usage write has not reported back
	succeeded     int
	failed        int
	cacheHits     int
	pendingWrites int
	writes        sync.WaitGroup

	reserved    int // quota reservations outstanding
	inflight    int // slots held by sync renders, stored cache hits and running jobs
	uploads     int // stored cache hits under way: each may still fail, holding no reservation
	jobsWaiting int // queued jobs, holding a queue place
	jobsRunning int
	rate        window
	statusRate  window
	failures    window
	failuresDay window                     // over failureDaySpan: the plan's failures_per_day
	tickets     map[uint64]shotd.AdmitKind // admitted sync renders and stored hits not yet settled
	nextTicket  uint64
	slotWaiters []slotWaiter
	handled     uint64 // account messages handled: the router's passivation check
	lastActive  time.Time
	idleTimer   *time.Timer
}

type slotWaiter struct {
	jobID  string
	sender *actor.PID
}

func (a *accountActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *Admit, *Settle, *GetUsage, *AcquireJobSlot, *SettleJob, *RestoreJobs:
		a.handled++
		a.lastActive = time.Now()
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.load()
		a.lastActive = time.Now()
		a.armIdle(ctx, a.idle)
	case *idleCheck:
		a.idleCheck(ctx)
	case *actor.Stopping:
		if a.idleTimer != nil {
			a.idleTimer.Stop()
		}
		a.writes.Wait() // a billed success is never lost by passivation or shutdown
	case *Admit:
		a.refresh(m.Account, m.Plan)
		a.admit(ctx, m)
	case *Settle:
		a.rollPeriod()
		// An unknown ticket was settled already, or is the release of an Admit that was refused.
		if kind, ok := a.tickets[m.Ticket]; ok {
			delete(a.tickets, m.Ticket)
			a.inflight--
			if kind == shotd.AdmitStoredHit {
				a.uploads--
			} else {
				a.reserved--
			}
			a.settle(ctx, m.Outcome, "")
			a.grantSlots(ctx)
		}
		if ctx.Sender() != nil { // Accounts.Admit's release of a late admission waits for nothing
			ctx.Respond(&SettleResult{Limits: a.snapshot(false)})
		}
	case *GetUsage:
		a.refresh(m.Account, m.Plan)
		ctx.Respond(a.usage())
	case *AcquireJobSlot:
		a.refresh(m.Account, m.Plan)
		a.slotWaiters = append(a.slotWaiters, slotWaiter{jobID: m.JobID, sender: ctx.Sender()})
		a.grantSlots(ctx)
	case *SettleJob:
		a.rollPeriod()
		if m.Started {
			a.inflight--
			a.jobsRunning--
		} else {
			a.jobsWaiting--
			for i, w := range a.slotWaiters {
				if w.jobID == m.JobID {
					a.slotWaiters = append(a.slotWaiters[:i], a.slotWaiters[i+1:]...)
					break
				}
			}
		}
		a.reserved--
		a.settle(ctx, m.Outcome, m.JobID)
		a.grantSlots(ctx)
		if ctx.Sender() != nil {
			ctx.Respond(&SettleResult{Limits: a.snapshot(false)})
		}
	case *RestoreJobs:
		a.refresh(m.Account, m.Plan)
		a.jobsWaiting += m.Count
		a.reserved += m.Count
		if ctx.Sender() != nil {
			ctx.Respond(&SettleResult{Limits: a.snapshot(false)})
		}
	case *usagePersisted:
		a.pendingWrites--
		a.bonusDebits -= m.bonusDebit
		if m.err != nil {
			a.log.Error().Err(m.err).Str("account", a.acc.ID).Msg("usage write failed")
		}
	}
}

// armIdle schedules an idle check in d. It is a timer that sends a message, not protoactor's
// receive timeout, whose timer goroutine writes the actor context's fields while the mailbox
// goroutine reads them (a data race under -race).
func (a *accountActor) armIdle(ctx actor.Context, d time.Duration) {
	if a.idle <= 0 {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.idleTimer = time.AfterFunc(d, func() { root.Send(self, &idleCheck{}) })
}

// idleCheck reports the actor idle to the router when no account message came for the idle
// time and it holds nothing; otherwise it checks again later.
func (a *accountActor) idleCheck(ctx actor.Context) {
	if quiet := time.Since(a.lastActive); quiet < a.idle {
		a.armIdle(ctx, a.idle-quiet)
		return
	}
	// An actor that remembers failures of the last day stays: a passivated one would forget
	// them, and waiting out the idle time would reset the daily failure budget.
	if a.reserved == 0 && a.inflight == 0 && a.jobsWaiting == 0 && a.jobsRunning == 0 && a.pendingWrites == 0 &&
		a.failuresDay.count(a.now()) == 0 {
		// Request, not Send: the router checks that the report comes from its current actor.
		ctx.Request(ctx.Parent(), &accountIdle{id: a.acc.ID, handled: a.handled})
	}
	a.armIdle(ctx, a.idle) // the router may decline, or the actor was busy
}

// load reads this period's usage. A failure makes every admission answer service_unavailable
// rather than let requests through uncounted.
func (a *accountActor) load() {
	now := a.now()
	u, err := a.store.Usage(a.acc, now)
	if err != nil {
		a.loadErr = err
		return
	}
	stored, err := a.store.Account(a.acc.ID)
	if err != nil {
		a.loadErr = err
		return
	}
	a.periodStart, a.periodEnd = u.PeriodStart, u.PeriodEnd
	a.used, a.succeeded, a.failed, a.cacheHits = u.Used, u.Succeeded, u.Failed, u.CacheHits
	a.bonus = stored.BonusScreenshots
	a.tickets = map[uint64]shotd.AdmitKind{}
}

// refresh takes the current account and plan records. The bonus balance a request carries is
// only a hint: the record may have been read before this actor's last bonus debit was written
// (a stale record would give a spent bonus back) or after an operator's grant. When it differs
// from what the actor holds, the balance is read from the store, less the debits still being
// written. A debit written but not yet reported is subtracted twice until its report comes:
// that errs on refusing, never on billing past quota plus bonus.
func (a *accountActor) refresh(acc shotd.Account, plan shotd.Plan) {
	if acc.ID == a.acc.ID {
		if a.loadErr == nil && acc.BonusScreenshots != a.bonus {
			if stored, err := a.store.Account(acc.ID); err == nil {
				a.bonus = stored.BonusScreenshots - a.bonusDebits
			} else {
				a.log.Warn().Err(err).Str("account", acc.ID).Msg("bonus balance unreadable")
				a.bonus = min(a.bonus, acc.BonusScreenshots-a.bonusDebits)
			}
		}
		a.acc = acc
	}
	if plan.Name != "" {
		a.plan = plan
	}
	a.rollPeriod()
}

// rollPeriod starts a new billing period when the current one has ended.
func (a *accountActor) rollPeriod() {
	now := a.now()
	if a.loadErr != nil || now.Before(a.periodEnd) {
		return
	}
	a.periodStart, a.periodEnd = shotd.BillingPeriod(a.acc.CreatedAt, now)
	a.used, a.succeeded, a.failed, a.cacheHits = 0, 0, 0, 0
}

// capacity is how many more successes the account may have this period.
func (a *accountActor) capacity() int {
	return max(a.plan.MonthlyQuota-a.used, 0) + max(a.bonus, 0)
}

// admit applies the documented precedence: features, rate, failures, queue, quota, concurrency.
// A cache hit stops after rate; a stored hit (which uploads) skips queue and quota.
func (a *accountActor) admit(ctx actor.Context, m *Admit) {
	if a.loadErr != nil {
		ctx.Respond(&Denied{Err: shotd.Wrap(shotd.CodeServiceUnavailable, a.loadErr, "the limits of the account could not be read")})
		return
	}
	if !m.Deadline.IsZero() && time.Now().After(m.Deadline) {
		// The asker has answered service_unavailable already: grant nothing.
		ctx.Respond(&Denied{Err: shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered too late")})
		return
	}
	now := a.now()
	deny := func(err *shotd.Error) {
		ctx.Respond(&Denied{Err: err, Limits: m.Peers.Apply(a.snapshot(m.Kind == shotd.AdmitStatus), m.Kind == shotd.AdmitStatus)})
	}
	for _, f := range m.Features {
		if !a.plan.HasFeature(f) {
			deny(shotd.Errorf(shotd.CodeFeatureNotAvailable, "the %s plan does not include %s", a.plan.Name, f))
			return
		}
	}
	p := m.Peers // the other nodes' counts in cluster mode, added to this node's own
	if m.Kind == shotd.AdmitStatus {
		if a.statusRate.count(now)+p.StatusRequests >= a.plan.StatusRequestsPerMinute {
			deny(rateLimited(a.statusRate.retryAfterWith(now, p.StatusRequests, p.StatusReset)))
			return
		}
		a.count(&a.statusRate, shotd.WindowStatus, now)
		ctx.Respond(&shotd.AdmitResult{Limits: p.Apply(a.snapshot(true), true)})
		return
	}
	if a.rate.count(now)+p.Requests >= a.plan.RequestsPerMinute {
		deny(rateLimited(a.rate.retryAfterWith(now, p.Requests, p.RequestsReset)))
		return
	}
	if m.Kind == shotd.AdmitCacheHit {
		a.count(&a.rate, shotd.WindowRequests, now)
		a.settle(ctx, shotd.OutcomeCacheHit, "")
		ctx.Respond(&shotd.AdmitResult{Limits: p.Apply(a.snapshot(false), false)})
		return
	}
	if a.failures.count(now)+p.Failures >= a.plan.FailuresPerMinute {
		e := shotd.Errorf(shotd.CodeFailureLimit, "more than %d renders failed in the last minute", a.plan.FailuresPerMinute)
		e.RetryAfter = a.failures.retryAfterWith(now, p.Failures, p.FailuresReset)
		deny(e)
		return
	}
	n := 1
	if m.Kind == shotd.AdmitJobs {
		n = max(m.Jobs, 1)
	}
	// The queue first: its jobs also hold failures of the day's budget, and a full queue is
	// queue_limit, whatever the budget says.
	if m.Kind == shotd.AdmitJobs {
		if a.jobsWaiting+a.jobsRunning+n > a.plan.QueueLimit {
			e := shotd.Errorf(shotd.CodeQueueLimit, "%d jobs are waiting or rendering; the queue limit is %d", a.jobsWaiting+a.jobsRunning, a.plan.QueueLimit)
			e.RetryAfter = 5
			deny(e) // nothing counted: not the rate, not the quota
			return
		}
	}
	if e := a.failureBudget(now, n, p); e != nil {
		deny(e)
		return
	}
	a.count(&a.rate, shotd.WindowRequests, now)
	if m.Kind != shotd.AdmitStoredHit && a.reserved+n > a.capacity() {
		deny(shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up until %s", a.plan.MonthlyQuota, a.periodEnd.Format(time.RFC3339)))
		return
	}
	if m.Kind == shotd.AdmitJobs {
		a.reserved += n
		a.jobsWaiting += n
		ctx.Respond(&shotd.AdmitResult{Limits: p.Apply(a.snapshot(false), false)})
		return
	}
	if a.inflight >= a.plan.Concurrency {
		e := shotd.Errorf(shotd.CodeConcurrencyLimit, "%d renders are running; the plan allows %d at once", a.inflight, a.plan.Concurrency)
		e.RetryAfter = 1
		deny(e)
		return
	}
	ticket := m.Ticket
	if _, taken := a.tickets[ticket]; ticket == 0 || taken {
		a.nextTicket++
		ticket = a.nextTicket | 1<<63 // apart from the tickets Accounts.Admit picks
	}
	if m.Kind == shotd.AdmitStoredHit {
		a.uploads++
	} else {
		a.reserved++
	}
	a.inflight++
	a.tickets[ticket] = m.Kind
	ctx.Respond(&shotd.AdmitResult{Ticket: ticket, Limits: p.Apply(a.snapshot(false), false)})
}

// failureBudget refuses n more renders that would pass the plan's failures_per_day should they
// all fail. Like the quota, the budget is reserved at admission: every render admitted and not
// yet ended (sync, queued or running jobs; a.reserved), and each stored cache hit uploading
// (a.uploads), may still fail, so a bulk admitted just under the budget cannot pass it by its
// queue. In cluster mode the failures the other nodes reported (p) count too; their renders
// under way do not.
func (a *accountActor) failureBudget(now time.Time, n int, p shotd.PeerCounts) *shotd.Error {
	budget := a.plan.FailuresPerDay
	if budget <= 0 {
		return nil
	}
	failed := a.failuresDay.count(now) + p.FailuresDay
	pending := a.reserved + a.uploads
	if failed+pending+n <= budget {
		return nil
	}
	var e *shotd.Error
	switch {
	case failed >= budget:
		e = shotd.Errorf(shotd.CodeFailureLimit, "%d renders failed in the last 24 hours; the plan allows %d a day", failed, budget)
	case n > budget:
		e = shotd.Errorf(shotd.CodeFailureLimit, "%d renders at once could fail more than the %d failures a day the plan allows", n, budget)
	default:
		e = shotd.Errorf(shotd.CodeFailureLimit, "%d renders failed in the last 24 hours and %d are under way; the plan allows %d failures a day", failed, pending, budget)
	}
	e.RetryAfter = a.failuresDay.retryAfterWith(now, p.FailuresDay, p.FailuresDayReset)
	if failed+n <= budget {
		e.RetryAfter = 5 // room comes back as the renders under way end
	}
	return e
}

func rateLimited(retryAfter int) *shotd.Error {
	e := shotd.Errorf(shotd.CodeRateLimited, "too many requests in the last minute")
	e.RetryAfter = retryAfter
	return e
}

// count adds an event to window w (of kind k), and tells the tally in cluster mode.
func (a *accountActor) count(w *window, k shotd.Window, now time.Time) {
	w.add(now)
	if a.tally != nil {
		a.tally.Count(a.acc.ID, k, now)
	}
}

// settle bills or counts the outcome; the reservation was already released by the caller. A
// job's (jobID) usage is written once, with the mark its end left (store.RecordJobUsage).
func (a *accountActor) settle(ctx actor.Context, o shotd.Outcome, jobID string) {
	var d shotd.UsageDelta
	debit := 0
	switch o {
	case shotd.OutcomeSucceeded:
		d.Succeeded = 1
		a.succeeded++
		if a.used < a.plan.MonthlyQuota {
			a.used++
		} else if a.bonus > 0 {
			a.bonus--
			debit = 1
			a.bonusDebits++
		}
	case shotd.OutcomeFailed:
		d.Failed = 1
		a.failed++
		now := a.now()
		a.count(&a.failures, shotd.WindowFailures, now) // the tally keeps the day's too
		a.failuresDay.add(now)
	case shotd.OutcomeCacheHit:
		d.CacheHits = 1
		a.cacheHits++
	case shotd.OutcomeReleased:
		return
	}
	a.pendingWrites++
	a.writes.Add(1)
	acc, now, quota, self, root := a.acc, a.now(), a.plan.MonthlyQuota, ctx.Self(), ctx.ActorSystem().Root
	go func() {
		defer a.writes.Done()
		var err error
		if js, ok := a.store.(JobUsageStore); ok && jobID != "" {
			_, _, err = js.RecordJobUsage(acc, now, d, quota, jobID)
		} else {
			_, _, err = a.store.RecordUsage(acc, now, d, quota)
		}
		root.Send(self, &usagePersisted{err: err, bonusDebit: debit})
	}()
}

// grantSlots hands free concurrency slots to waiting jobs, oldest first.
func (a *accountActor) grantSlots(ctx actor.Context) {
	for len(a.slotWaiters) > 0 && a.inflight < a.plan.Concurrency {
		w := a.slotWaiters[0]
		a.slotWaiters = a.slotWaiters[1:]
		a.inflight++
		a.jobsWaiting--
		a.jobsRunning++
		ctx.Send(w.sender, &JobSlotGranted{JobID: w.jobID})
	}
}

func (a *accountActor) snapshot(status bool) shotd.LimitsSnapshot {
	now := a.now()
	s := shotd.LimitsSnapshot{
		QuotaLimit:           a.plan.MonthlyQuota,
		QuotaRemaining:       max(a.capacity()-a.reserved, 0),
		QuotaReset:           a.periodEnd,
		RateLimit:            a.plan.RequestsPerMinute,
		RateRemaining:        max(a.plan.RequestsPerMinute-a.rate.count(now), 0),
		RateReset:            a.rate.resetAt(now),
		ConcurrencyLimit:     a.plan.Concurrency,
		ConcurrencyRemaining: max(a.plan.Concurrency-a.inflight, 0),
	}
	if status {
		s.RateLimit = a.plan.StatusRequestsPerMinute
		s.RateRemaining = max(a.plan.StatusRequestsPerMinute-a.statusRate.count(now), 0)
		s.RateReset = a.statusRate.resetAt(now)
	}
	return s
}

func (a *accountActor) usage() *shotd.UsageReport {
	u := &shotd.UsageReport{}
	u.Quota.Limit = a.plan.MonthlyQuota
	u.Quota.Used = a.used
	u.Quota.Bonus = max(a.bonus, 0)
	u.Quota.Remaining = max(a.capacity()-a.reserved, 0)
	u.Quota.Reset = a.periodEnd
	u.PlanLimits = a.plan.PlanLimits
	u.Renders.Succeeded, u.Renders.Failed, u.Renders.CacheHits = a.succeeded, a.failed, a.cacheHits
	u.Jobs.Waiting, u.Jobs.Running = a.jobsWaiting, a.jobsRunning
	return u
}

// window is a sliding window of event times, one minute wide unless span says otherwise.
type window struct {
	times []time.Time
	span  time.Duration
}

const (
	windowSpan     = time.Minute
	failureDaySpan = 24 * time.Hour
)

func (w *window) width() time.Duration {
	if w.span > 0 {
		return w.span
	}
	return windowSpan
}

func (w *window) prune(now time.Time) {
	i := 0
	for i < len(w.times) && now.Sub(w.times[i]) >= w.width() {
		i++
	}
	if i > 0 {
		w.times = append(w.times[:0], w.times[i:]...)
	}
}

func (w *window) count(now time.Time) int {
	w.prune(now)
	return len(w.times)
}

func (w *window) add(now time.Time) { w.times = append(w.times, now) }

// resetAt is when the oldest event leaves the window (now when the window is empty).
func (w *window) resetAt(now time.Time) time.Time {
	w.prune(now)
	if len(w.times) == 0 {
		return now
	}
	return w.times[0].Add(w.width())
}

// retryAfterWith is the whole seconds until one more event fits, with peers more events counted
// elsewhere (other nodes'), the oldest of which leaves the window at peerReset: room comes when
// the first of either leaves.
func (w *window) retryAfterWith(now time.Time, peers int, peerReset time.Time) int {
	at := w.resetAt(now)
	if peers > 0 && !peerReset.IsZero() && (len(w.times) == 0 || peerReset.Before(at)) {
		at = peerReset
	}
	d := at.Sub(now)
	return max(int((d+time.Second-1)/time.Second), 1)
}
