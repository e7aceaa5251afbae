package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// faultKV is a bucket whose writes can lose their answer (the write lands, an error comes back,
// as when the stream's leader dies after committing it) and that can be unreachable for a while
// (no leader). The rest is the real bucket.
type faultKV struct {
	jetstream.KeyValue
	mu sync.Mutex
	// lose picks the writes whose answer is lost: after each, the bucket is down for downFor.
	lose    func(key string) bool
	downFor time.Duration
	down    time.Time // unreachable until then
	// refuse picks the writes that fail without landing, for good; refuseDelete the deletes.
	refuse       func(key string) bool
	refuseDelete func(key string) bool
}

func (f *faultKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	if f.refuseDelete != nil && f.refuseDelete(key) {
		return errNoAnswer
	}
	return f.KeyValue.Delete(ctx, key, opts...)
}

var errNoAnswer = errors.New("test: no answer (the leader died)")

func (f *faultKV) unreachable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.down)
}

// write runs w unless the bucket is down or refuses key, and loses its answer when picked.
func (f *faultKV) write(key string, w func() (uint64, error)) (uint64, error) {
	if f.unreachable() || (f.refuse != nil && f.refuse(key)) {
		return 0, errNoAnswer
	}
	rev, err := w()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.lose != nil && f.lose(key) {
		f.down = time.Now().Add(f.downFor)
		return 0, errNoAnswer
	}
	return rev, err
}

func (f *faultKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if f.unreachable() {
		return nil, errNoAnswer
	}
	return f.KeyValue.Get(ctx, key)
}

func (f *faultKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return f.write(key, func() (uint64, error) { return f.KeyValue.Create(ctx, key, value, opts...) })
}

func (f *faultKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	return f.write(key, func() (uint64, error) { return f.KeyValue.Update(ctx, key, value, rev) })
}

// once picks the first write of each key that match accepts.
func once(match func(key string) bool) func(string) bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(key string) bool {
		mu.Lock()
		defer mu.Unlock()
		if !match(key) || seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
}

func ledgerState(t *testing.T, n *Node, acc shotd.Account) LedgerState {
	t.Helper()
	l := NewLedger(n.Ledger, "reader", LedgerConfig{NoRenew: true})
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	st, err := l.State(context.Background(), LedgerKey(acc.ID, start))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSubmitReservationAnswerLost: the write of a Submit's reservations lands but its answer is
// lost and the ledger stays unreachable past the Submit's timeout (its leader was killed): the
// Submit fails (service_unavailable) and its reservations are dropped, not left for JobLease.
func TestSubmitReservationAnswerLost(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_lost", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	fkv := &faultKV{KeyValue: nodes[0].Ledger, downFor: 1500 * time.Millisecond,
		lose: once(func(key string) bool { return strings.HasPrefix(key, acc.ID+".") })}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	l := NewLedger(fkv, nodes[0].NodeName(), LedgerConfig{Log: log})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, func(c *JobsConfig) { c.Ledger = l })
	_, _, err := jn.jobs.Submit(jobRequest(acc, plan, 2, true), time.Second)
	checkFailedSubmit(t, err, nodes[0], acc)
}

// checkFailedSubmit checks that a Submit failed with service_unavailable and left no reservation.
func checkFailedSubmit(t *testing.T, err error, n *Node, acc shotd.Account) {
	t.Helper()
	if shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("Submit: %v, want service_unavailable", err)
	}
	if st := ledgerState(t, n, acc); st.Reservations != 0 {
		t.Fatalf("ledger %+v after a failed Submit: a reservation is left", st)
	}
}

// TestSubmitUndoesItsRecords: a Submit that cannot write one job's record fails, and leaves
// neither the records it wrote (they would stay queued for ever, never run) nor reservations.
func TestSubmitUndoesItsRecords(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_undo", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var refused string
	var mu sync.Mutex
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, func(c *JobsConfig) {
		c.wrapKV = func(kv jetstream.KeyValue) jetstream.KeyValue {
			return &faultKV{KeyValue: kv, refuse: func(key string) bool {
				mu.Lock()
				defer mu.Unlock()
				if refused == "" && strings.HasPrefix(key, "j.") {
					refused = key // the first job record written is refused, the others land
				}
				return key == refused
			}}
		}
	})
	_, _, err := jn.jobs.Submit(jobRequest(acc, plan, 3, true), time.Second)
	checkFailedSubmit(t, err, nodes[0], acc)
	jobs, batches, err := jn.jobs.accountRecords(context.Background(), acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 || len(batches) != 0 {
		t.Fatalf("%d job records and %d batches left by a failed Submit", len(jobs), len(batches))
	}
}

