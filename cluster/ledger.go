package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/store"
)

// DefaultLease is how long a reservation lives unless its node renews it. A node renews its
// reservations every lease/3 while it renders, so only a dead (or cut off) node's reservations
// expire. Node clocks must agree to well within it (NTP).
const DefaultLease = 15 * time.Second

// ledgerRecord is an account's usage in one billing period, as the whole cluster sees it. It is
// only ever changed by compare-and-swap on its revision, so two nodes admitting for the same
// account at the same instant cannot both take the last unit of quota.
type ledgerRecord struct {
	V      int `json:"v"`
	Billed int `json:"billed"` // successes billed to the plan quota this period
	// Res are the live reservations: each holds one unit of quota until it is billed or dropped,
	// and a concurrency slot when Slot is set.
	Res map[string]reservation `json:"res,omitempty"`
	// Bills are the reservations billed, each with the Unix second until which it is kept: a
	// Settle tried again after a write whose answer was lost (it may have landed) finds its bill
	// here and does not bill again. A sync render's is kept for as long as its Settle call can
	// try (settleWindow, and the clocks' disagreement), maxBills of them at most (capBills); a
	// job's until its job has ended, as its next delivery bills it again while its record says
	// it is billing: its end forgets it (Ledger.End), else the sweeper (sweepReservations), or
	// JobRetention after.
	Bills map[string]int64 `json:"bills,omitempty"`
}

// settleWindow bounds the tries of one Settle call; billKept is how long a bill is kept for them,
// more by a lease, within which the nodes' clocks must agree.
const (
	settleWindow = 30 * time.Second
	billKept     = settleWindow + DefaultLease
)

// forgets reports whether the bill of reservation id, kept until the Unix second until, may be
// forgotten at now; a job's bill only JobRetention after, unless the sweeper finds its job ended.
func forgets(id string, until int64, now time.Time) bool {
	if strings.HasPrefix(id, jobHoldPrefix) {
		return now.After(time.Unix(until, 0).Add(store.JobRetention))
	}
	return now.After(time.Unix(until, 0))
}

type reservation struct {
	Node    string    `json:"node"`
	Slot    bool      `json:"slot,omitempty"`
	Expires time.Time `json:"exp"`
	// Undone: a job's whose request failed after its record was written, a record that could be
	// neither removed nor ended: the sweeper ends the job, never queues it.
	Undone bool `json:"undone,omitempty"`
	// Free: a concurrency slot only, no unit of quota (a stored cache hit); settled unbilled.
	Free bool `json:"free,omitempty"`
}

// live counts the reservations of quota not expired at now, and the slots among all of them.
func (r *ledgerRecord) live(now time.Time) (res, slots int) {
	for _, v := range r.Res {
		if now.Before(v.Expires) {
			if !v.Free {
				res++
			}
			if v.Slot {
				slots++
			}
		}
	}
	return res, slots
}

// prune drops expired reservations: their node died (or lost the cluster) before settling, so
// they are released unbilled. It reports what it dropped.
func (r *ledgerRecord) prune(now time.Time) (dropped []string) {
	for id, v := range r.Res {
		if !now.Before(v.Expires) {
			delete(r.Res, id)
			dropped = append(dropped, id)
		}
	}
	for id, until := range r.Bills {
		if forgets(id, until, now) {
			delete(r.Bills, id)
		}
	}
	return dropped
}

// Hold is a reservation this node holds: settle it exactly once with Ledger.Settle.
type Hold struct {
	Key   string // the ledger record
	ID    string // the reservation in it
	Quota int
	Free  bool // a slot without quota (ReserveSlot): never billed
}

// LedgerState is an account's ledger record as it stands: billed successes, live reservations
// and the concurrency slots among them.
type LedgerState struct {
	Billed       int
	Reservations int
	Slots        int
}

// Ledger is this node's handle on the quota ledger. Safe for concurrent use.
type Ledger struct {
	kv    jetstream.KeyValue
	node  string
	lease time.Duration
	now   func() time.Time
	log   zerolog.Logger

	seq  atomic.Uint64
	mu   sync.Mutex
	held map[string]map[string]time.Time // record key -> reservation ids this node holds -> since

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	conflicts atomic.Int64 // CAS retries, for tests and metrics
}

