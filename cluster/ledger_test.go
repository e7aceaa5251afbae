package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

func code(err error) shotd.Code {
	var e *shotd.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestLedgerTwoOwnersHoldTheQuota: two nodes admit for one account at once, each with its own
// Ledger on its own connection, every render billed; the successes are exactly the quota and
// the record ends with no reservation.
func TestLedgerTwoOwnersHoldTheQuota(t *testing.T) {
	nodes := startCluster(t, 3)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ledgers := []*Ledger{NewLedger(nodes[0].Ledger, "n1", LedgerConfig{Log: log}), NewLedger(nodes[1].Ledger, "n2", LedgerConfig{Log: log})}
	for _, l := range ledgers {
		t.Cleanup(func() { _ = l.Close(context.Background()) })
	}
	const quota, workers = 25, 6
	key := LedgerKey("acc_a", time.Unix(1_700_000_000, 0))
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 2 * workers {
		l := ledgers[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				h, _, err := l.Reserve(ctx, key, quota, 100, true)
				if code(err) == shotd.CodeQuotaExceeded {
					cancel()
					refused.Add(1)
					return
				}
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				if _, err := l.Settle(ctx, h, true); err != nil {
					t.Error(err)
				}
				cancel()
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != quota {
		t.Fatalf("%d successes, want exactly %d", ok.Load(), quota)
	}
	st, err := ledgers[1].State(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Billed != quota || st.Reservations != 0 || st.Slots != 0 {
		t.Fatalf("ledger %+v, want %d billed and no reservation", st, quota)
	}
	if ledgers[0].conflicts.Load()+ledgers[1].conflicts.Load() == 0 {
		t.Log("no compare-and-swap conflict happened: the owners did not race this time")
	}
}

// TestLedgerConcurrency: slots across two nodes never exceed the limit; a refused render
// answers concurrency_limit while the quota is far from used.
func TestLedgerConcurrency(t *testing.T) {
	nodes := startCluster(t, 3)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ledgers := []*Ledger{NewLedger(nodes[1].Ledger, "n2", LedgerConfig{Log: log}), NewLedger(nodes[2].Ledger, "n3", LedgerConfig{Log: log})}
	for _, l := range ledgers {
		t.Cleanup(func() { _ = l.Close(context.Background()) })
	}
	const limit = 2
	key := LedgerKey("acc_c", time.Unix(1_700_000_000, 0))
	var running, peak, busy, done atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		l := ledgers[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < 30 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				h, _, err := l.Reserve(ctx, key, 1000, limit, true)
				if code(err) == shotd.CodeConcurrencyLimit {
					cancel()
					busy.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(5 * time.Millisecond) // the "render"
				running.Add(-1)
				if _, err := l.Settle(ctx, h, true); err != nil {
					t.Error(err)
				}
				cancel()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Fatalf("%d renders held slots at once, limit %d", peak.Load(), limit)
	}
	if busy.Load() == 0 {
		t.Fatal("no admission was refused with concurrency_limit: the limit was never reached")
	}
	st, err := ledgers[0].State(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Billed != int(done.Load()) || st.Reservations != 0 {
		t.Fatalf("ledger %+v, want %d billed and no reservation", st, done.Load())
	}
}

// TestLedgerDeadNodeLease: a reservation whose node stopped renewing it is released unbilled
// once its lease ends; the dead node's late success is then not billed beyond the quota.
func TestLedgerDeadNodeLease(t *testing.T) {
	nodes := startCluster(t, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	var mu sync.Mutex
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	dead := NewLedger(nodes[0].Ledger, "dead", LedgerConfig{Log: log, Now: now, NoRenew: true, Lease: time.Minute})
	alive := NewLedger(nodes[0].Ledger, "alive", LedgerConfig{Log: log, Now: now, Lease: time.Minute})
	t.Cleanup(func() { _ = alive.Close(context.Background()); _ = dead.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_d", clock)

	h, _, err := dead.Reserve(ctx, key, 1, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := alive.Reserve(ctx, key, 1, 1, true); code(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("got %v, want quota_exceeded while the reservation lives", err)
	}
	advance(59 * time.Second)
	if _, _, err := alive.Reserve(ctx, key, 1, 1, true); code(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("got %v, want quota_exceeded before the lease ends", err)
	}
	advance(2 * time.Second)
	h2, _, err := alive.Reserve(ctx, key, 1, 1, true)
	if err != nil {
		t.Fatalf("the expired reservation still holds the quota: %v", err)
	}
	if _, err := alive.Settle(ctx, h2, true); err != nil {
		t.Fatal(err)
	}
	// The dead node comes back with a success: the quota is used, so it is not billed.
	if _, err := dead.Settle(ctx, h, true); code(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("got %v, want service_unavailable for a lost reservation past the quota", err)
	}
	st, err := alive.State(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Billed != 1 || st.Reservations != 0 {
		t.Fatalf("ledger %+v, want 1 billed, no reservation", st)
	}
}

// TestLedgerRenewal: a living node's reservation outlives many leases.
func TestLedgerRenewal(t *testing.T) {
	nodes := startCluster(t, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	// Leases long enough that a renewal slowed by a loaded disk (each KV call may take up to its
	// 1 s timeout) still lands before the lease ends: a 300 ms lease failed so on a busy machine.
	// 6 s: renewals bounded to a third of it, two of them failing in a row must not let it lapse.
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{Log: log, Lease: 6 * time.Second})
	other := NewLedger(nodes[0].Ledger, "n2", LedgerConfig{Log: log, NoRenew: true})
	t.Cleanup(func() { _ = l.Close(context.Background()); _ = other.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_r", time.Unix(1_700_000_000, 0))
	h, _, err := l.Reserve(ctx, key, 1, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(18 * time.Second) // three leases
	if _, _, err := other.Reserve(ctx, key, 1, 1, true); code(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("got %v, want quota_exceeded: the renewed reservation must hold", err)
	}
	if _, err := l.Settle(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if l.Held() != 0 {
		t.Fatalf("%d reservations still held after settle", l.Held())
	}
	st, err := l.State(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if st.Billed != 0 || st.Reservations != 0 {
		t.Fatalf("ledger %+v, want nothing billed or held after a release", st)
	}
}

// TestLedgerUnknownVersion: a record written by a newer node is refused with
// service_unavailable, not misread and not a panic.
func TestLedgerUnknownVersion(t *testing.T) {
	nodes := startCluster(t, 1)
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{Log: zerolog.New(zerolog.NewTestWriter(t))})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_v", time.Unix(1_700_000_000, 0))
	if _, err := nodes[0].Ledger.Put(ctx, key, []byte(`{"v":99,"billed":"lots"}`)); err != nil {
		t.Fatal(err)
	}
	_, _, err := l.Reserve(ctx, key, 10, 10, true)
	if code(err) != shotd.CodeServiceUnavailable || !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("got %v, want service_unavailable wrapping ErrUnknownVersion", err)
	}
	if l.Held() != 0 {
		t.Fatal("a refused reservation is still held")
	}
}

// TestLedgerSettleIdempotent: a Settle tried again (its first answer lost) bills once.
func TestLedgerSettleIdempotent(t *testing.T) {
	nodes := startCluster(t, 1)
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_i", time.Unix(1_700_000_000, 0))
	h, _, err := l.Reserve(ctx, key, 5, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		st, err := l.Settle(ctx, h, true)
		if err != nil {
			t.Fatal(err)
		}
		if st.Billed != 1 || st.Reservations != 0 {
			t.Fatalf("ledger %+v, want 1 billed once", st)
		}
	}
}

// TestLedgerFailedClaimKeepsJobLease: a renewal that runs while a claim of a queued job's
// reservation is refused (no slot) leaves the reservation's JobLease as it is: the reservation
// is not this node's to renew until claimed.
func TestLedgerFailedClaimKeepsJobLease(t *testing.T) {
	nodes := startCluster(t, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	var l *Ledger
	var renewing atomic.Bool // set: the claim's next reading of the clock renews first
	l = NewLedger(nodes[0].Ledger, "n1", LedgerConfig{Log: log, NoRenew: true, Now: func() time.Time {
		if renewing.CompareAndSwap(true, false) {
			l.renew()
		}
		return time.Now()
	}})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_claim", time.Unix(1_700_000_000, 0))
	hs, _, err := l.ReserveJobs(ctx, key, 5, 0, []string{"job_a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Reserve(ctx, key, 5, 1, true); err != nil { // the account's one slot
		t.Fatal(err)
	}
	renewing.Store(true)
	if _, err := l.Claim(ctx, hs[0], 1); code(err) != shotd.CodeConcurrencyLimit {
		t.Fatalf("claim without a free slot: %v, want concurrency_limit", err)
	}
	if renewing.Load() {
		t.Fatal("no renewal ran during the claim")
	}
	r, _, err := l.get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if exp := r.Res[hs[0].ID].Expires; exp.Before(time.Now().Add(JobLease / 2)) {
		t.Fatalf("queued job's reservation expires at %s, in %s; want its JobLease of %s", exp, time.Until(exp), JobLease)
	}
}

// TestRenewKeepsYieldedLease: a renewal that read its holds before a Yield wrote must not cut
// the job's reservation given back (JobLease, for the node that takes the job next) to one lease.
func TestRenewKeepsYieldedLease(t *testing.T) {
	nodes := startCluster(t, 1)
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{NoRenew: true, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_yield", time.Unix(1_700_000_000, 0))
	hs, _, err := l.ReserveJobs(ctx, key, 5, 0, []string{"job_y"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, hs[0], 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Yield(ctx, hs[0]); err != nil {
		t.Fatal(err)
	}
	l.hold(hs[0]) // as in the holds a renewal read just before the Yield
	l.renew()
	r, _, err := l.get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if exp := r.Res[hs[0].ID].Expires; exp.Before(time.Now().Add(JobLease / 2)) {
		t.Fatalf("the yielded reservation expires in %s; want its JobLease of %s", time.Until(exp), JobLease)
	}
}

// TestRenewForgetsGoneHolds: a hold whose reservation is not in the record a lease after it was
// taken (settled or dropped by another node) is no longer renewed; a younger one may be a
// Reserve's write in flight and is kept.
func TestRenewForgetsGoneHolds(t *testing.T) {
	nodes := startCluster(t, 1)
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	move := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{NoRenew: true, Now: now, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_gone", time.Unix(1_700_000_000, 0))
	if _, _, err := l.Reserve(ctx, key, 5, 5, true); err != nil {
		t.Fatal(err)
	}
	l.hold(Hold{Key: key, ID: "n1-gone"})
	move(DefaultLease * 2 / 3)
	l.renew()
	if l.Held() != 2 {
		t.Fatalf("%d held after a renewal within a lease, want 2", l.Held())
	}
	move(DefaultLease / 2)
	l.renew()
	if l.Held() != 1 {
		t.Fatalf("%d held a lease after the missing one was taken, want the live one alone", l.Held())
	}
	if st, err := l.State(ctx, key); err != nil || st.Reservations != 1 {
		t.Fatalf("state %+v %v: the live reservation was not renewed", st, err)
	}
}

// TestReserveJobsQueueLimit: the account's jobs waiting or rendering, whichever node queued
// them, stay within the plan's queue_limit, and within maxJobReservations whatever the plan (the
// record must fit in a message); a job that ends gives its place back.
func TestReserveJobsQueueLimit(t *testing.T) {
	nodes := startCluster(t, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	a := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{NoRenew: true, Log: log})
	b := NewLedger(nodes[0].Ledger, "n2", LedgerConfig{NoRenew: true, Log: log})
	t.Cleanup(func() { _ = a.Close(context.Background()); _ = b.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_queue", time.Unix(1_700_000_000, 0))
	hs, _, err := a.ReserveJobs(ctx, key, 100, 3, []string{"job_1", "job_2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, hs[0], 5); err != nil { // rendering on another node: still counts
		t.Fatal(err)
	}
	_, _, err = b.ReserveJobs(ctx, key, 100, 3, []string{"job_3", "job_4"})
	if code(err) != shotd.CodeQueueLimit || shotd.AsError(err).RetryAfter != 5 {
		t.Fatalf("past the queue limit across nodes: %v, want queue_limit", err)
	}
	if err := b.End(ctx, hs[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.ReserveJobs(ctx, key, 100, 3, []string{"job_3", "job_4"}); err != nil {
		t.Fatalf("after a job ended: %v", err)
	}

	big := LedgerKey("acc_big", time.Unix(1_700_000_000, 0))
	ids := make([]string, maxJobReservations)
	for i := range ids {
		ids[i] = fmt.Sprintf("job_%d", i)
	}
	if _, _, err := a.ReserveJobs(ctx, big, 1_000_000, 0, ids); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReserveJobs(ctx, big, 1_000_000, 0, []string{"job_more"}); code(err) != shotd.CodeQueueLimit {
		t.Fatalf("past %d jobs: %v, want queue_limit", maxJobReservations, err)
	}
}

// TestLedgerBillsCapped: past maxBills, a record forgets the sync bills kept the soonest first,
// and keeps every job's bill.
func TestLedgerBillsCapped(t *testing.T) {
	r := ledgerRecord{Bills: map[string]int64{}}
	for i := range maxBills + 10 {
		r.Bills[fmt.Sprintf("n1-%d", i)] = int64(1000 + i)
	}
	r.Bills[JobHoldID("job_old")] = 1
	r.capBills()
	if len(r.Bills) != maxBills {
		t.Fatalf("%d bills kept, want %d", len(r.Bills), maxBills)
	}
	if _, ok := r.Bills[JobHoldID("job_old")]; !ok {
		t.Fatal("a job's bill was forgotten")
	}
	for i := range 11 {
		if _, ok := r.Bills[fmt.Sprintf("n1-%d", i)]; ok {
			t.Fatalf("bill n1-%d kept, one of the oldest", i)
		}
	}
}

// TestLedgerEndForgetsJobBill: a job's end forgets its bill; a Settle of it still trying then
// (another delivery's, its first write's answer lost) finds it gone and bills no second time.
func TestLedgerEndForgetsJobBill(t *testing.T) {
	nodes := startCluster(t, 1)
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_end", time.Unix(1_700_000_000, 0))
	hs, _, err := l.ReserveJobs(ctx, key, 10, 0, []string{"job_end"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Settle(ctx, hs[0], true); err != nil {
		t.Fatal(err)
	}
	if err := l.End(ctx, hs[0]); err != nil {
		t.Fatal(err)
	}
	r, _, err := l.get(ctx, key)
	if err != nil || len(r.Bills) != 0 || len(r.Res) != 0 {
		t.Fatalf("record %+v %v after the job's end; want no bill, no reservation", r, err)
	}
	st, err := l.Settle(ctx, hs[0], true)
	if !errors.Is(err, errGone) || st.Billed != 1 {
		t.Fatalf("a late Settle: %+v %v; want errGone, 1 billed", st, err)
	}
}