// TestSubmitRecordAnswerLost: a job record's write lands with its answer lost; the Submit tries
// again, finds its record and queues the job, which ends succeeded and billed.
func TestSubmitRecordAnswerLost(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_rec", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, func(c *JobsConfig) {
		c.wrapKV = func(kv jetstream.KeyValue) jetstream.KeyValue {
			return &faultKV{KeyValue: kv, downFor: 200 * time.Millisecond, lose: once(func(key string) bool { return strings.HasPrefix(key, "j.") })}
		}
	})
	jobs, _, err := jn.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if job := waitJob(t, jn.jobs, acc.ID, jobs[0].JobID, 30*time.Second); job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s", job.Status, job.ErrorMessage)
	}
	checkBilled(t, jn.ledger, acc, 1)
}

// TestJobUpdatesAnswerLost: every write of a job's record lands with its answer lost. Each
// change is applied once all the same: the job starts once (a start read back as another
// delivery's kept its claim and left the job to a later delivery, which started it again), and
// its webhook's attempts count once each.
func TestJobUpdatesAnswerLost(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_lostupd", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	s := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, s, func(c *JobsConfig) {
		c.wrapKV = func(kv jetstream.KeyValue) jetstream.KeyValue {
			return &faultKV{KeyValue: kv, downFor: 50 * time.Millisecond, lose: func(key string) bool { return strings.HasPrefix(key, "j.") }}
		}
	})
	req := jobRequest(acc, plan, 1, false)
	req.Options[0].WebhookURL = "http://127.0.0.1:1/job"
	jobs, _, err := jn.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	id := jobs[0].JobID
	if job := waitJob(t, jn.jobs, acc.ID, id, 30*time.Second); job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s", job.Status, job.ErrorMessage)
	}
	var r jobRecord
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// Read through the faulty bucket too: down for a moment after each write.
		r, _, err = jn.jobs.getJob(context.Background(), id)
		if w := r.Job.Webhook; err == nil && w != nil && w.Status == shotd.WebhookDelivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook %+v (%v), not delivered", r.Job.Webhook, err)
		}
	}
	// The sender refuses the first attempt and takes the second.
	if r.Starts != 1 || r.Job.Webhook.Attempts != 2 {
		t.Fatalf("job started %d times, webhook attempts %d; want 1 and 2", r.Starts, r.Job.Webhook.Attempts)
	}
	checkBilled(t, jn.ledger, acc, 1)
}