// LedgerConfig tunes a Ledger; zero values take the defaults.
type LedgerConfig struct {
	Lease time.Duration    // DefaultLease
	Now   func() time.Time // time.Now
	Log   zerolog.Logger
	// NoRenew leaves reservations unrenewed (tests of a node that died).
	NoRenew bool
}

// NewLedger starts renewing this node's reservations in kv (the ledger bucket).
func NewLedger(kv jetstream.KeyValue, node string, cfg LedgerConfig) *Ledger {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Ledger{kv: kv, node: node, lease: cfg.Lease, now: cfg.Now, log: cfg.Log, held: map[string]map[string]time.Time{}, stop: make(chan struct{})}
	if !cfg.NoRenew {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			every(l.stop, l.lease/3, l.renew)
		}()
	}
	return l
}

// LedgerKey names an account's record for the billing period that starts at periodStart.
func LedgerKey(accountID string, periodStart time.Time) string {
	return accountID + "." + strconv.FormatInt(periodStart.Unix(), 10)
}

// Reserve takes one unit of the account's quota, and a concurrency slot when slot is set,
// provided billed + live reservations < quota and (for a slot) live slots < concurrency. A
// refusal is a *shotd.Error: quota_exceeded or concurrency_limit; anything else (no quorum, a
// record of an unknown version) is service_unavailable, never an admission.
func (l *Ledger) Reserve(ctx context.Context, key string, quota, concurrency int, slot bool) (Hold, LedgerState, error) {
	return l.reserve(ctx, key, quota, concurrency, slot, false)
}

// ReserveSlot takes a concurrency slot of the account without a unit of quota: for a render
// that is not billed but runs (a store=true cache hit uploads its file). concurrency_limit when
// every slot is taken. Settle ends it, never billed.
func (l *Ledger) ReserveSlot(ctx context.Context, key string, concurrency int) (Hold, LedgerState, error) {
	return l.reserve(ctx, key, 0, concurrency, true, true)
}

func (l *Ledger) reserve(ctx context.Context, key string, quota, concurrency int, slot, free bool) (Hold, LedgerState, error) {
	id := l.node + "-" + strconv.FormatUint(l.seq.Add(1), 36) + "-" + randomHex(4)
	h := Hold{Key: key, ID: id, Quota: quota, Free: free}
	// Held from before the write: a renewal that runs while the write is in flight then keeps
	// it alive too.
	l.hold(h)
	st, err := l.update(ctx, key, func(r *ledgerRecord, now time.Time) error {
		if _, ok := r.Res[id]; ok {
			return errSettled // a try whose answer was lost had made it
		}
		res, slots := r.live(now)
		if !free && r.Billed+res >= quota {
			return shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up", quota)
		}
		if slot && slots >= concurrency {
			e := shotd.Errorf(shotd.CodeConcurrencyLimit, "%d renders are running; the plan allows %d at once", slots, concurrency)
			e.RetryAfter = 1
			return e
		}
		if r.Res == nil {
			r.Res = map[string]reservation{}
		}
		r.Res[id] = reservation{Node: l.node, Slot: slot, Free: free, Expires: now.Add(l.lease)}
		return nil
	})
	if err != nil {
		l.release(h)
		return Hold{}, st, err
	}
	return h, st, nil
}

// JobHoldID names the reservation of a job in its account's ledger record: whichever node runs
// the job settles that one reservation, so that a job is billed at most once.
func JobHoldID(jobID string) string { return jobHoldPrefix + jobID }

const jobHoldPrefix = "job-"

// JobLease is the lease of a queued job's reservation. Nobody renews it: the job's message is
// taken by some node whatever node dies, and that node claims the reservation (Claim, with the
// ordinary lease) or drops it at the job's end. A job queued longer than this takes its quota
// again when it starts, if there is room.
const JobLease = time.Hour