// TestSweepReservations: the sweep drops the reservations of jobs that ended and of jobs without
// a record past the grace, and leaves those of queued jobs, of a Submit under way and of sync
// renders.
func TestSweepReservations(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	earlier := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log, Now: func() time.Time { return time.Now().Add(-2 * reservationGrace) }})
	now := NewLedger(n.Ledger, "n1", LedgerConfig{Log: log})
	t.Cleanup(func() { _ = now.Close(ctx) })
	acc := shotd.Account{ID: "acc_sweep", CreatedAt: time.Now()}
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	key := LedgerKey(acc.ID, start)
	record := func(h Hold, status string) {
		t.Helper()
		r := jobRecord{Job: shotd.Job{JobID: strings.TrimPrefix(h.ID, "job-"), AccountID: acc.ID, Status: status, UpdatedAt: time.Now()}, Hold: h}
		data, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Jobs.Create(ctx, jobKey(r.Job.JobID), data); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(l *Ledger, id string) Hold {
		t.Helper()
		hs, _, err := l.ReserveJobs(ctx, key, 10, 0, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		return hs[0]
	}
	reserve(earlier, "job_gone")                            // its Submit failed and could not undo
	reserve(now, "job_submitting")                          // its record is being written
	record(reserve(earlier, "job_queued"), shotd.JobQueued) // waits for a slot
	record(reserve(now, "job_failed"), shotd.JobFailed)     // its end could not drop it
	record(reserve(earlier, "job_ok"), shotd.JobSucceeded)  // the same, billed elsewhere
	claimed := reserve(now, "job_claimed")                  // rendering on n1
	record(claimed, shotd.JobRendering)
	if _, err := now.Claim(ctx, claimed, 5); err != nil {
		t.Fatal(err)
	}
	if _, _, err := now.Reserve(ctx, key, 10, 5, true); err != nil { // a sync render
		t.Fatal(err)
	}
	// Two jobs billed a while ago: one whose end is recorded, one whose end is not yet (its
	// next delivery bills it again, and must find its bill).
	for _, id := range []string{"job_billed", "job_billing"} {
		h := reserve(earlier, id)
		if _, err := earlier.Settle(ctx, h, true); err != nil {
			t.Fatal(err)
		}
		status := shotd.JobSucceeded
		if id == "job_billing" {
			status = shotd.JobRendering
		}
		record(h, status)
	}
	sweeper := NewLedger(n.Ledger, "n2", LedgerConfig{NoRenew: true, Log: log})
	dropped, err := sweepReservations(ctx, n.js, sweeper, n.Jobs)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := sweeper.get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for id := range r.Res {
		left = append(left, id)
	}
	slices.Sort(left)
	if dropped != 3 || len(left) != 4 || !slices.Contains(left, "job-job_submitting") || !slices.Contains(left, "job-job_queued") ||
		!slices.Contains(left, "job-job_claimed") {
		t.Fatalf("dropped %d, left %v; want the reservations of job_gone, job_failed and job_ok dropped", dropped, left)
	}
	if _, ok := r.Bills["job-job_billed"]; ok || len(r.Bills) != 1 {
		t.Fatalf("bills kept %v; want only job_billing's", r.Bills)
	}
}

// TestLedgerSettleRetriedAfterManyBills: a job's bill whose answer was lost is tried again (the
// job's next delivery) after more bills of the account than any fixed count of remembered ids:
// it is not billed twice. The same holds for a sync render's bill tried again within its call.
func TestLedgerSettleRetriedAfterManyBills(t *testing.T) {
	nodes := startCluster(t, 1)
	l := NewLedger(nodes[0].Ledger, "n1", LedgerConfig{})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	ctx := context.Background()
	key := LedgerKey("acc_many", time.Unix(1_700_000_000, 0))
	hs, _, err := l.ReserveJobs(ctx, key, 1000, 0, []string{"job_late"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, hs[0], 10); err != nil {
		t.Fatal(err)
	}
	sync, _, err := l.Reserve(ctx, key, 1000, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []Hold{hs[0], sync} {
		if _, err := l.Settle(ctx, h, true); err != nil {
			t.Fatal(err)
		}
	}
	const others = 100
	for range others {
		h, _, err := l.Reserve(ctx, key, 1000, 10, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Settle(ctx, h, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []Hold{hs[0], sync} {
		st, err := l.Settle(ctx, h, true) // the retry
		if err != nil {
			t.Fatal(err)
		}
		if st.Billed != others+2 {
			t.Fatalf("%s: %d billed after %d bills and a retry: billed twice", h.ID, st.Billed, others+2)
		}
	}
}

// TestAfterEndQueuesHookOnce: a job's end passed on again (its message delivered again after its
// node died before acknowledging it) queues its webhook and its batch's no second time, whenever
// it comes: the stream drops a duplicate only within two minutes, and a second message would
// make a second schedule of attempts.
func TestAfterEndQueuesHookOnce(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_hook_once", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var mu sync.Mutex
	published := map[string]int{}
	s := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, s, func(c *JobsConfig) {
		c.RetryDelays = []time.Duration{time.Hour} // the first attempt fails: the hooks stay pending
		c.published = func(m workMsg) {
			mu.Lock()
			defer mu.Unlock()
			published[m.Kind+"-"+m.ID]++
		}
	})
	req := jobRequest(acc, plan, 1, true)
	req.BatchWebhookURL = "http://127.0.0.1:1/batch"
	req.Options[0].WebhookURL = "http://127.0.0.1:1/job"
	jobs, batch, err := jn.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	id := jobs[0].JobID
	waitJob(t, jn.jobs, acc.ID, id, 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.mu.Lock()
		tried := s.tried[id] > 0 && s.tried[batch.BatchID] > 0
		s.mu.Unlock()
		if tried {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no first attempt of the webhooks")
		}
	}
	// afterEnd publishes a message, then marks it queued in a second write: until both records
	// show it queued, the call below could rightly publish again.
	var r jobRecord
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _, err = jn.jobs.getJob(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		b, _, err := jn.jobs.getBatch(context.Background(), batch.BatchID)
		if err != nil {
			t.Fatal(err)
		}
		if r.HookQueued && b.HookQueued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhooks were not marked queued")
		}
	}
	if err := jn.jobs.afterEnd(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if published["hook-"+id] != 1 || published["batch-"+batch.BatchID] != 1 {
		t.Fatalf("published %v; want the job's and the batch's webhook once each", published)
	}
}

// deletionFixture is an account with one key and an idle job queue (no render) on a 1-node
// cluster, whose jobs bucket reads call onJobRead.
type deletionFixture struct {
	node  *Node
	book  *Book
	acc   shotd.Account
	key   shotd.Key
	files *Files
	idle  *jobsNode
}

func newDeletionFixture(t *testing.T, onJobRead func(key string)) *deletionFixture {
	nodes := startCluster(t, 1)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	book, err := OpenBook(context.Background(), nodes[0], log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(book.Close)
	acc, err := book.CreateAccount("revoke@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := book.CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	idle := startJobsNode(t, nodes[0], nil, nil, func(c *JobsConfig) {
		c.Capacity, c.revokeSettle = -1, 100*time.Millisecond
		c.onRead = func(k string) {
			if strings.HasPrefix(k, "j.") {
				onJobRead(k)
			}
		}
	})
	return &deletionFixture{node: nodes[0], book: book, acc: acc, key: key, files: NewFiles(nil, nodes[0], log), idle: idle}
}

// keyBack checks that the account's key is there after a refused deletion.
func (f *deletionFixture) keyBack(t *testing.T) {
	t.Helper()
	if _, err := f.node.Keys.Get(context.Background(), f.key.AccessKey); err != nil {
		t.Fatalf("the key after a refused deletion: %v; want it back", err)
	}
}

// TestDeleteAccountRevokesFirst: the account's keys are revoked before its jobs are read, so
// that none is queued meanwhile; refused because a job is queued, the deletion puts them back.
func TestDeleteAccountRevokesFirst(t *testing.T) {
	var mu sync.Mutex
	var keyAtScan []error // whether the key was there at each read of the account's jobs
	var f *deletionFixture
	f = newDeletionFixture(t, func(string) {
		_, err := f.node.Keys.Get(context.Background(), f.key.AccessKey)
		mu.Lock()
		keyAtScan = append(keyAtScan, err)
		mu.Unlock()
	})
	if _, _, err := f.idle.jobs.Submit(jobRequest(f.acc, shotd.Plan{MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{Concurrency: 1}}, 1, false), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	keyAtScan = nil
	mu.Unlock()
	if _, err := DeleteAccount(f.book, f.idle.jobs, f.files, f.acc.ID); !errors.Is(err, shotd.ErrAccountBusy) {
		t.Fatalf("delete with a job queued: %v, want ErrAccountBusy", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keyAtScan) == 0 || !errors.Is(keyAtScan[0], jetstream.ErrKeyNotFound) {
		t.Fatalf("the account's key at the read of its jobs: %v; want it revoked", keyAtScan)
	}
	f.keyBack(t)
}

// TestDeleteAccountSubmitRacingRevocation: a job request that passed the key check before the
// revocation writes its job after the deletion's first read of the jobs: the deletion is
// refused all the same (it reads them again once such a request is over), keys put back.
func TestDeleteAccountSubmitRacingRevocation(t *testing.T) {
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var once sync.Once
	var armed atomic.Bool
	var f *deletionFixture
	f = newDeletionFixture(t, func(string) {
		if !armed.Load() {
			return
		}
		once.Do(func() { // during the first read: the raced request queues its job
			if _, _, err := f.idle.jobs.Submit(jobRequest(f.acc, plan, 1, false), 5*time.Second); err != nil {
				t.Error(err)
			}
		})
	})
	// An ended job, for the first read to find.
	jobs, _, err := f.idle.jobs.Submit(jobRequest(f.acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := f.idle.jobs.getJob(context.Background(), jobs[0].JobID)
	if err == nil {
		err = f.idle.jobs.fail(context.Background(), r, "", 0, shotd.Errorf(shotd.CodeInternalError, "ended"))
	}
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	if _, err := DeleteAccount(f.book, f.idle.jobs, f.files, f.acc.ID); !errors.Is(err, shotd.ErrAccountBusy) {
		t.Fatalf("delete with a job queued by a raced request: %v, want ErrAccountBusy", err)
	}
	f.keyBack(t)
}

// TestDeleteAccountPutsKeysBackThroughOutage: a refused deletion whose first tries to put the
// keys back find the keys bucket without a leader tries again, and the keys are back.
func TestDeleteAccountPutsKeysBackThroughOutage(t *testing.T) {
	var fault *faultKV
	f := newDeletionFixture(t, func(string) {
		fault.mu.Lock()
		fault.down = time.Now().Add(2 * time.Second) // from the read on, for a while
		fault.mu.Unlock()
	})
	fault = &faultKV{KeyValue: f.book.keys}
	f.book.keys = fault
	if _, _, err := f.idle.jobs.Submit(jobRequest(f.acc, shotd.Plan{MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{Concurrency: 1}}, 1, false), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := DeleteAccount(f.book, f.idle.jobs, f.files, f.acc.ID); !errors.Is(err, shotd.ErrAccountBusy) {
		t.Fatalf("delete with a job queued: %v, want ErrAccountBusy", err)
	}
	f.keyBack(t)
}

// TestScanWhileWritten: a scan of a bucket lists every key while other nodes write to it (the
// webhooks' attempts write job records while the admin API lists an account's jobs).
func TestScanWhileWritten(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := context.Background()
	const keys = 300
	for i := range keys {
		if _, err := nodes[0].Jobs.Put(ctx, fmt.Sprintf("j.k%03d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = n.Jobs.Put(ctx, fmt.Sprintf("j.k%03d", (i*7)%keys), []byte("y"))
				_, _ = n.Jobs.Put(ctx, fmt.Sprintf("x.new%d-%s", i, n.NodeName()), []byte("z"))
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for range 20 {
		got := 0
		if err := scan(ctx, nodes[0].js, nodes[0].Jobs, "j.*", func(string, []byte) { got++ }); err != nil {
			t.Fatal(err)
		}
		if got != keys {
			t.Fatalf("listed %d keys of %d", got, keys)
		}
	}
}

// TestSweepRequeuesOrphanJob: a job whose record was written but whose message never reached
// the stream (its node died in between, after answering 202 or not) is queued again by the
// sweep once it has waited past the grace, and ends; a second sweep queues it no more.
func TestSweepRequeuesOrphanJob(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	acc := shotd.Account{ID: "acc_orphan", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var renders atomic.Int64
	jn := startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		renders.Add(1)
		return pngOut(), nil
	}, nil, func(c *JobsConfig) { c.Capacity = -1 }) // takes no job: the message stays queued
	jobs, _, err := jn.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The orphan: a job like it, with its record and its reservation, whose message never went
	// to the stream.
	r, _, err := jn.jobs.getJob(ctx, jobs[0].JobID)
	if err != nil {
		t.Fatal(err)
	}
	hs, _, err := jn.ledger.ReserveJobs(ctx, r.Hold.Key, plan.MonthlyQuota, 0, []string{"job_orphan"})
	if err != nil {
		t.Fatal(err)
	}
	r.Job.JobID, r.Hold = "job_orphan", hs[0]
	if err := jn.jobs.create(ctx, jobKey(r.Job.JobID), &r); err != nil {
		t.Fatal(err)
	}
	worker := startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		renders.Add(1)
		return pngOut(), nil
	}, nil, nil)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	later := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log, Now: func() time.Time { return time.Now().Add(2 * reservationGrace) }})
	if _, err := sweepReservations(ctx, n.js, later, n.Jobs); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{jobs[0].JobID, "job_orphan"} {
		if job := waitJob(t, worker.jobs, acc.ID, id, 30*time.Second); job.Status != shotd.JobSucceeded {
			t.Fatalf("job %s %s %s", id, job.Status, job.ErrorMessage)
		}
	}
	checkBilled(t, worker.ledger, acc, 2)
	if r, _, err = worker.jobs.getJob(ctx, "job_orphan"); err != nil || !r.Requeued {
		t.Fatalf("record %+v %v; want it marked requeued", r, err)
	}
	if renders.Load() != 2 {
		t.Fatalf("%d renders, want 2", renders.Load())
	}
}

// TestSweepGoesOnAfterCut: a pass over the ledger cut by its time has dealt with every record
// it read, and says where it stopped; the next pass goes on from there, so that a ledger too
// large for one pass is swept in turn rather than never past its first records.
func TestSweepGoesOnAfterCut(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	l := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log})
	start, _ := shotd.BillingPeriod(time.Now(), time.Now())
	const records = 12
	var keys []string
	for i := range records { // each holds the reservation of a job that has no record: stale
		key := LedgerKey(fmt.Sprintf("acc_cut%02d", i), start)
		if _, _, err := l.ReserveJobs(ctx, key, 10, 0, []string{fmt.Sprintf("job_gone%02d", i)}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	reservations := func(key string) int {
		st, err := l.State(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return st.Reservations
	}
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	var reads atomic.Int64
	later := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log, Now: func() time.Time {
		if reads.Add(1) == records { // about halfway: a record read, its write asks the clock too
			cancel()
		}
		return time.Now().Add(2 * reservationGrace)
	}})
	dropped, last, _ := sweepLedgerAfter(cut, n.js, later, n.Jobs, "")
	if last == "" || dropped == 0 || dropped == records {
		t.Fatalf("the cut pass dropped %d of %d, stopped after %q: want it cut midway", dropped, records, last)
	}
	for _, key := range keys {
		want := 0 // dealt with by the cut pass
		if key > last {
			want = 1 // not read yet
		}
		if got := reservations(key); got != want {
			t.Fatalf("%s, the cut after %s: %d reservations left, want %d", key, last, got, want)
		}
	}
	dropped2, last2, err := sweepLedgerAfter(ctx, n.js, later, n.Jobs, last)
	if err != nil || last2 != "" || dropped+dropped2 != records {
		t.Fatalf("the next pass: %d dropped, stopped after %q, %v; want the other %d and the end", dropped2, last2, err, records-dropped)
	}
	for _, key := range keys {
		if got := reservations(key); got != 0 {
			t.Fatalf("%s: %d reservations left after both passes", key, got)
		}
	}
}

// TestSubmitWithoutWorkStream: a job whose message cannot be queued (the work stream has no
// leader; here it is gone) is answered all the same and stays queued with its reservation; the
// sweep queues it again once the stream is back, and it runs and delivers its webhook. Ended
// failed instead, its webhook's message would have needed the same stream, and nothing would
// have queued it later.
func TestSubmitWithoutWorkStream(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	acc := shotd.Account{ID: "acc_nostream", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	sender := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) { return pngOut(), nil }
	first := startJobsNode(t, n, render, sender, nil)
	if err := n.js.DeleteStream(ctx, StreamWork); err != nil {
		t.Fatal(err)
	}
	req := jobRequest(acc, plan, 1, false)
	req.Options[0].WebhookURL = "http://127.0.0.1:1/job"
	jobs, _, err := first.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	id := jobs[0].JobID
	if r, _, err := first.jobs.getJob(ctx, id); err != nil || r.Job.Status != shotd.JobQueued {
		t.Fatalf("after the answer: %+v %v, want it queued", r.Job, err)
	}
	second := startJobsNode(t, n, render, sender, nil) // makes the stream again
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	later := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log, Now: func() time.Time { return time.Now().Add(2 * reservationGrace) }})
	if _, err := sweepReservations(ctx, n.js, later, n.Jobs); err != nil {
		t.Fatal(err)
	}
	if job := waitJob(t, second.jobs, acc.ID, id, 30*time.Second); job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s", job.Status, job.ErrorMessage)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		sender.mu.Lock()
		delivered := sender.jobs[id]
		sender.mu.Unlock()
		if delivered == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's webhook was delivered %d times, want 1", delivered)
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkBilled(t, second.ledger, acc, 1)
}

// TestJobDuplicateMessageWhileRendering: a second message of a job (another message id, as a
// requeue past the stream's de-duplication window sends) reaches another node while the job
// renders on a live node: that node waits instead of taking the job over, and the job renders
// once, billed once.
func TestJobDuplicateMessageWhileRendering(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_dup", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var renders atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		if renders.Add(1) == 1 {
			close(started)
		}
		<-release
		return pngOut(), nil
	}
	first := startJobsNode(t, nodes[0], render, nil, func(c *JobsConfig) { c.Capacity = 1 })
	jobs, _, err := first.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	other := startJobsNode(t, nodes[1], render, nil, nil)
	data, _ := json.Marshal(workMsg{V: recordVersion, Kind: "job", ID: jobs[0].JobID})
	if _, err := nodes[1].js.Publish(context.Background(), subjectJob, data, jetstream.WithMsgID("dup-"+jobs[0].JobID)); err != nil {
		t.Fatal(err)
	}
	for other.jobs.slotWaits.Load() == 0 && renders.Load() == 1 {
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	job := waitJob(t, other.jobs, acc.ID, jobs[0].JobID, 30*time.Second)
	if job.Status != shotd.JobSucceeded || renders.Load() != 1 {
		t.Fatalf("job %s %s, %d renders; want succeeded, rendered once", job.Status, job.ErrorMessage, renders.Load())
	}
	checkBilled(t, other.ledger, acc, 1)
}

// TestSweepUnwritableLedgerEnds: a ledger record the sweep cannot write (no quorum, for good)
// does not keep the pass: it ends with an error, so that the sweeper renews its lease.
func TestSweepUnwritableLedgerEnds(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	l := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true})
	t.Cleanup(func() { _ = l.Close(ctx) })
	key := LedgerKey("acc_stuck", time.Now().Add(-time.Hour))
	if _, _, err := l.ReserveJobs(ctx, key, 5, 0, []string{"job_gone"}); err != nil { // no record
		t.Fatal(err)
	}
	stuck := &faultKV{KeyValue: n.Ledger, refuse: func(string) bool { return true }}
	later := NewLedger(stuck, "n1", LedgerConfig{NoRenew: true, Now: func() time.Time { return time.Now().Add(2 * reservationGrace) }})
	t.Cleanup(func() { _ = later.Close(ctx) })
	done := make(chan error, 1)
	go func() {
		_, err := sweepReservations(ctx, n.js, later, n.Jobs)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the sweep wrote a record that cannot be written")
		}
	case <-time.After(time.Minute):
		t.Fatal("the sweep's pass did not end")
	}
}

// TestSweepSkipsPastPeriods: the sweep reads the ledger records of the last month's periods
// only: a record of a period long past is left as it is, whatever it holds.
func TestSweepSkipsPastPeriods(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	l := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true})
	t.Cleanup(func() { _ = l.Close(ctx) })
	old := LedgerKey("acc_past", time.Now().Add(-40*24*time.Hour))
	current := LedgerKey("acc_past", time.Now().Add(-24*time.Hour))
	for _, key := range []string{old, current} {
		if _, _, err := l.ReserveJobs(ctx, key, 5, 0, []string{"job_none"}); err != nil { // no record
			t.Fatal(err)
		}
	}
	later := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Now: func() time.Time { return time.Now().Add(2 * reservationGrace) }})
	t.Cleanup(func() { _ = later.Close(ctx) })
	dropped, err := sweepReservations(ctx, n.js, later, n.Jobs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.State(ctx, old)
	if err != nil || dropped != 1 || st.Reservations != 1 {
		t.Fatalf("%d dropped, the past period's record %+v %v; want 1 dropped (the current period's)", dropped, st, err)
	}
}

// TestSubmitUndoneRecordEnds: a failed Submit whose undo can neither remove nor end one of its
// job records (the jobs bucket without a leader; the ledger answers) keeps that job's
// reservation, marked undone; the sweep then ends the job failed instead of queueing it: no
// job queued for days with nothing to run it, none run for a request answered 503.
func TestSubmitUndoneRecordEnds(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	acc := shotd.Account{ID: "acc_zombie", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	var mu sync.Mutex
	var written []string // job records written
	jn := startJobsNode(t, n, nil, nil, func(c *JobsConfig) {
		c.Capacity = -1
		c.wrapKV = func(kv jetstream.KeyValue) jetstream.KeyValue {
			return &faultKV{KeyValue: kv, refuse: func(key string) bool {
				mu.Lock()
				defer mu.Unlock()
				if !strings.HasPrefix(key, "j.") {
					return false
				}
				if len(written) == 0 {
					written = append(written, key) // the first job record lands
					return false
				}
				return true // the second, and every change of the first, is refused
			}, refuseDelete: func(key string) bool { return strings.HasPrefix(key, "j.") }}
		}
	})
	_, _, err := jn.jobs.Submit(jobRequest(acc, plan, 2, true), time.Second)
	if shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("Submit: %v, want service_unavailable", err)
	}
	id := strings.TrimPrefix(written[0], "j.")
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	later := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true, Log: log, Now: func() time.Time { return time.Now().Add(2 * reservationGrace) }})
	t.Cleanup(func() { _ = later.Close(ctx) })
	for range 2 { // the first ends the job, the second drops its reservation
		if _, err := sweepReservations(ctx, n.js, later, n.Jobs); err != nil {
			t.Fatal(err)
		}
	}
	e, err := n.Jobs.Get(ctx, jobKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var r jobRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil || r.Job.Status != shotd.JobFailed || r.Requeued {
		t.Fatalf("job of a failed request: %s (requeued %v) %v; want failed, not queued again", r.Job.Status, r.Requeued, err)
	}
	if st := ledgerState(t, n, acc); st.Reservations != 0 || st.Billed != 0 {
		t.Fatalf("ledger %+v, want nothing held or billed", st)
	}
}