// ReserveJobs takes one unit of quota for each job of jobIDs, without concurrency slots, in one
// compare-and-swap: all of them or none. The account's jobs waiting or rendering, all nodes'
// (their reservations are in this record), stay within queueLimit (0: no plan's bound) and
// maxJobReservations (queue_limit), then the quota (quota_exceeded). Each holds for JobLease, or
// until a node that runs its job claims it (Claim); the node that queued them may die meanwhile.
func (l *Ledger) ReserveJobs(ctx context.Context, key string, quota, queueLimit int, jobIDs []string) ([]Hold, LedgerState, error) {
	hs := make([]Hold, len(jobIDs))
	for i, id := range jobIDs {
		hs[i] = Hold{Key: key, ID: JobHoldID(id), Quota: quota}
	}
	st, err := l.update(ctx, key, func(r *ledgerRecord, now time.Time) error {
		if _, ok := r.Res[hs[0].ID]; ok {
			return errSettled // a try whose answer was lost had made it
		}
		if err := queueRoom(r, now, len(hs), queueLimit); err != nil {
			return err
		}
		if res, _ := r.live(now); r.Billed+res+len(hs) > quota {
			return shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up", quota)
		}
		if r.Res == nil {
			r.Res = map[string]reservation{}
		}
		for _, h := range hs {
			r.Res[h.ID] = reservation{Node: l.node, Expires: now.Add(JobLease)}
		}
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	return hs, st, nil
}

// maxJobReservations bounds the jobs of an account waiting or rendering in the cluster whatever
// its plan's queue_limit: each holds a reservation of about 90 bytes in the account's ledger
// record, which must stay under JetStream's 1 MiB message.
const maxJobReservations = 5000

// queueRoom refuses n more jobs when the record's live job reservations, queued or rendering,
// would pass limit (0: none) or maxJobReservations.
func queueRoom(r *ledgerRecord, now time.Time, n, limit int) error {
	jobs := 0
	for id, v := range r.Res {
		if strings.HasPrefix(id, jobHoldPrefix) && now.Before(v.Expires) {
			jobs++
		}
	}
	switch {
	case limit > 0 && jobs+n > limit:
		e := shotd.Errorf(shotd.CodeQueueLimit, "%d jobs are waiting or rendering; the queue limit is %d", jobs, limit)
		e.RetryAfter = 5
		return e
	case jobs+n > maxJobReservations:
		e := shotd.Errorf(shotd.CodeQueueLimit, "%d jobs are waiting or rendering; the cluster keeps at most %d of an account", jobs, maxJobReservations)
		e.RetryAfter = 5
		return e
	}
	return nil
}

// undo drops the reservations drop and marks the reservations undone as of jobs whose request
// failed (the sweeper ends such a job rather than queue it), in one compare-and-swap.
func (l *Ledger) undo(ctx context.Context, key string, drop, undone []string) (LedgerState, error) {
	return l.update(ctx, key, func(r *ledgerRecord, now time.Time) error {
		changed := false
		for id, v := range r.Res {
			switch {
			case slices.Contains(drop, id):
				delete(r.Res, id)
				changed = true
			case slices.Contains(undone, id) && !v.Undone:
				v.Undone = true
				r.Res[id] = v
				changed = true
			}
		}
		if !changed {
			return errSettled
		}
		return nil
	})
}

// ErrBilled: Claim finds the job billed already (a node billed it and died before it recorded
// the job's success).
var ErrBilled = errors.New("cluster: the job is billed already")

// errClaimed: Claim finds the job's reservation held with a slot by another node whose lease
// runs: that node renders it. The message waits in the stream, as for a slot.
var errClaimed = errors.New("cluster: another node renders the job")

// Claim makes a job's reservation this node's and gives it a concurrency slot, for the job's
// render: when the reservation expired meanwhile (the node that held it died), a new one is
// taken if the quota still has room (else quota_exceeded); when every slot of the account is
// taken, concurrency_limit. ErrBilled when the reservation was billed already; errClaimed when
// another node holds it with a slot and a lease not expired (it renders the job: a node is
// taken for dead only once its lease ends, which the ack wait of the job's message outlasts).
//
// The reservation is this node's to renew only once claimed: renewed during a claim that fails,
// a queued job's reservation would lose its JobLease for the ordinary lease.
func (l *Ledger) Claim(ctx context.Context, h Hold, concurrency int) (LedgerState, error) {
	st, err := l.update(ctx, h.Key, func(r *ledgerRecord, now time.Time) error {
		if _, ok := r.Bills[h.ID]; ok {
			return ErrBilled
		}
		v, ok := r.Res[h.ID]
		if ok && v.Node == l.node && v.Slot {
			return errSettled // a try whose answer was lost had made it
		}
		if ok && v.Slot && now.Before(v.Expires) {
			// Another node renders the job and renews its lease: this is a second message of
			// the job, not a redelivery after a death (the ack wait exceeds the lease).
			return errClaimed
		}
		res, slots := r.live(now)
		if !ok && r.Billed+res >= h.Quota {
			return shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up", h.Quota)
		}
		if slots >= concurrency && !v.Slot {
			e := shotd.Errorf(shotd.CodeConcurrencyLimit, "%d renders are running; the plan allows %d at once", slots, concurrency)
			e.RetryAfter = 1
			return e
		}
		if r.Res == nil {
			r.Res = map[string]reservation{}
		}
		r.Res[h.ID] = reservation{Node: l.node, Slot: true, Expires: now.Add(l.lease)}
		return nil
	})
	if err == nil {
		l.hold(h)
	}
	return st, err
}

// Unclaim gives back a job's reservation that this node claimed for a render it did not make
// (or did not bill): to owner, the node that renders or bills the job now; dropped unbilled when
// owner is "" (the job ended, or is gone). A reservation that another node claimed since is left
// to it.
func (l *Ledger) Unclaim(ctx context.Context, h Hold, owner string) error {
	defer l.release(h)
	_, err := l.update(ctx, h.Key, func(r *ledgerRecord, now time.Time) error {
		v, ok := r.Res[h.ID]
		if !ok || v.Node != l.node {
			return errSettled
		}
		if owner == "" {
			delete(r.Res, h.ID)
		} else {
			v.Node = owner
			r.Res[h.ID] = v
		}
		return nil
	})
	return err
}

// Yield gives back a job's reservation that this node claimed for a render cut by its shutdown:
// queued again without a slot, for JobLease, so that the node that takes the job next claims it
// at once rather than once its lease ends.
func (l *Ledger) Yield(ctx context.Context, h Hold) error {
	defer l.release(h)
	_, err := l.update(ctx, h.Key, func(r *ledgerRecord, now time.Time) error {
		v, ok := r.Res[h.ID]
		if !ok || v.Node != l.node || !v.Slot {
			return errSettled
		}
		r.Res[h.ID] = reservation{Node: l.node, Expires: now.Add(JobLease)}
		return nil
	})
	return err
}

// errLost: a success to bill whose reservation expired (its node could not renew it) and that
// no longer fits in the quota. It is not billed.
var errLost = errors.New("cluster: the reservation expired before the render ended")

// Settle ends a reservation: with bill, the success is billed and the reservation dropped in one
// compare-and-swap; without, the reservation is dropped. A success whose reservation expired
// meanwhile is billed only if it still fits the quota; otherwise Settle returns an error
// (service_unavailable) and bills nothing, so that the quota holds whatever happened.
//
// Settle is idempotent: a retry after a write whose answer was lost finds the bill it made, as
// does a later call for a job whose end was not recorded (its bill is kept until it is). One
// call tries for settleWindow at most, the time its bill is sure to be kept.
func (l *Ledger) Settle(ctx context.Context, h Hold, bill bool) (LedgerState, error) {
	defer l.release(h)
	bill = bill && !h.Free
	start := l.now()
	ctx, cancel := context.WithTimeout(ctx, settleWindow)
	defer cancel()
	return l.update(ctx, h.Key, func(r *ledgerRecord, now time.Time) error {
		if _, ok := r.Bills[h.ID]; bill && ok {
			return errSettled
		}
		_, ok := r.Res[h.ID]
		delete(r.Res, h.ID)
		if !bill {
			return nil
		}
		if !ok && strings.HasPrefix(h.ID, jobHoldPrefix) {
			// Expired (its node was cut off), or the job ended and its bill was forgotten
			// (Ledger.End) while this call's write was in flight: the caller tells which.
			return errGone
		}
		if !ok {
			if res, _ := r.live(now); r.Billed+res >= h.Quota {
				return shotd.Wrap(shotd.CodeServiceUnavailable, errLost, "the quota reservation of this render was lost")
			}
		}
		r.Billed++
		if r.Bills == nil {
			r.Bills = map[string]int64{}
		}
		r.Bills[h.ID] = start.Add(billKept).Unix()
		r.capBills()
		return nil
	})
}

// errGone: Settle finds neither a job's reservation nor its bill.
var errGone = errors.New("cluster: the job's reservation is gone")

// maxBills bounds the bills a record keeps (about 35 bytes each in JSON: 70 KB, well under NATS's
// 1 MB payload, rewritten by every admission of the account). Past it the bills of sync renders
// that are kept the soonest are forgotten first: a retried Settle is then exact for 45 s or the
// account's last maxBills sync bills, whichever is fewer (45 s at 44 renders/s of one account).
const maxBills = 2000

// capBills forgets the oldest sync bills past maxBills. A job's bill is kept: it lives from its
// bill to its job's end (Ledger.End), a moment.
func (r *ledgerRecord) capBills() {
	over := len(r.Bills) - maxBills
	if over <= 0 {
		return
	}
	type bill struct {
		id    string
		until int64
	}
	sync := make([]bill, 0, len(r.Bills))
	for id, until := range r.Bills {
		if !strings.HasPrefix(id, jobHoldPrefix) {
			sync = append(sync, bill{id, until})
		}
	}
	slices.SortFunc(sync, func(a, b bill) int { return cmp.Or(cmp.Compare(a.until, b.until), strings.Compare(a.id, b.id)) })
	for _, b := range sync[:min(over, len(sync))] {
		delete(r.Bills, b.id)
	}
}

// End drops a job's reservation (unbilled, if it is still there) and forgets its bill, once the
// job's end is recorded: no delivery bills it any more, and a Settle of it still trying finds it
// gone (errGone) and reads the job's end. One compare-and-swap.
func (l *Ledger) End(ctx context.Context, h Hold) error {
	defer l.release(h)
	_, err := l.update(ctx, h.Key, func(r *ledgerRecord, now time.Time) error {
		_, res := r.Res[h.ID]
		_, bill := r.Bills[h.ID]
		if !res && !bill {
			return errSettled
		}
		delete(r.Res, h.ID)
		delete(r.Bills, h.ID)
		return nil
	})
	return err
}

// errSettled: fn finds its change made already; update answers success without a write.
var errSettled = errors.New("cluster: settled already")

// State reads the account's record (live reservations only).
func (l *Ledger) State(ctx context.Context, key string) (LedgerState, error) {
	r, _, err := l.get(ctx, key)
	if err != nil {
		return LedgerState{}, err
	}
	now := l.now()
	res, slots := r.live(now)
	return LedgerState{Billed: r.Billed, Reservations: res, Slots: slots}, nil
}

func (l *Ledger) get(ctx context.Context, key string) (ledgerRecord, uint64, error) {
	e, err := l.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ledgerRecord{V: recordVersion}, 0, nil
	}
	if err != nil {
		return ledgerRecord{}, 0, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the cluster's quota ledger could not be read")
	}
	var r ledgerRecord
	if err := decode(l.log, "ledger", key, e.Value(), &r); err != nil {
		return ledgerRecord{}, 0, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the cluster's quota ledger could not be read")
	}
	return r, e.Revision(), nil
}

// update applies fn to the record and writes it back if nobody wrote it meanwhile, retrying on a
// conflict. Expired reservations are dropped first. An error from fn is returned as it is, with
// nothing written.
func (l *Ledger) update(ctx context.Context, key string, fn func(r *ledgerRecord, now time.Time) error) (LedgerState, error) {
	for attempt := 0; ; attempt++ {
		// Each read and write has a second of its own: a request to a stream whose leader just
		// died gets no answer at all, and must not use up the whole call's deadline.
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		r, rev, err := l.get(actx, key)
		cancel()
		if err != nil {
			if errors.Is(err, ErrUnknownVersion) || !pause(ctx, attempt) {
				return LedgerState{}, err
			}
			continue // no leader for a moment (a node died): try again within ctx
		}
		now := l.now()
		if dropped := r.prune(now); len(dropped) > 0 {
			l.log.Info().Str("ledger", key).Strs("reservations", dropped).Msg("expired reservations released unbilled")
		}
		if err := fn(&r, now); err != nil {
			res, slots := r.live(now)
			if errors.Is(err, errSettled) {
				err = nil
			}
			return LedgerState{Billed: r.Billed, Reservations: res, Slots: slots}, err
		}
		r.V = recordVersion
		data, err := json.Marshal(r)
		if err != nil {
			return LedgerState{}, fmt.Errorf("cluster: ledger %s: %w", key, err)
		}
		actx, cancel = context.WithTimeout(ctx, attemptTimeout)
		if rev == 0 {
			_, err = l.kv.Create(actx, key, data)
		} else {
			_, err = l.kv.Update(actx, key, data, rev)
		}
		cancel()
		if err == nil {
			res, slots := r.live(now)
			return LedgerState{Billed: r.Billed, Reservations: res, Slots: slots}, nil
		}
		if conflict(err) {
			l.conflicts.Add(1)
		}
		// Someone wrote first, or the write's answer did not come (no leader for a moment; the
		// write may have landed, which the next read shows): read again. A short random pause
		// spreads the next tries of several writers of one hot record.
		if !pause(ctx, attempt) {
			return LedgerState{}, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the cluster's quota ledger could not be written")
		}
	}
}

// attemptTimeout bounds one read or write of the ledger.
const attemptTimeout = time.Second

// pause waits before the next try: up to 1 ms doubled per attempt, at most 32 ms for conflicts
// and up to 250 ms after several; false when ctx ends first.
func pause(ctx context.Context, attempt int) bool {
	d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 8)))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// conflict reports a compare-and-swap that lost: the revision moved, or the key was created.
func conflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (l *Ledger) hold(h Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.held[h.Key]
	if m == nil {
		m = map[string]time.Time{}
		l.held[h.Key] = m
	}
	m[h.ID] = l.now()
}

func (l *Ledger) release(h Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.held[h.Key]; m != nil {
		delete(m, h.ID)
		if len(m) == 0 {
			delete(l.held, h.Key)
		}
	}
}

// Held counts the reservations this node holds.
func (l *Ledger) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.held {
		n += len(m)
	}
	return n
}

// renew extends the lease of every reservation this node holds, one write per record.
func (l *Ledger) renew() {
	l.mu.Lock()
	keys := make(map[string]map[string]time.Time, len(l.held))
	for k, m := range l.held {
		keys[k] = maps.Clone(m)
	}
	l.mu.Unlock()
	var gone []string
	for key, ids := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), l.lease/3)
		_, err := l.update(ctx, key, func(r *ledgerRecord, now time.Time) error {
			gone = gone[:0]
			extended := false
			for id, since := range ids {
				v, ok := r.Res[id]
				switch {
				case ok && v.Node == l.node:
					// Never shortened: a job's reservation given back (Yield) while this
					// renewal ran holds JobLease.
					if e := now.Add(l.lease); e.After(v.Expires) {
						v.Expires = e
						r.Res[id] = v
						extended = true
					}
				case ok:
					gone = append(gone, id) // a job's, taken over by the node that runs it now
				case now.Sub(since) > l.lease:
					// Not there a lease after it was held: settled or dropped elsewhere. (A
					// younger one may be a Reserve's write in flight: kept.)
					gone = append(gone, id)
				}
			}
			if !extended {
				return errSettled // nothing to write
			}
			return nil
		})
		cancel()
		for _, id := range gone {
			l.release(Hold{Key: key, ID: id})
		}
		if err != nil {
			l.log.Warn().Err(err).Str("ledger", key).Msg("reservation leases not renewed")
		}
	}
}

// Close stops the renewals. Reservations still held expire on their own.
func (l *Ledger) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { close(l.stop) })
	if err := proc.WaitGroup(ctx, &l.wg); err != nil {
		return fmt.Errorf("cluster: close ledger: %w", err)
	}
	return nil
}