// TestRequeueMarkAfterConcurrentWrite: a node takes the job (or writes its webhook's state)
// between the sweep's read of an orphan's record and its write of the requeued mark: the mark
// is read again and written, or left when the job is no longer an orphan, never an error.
func TestRequeueMarkAfterConcurrentWrite(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	l := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true})
	t.Cleanup(func() { _ = l.Close(ctx) })
	for _, started := range []bool{false, true} {
		id := fmt.Sprintf("job_race%v", started)
		createJobRecord(t, n.Jobs, jobRecord{Job: shotd.Job{JobID: id, AccountID: "acc_race", Status: shotd.JobQueued, UpdatedAt: time.Now().Add(-2 * reservationGrace)}})
		calls := 0
		err := markJob(ctx, l, n.Jobs, id, func(r *jobRecord) bool {
			if calls++; calls == 1 { // another writer lands after this read
				other := *r
				if started {
					other.Starts = 1
				}
				other.Job.UpdatedAt = time.Now().Add(-2 * reservationGrace)
				data, _ := other.encode()
				if _, err := n.Jobs.Put(ctx, jobKey(id), data); err != nil {
					t.Fatal(err)
				}
			}
			if !orphanCandidate(*r, time.Now()) {
				return false
			}
			r.Requeued = true
			return true
		})
		if err != nil {
			t.Fatalf("started %v: %v", started, err)
		}
		got, _, err := readJobRev(ctx, l, n.Jobs, id)
		if err != nil || calls != 2 || got.Requeued == started {
			t.Fatalf("started %v: %d reads, record %+v %v", started, calls, got, err)
		}
	}
}

// TestMarkJobOutlastsWriters: writes of other nodes landing between each of markJob's reads and
// its write, more than a few times in a row, delay the mark until its context ends, no more.
func TestMarkJobOutlastsWriters(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // as its callers
	defer cancel()
	l := NewLedger(n.Ledger, "n1", LedgerConfig{NoRenew: true})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	const id, writers = "job_busy", 8
	data := createJobRecord(t, n.Jobs, jobRecord{Job: shotd.Job{JobID: id, AccountID: "acc_busy", Status: shotd.JobQueued, UpdatedAt: time.Now()}})
	calls := 0
	err := markJob(ctx, l, n.Jobs, id, func(r *jobRecord) bool {
		if calls++; calls <= writers { // another write (a webhook's state) lands after this read
			if _, err := n.Jobs.Put(ctx, jobKey(id), data); err != nil {
				t.Fatal(err)
			}
		}
		r.Requeued = true
		return true
	})
	if err != nil || calls != writers+1 {
		t.Fatalf("after %d reads: %v; want the mark written on read %d", calls, err, writers+1)
	}
	if got, _, err := readJobRev(ctx, l, n.Jobs, id); err != nil || !got.Requeued {
		t.Fatalf("record %+v %v, want marked", got, err)
	}
}

// createJobRecord creates r's record in kv and returns what it wrote.
func createJobRecord(t *testing.T, kv jetstream.KeyValue, r jobRecord) []byte {
	t.Helper()
	data, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(context.Background(), jobKey(r.Job.JobID), data); err != nil {
		t.Fatal(err)
	}
	return data
}
