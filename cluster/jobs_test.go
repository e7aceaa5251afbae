package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/store"
)

// jobsNode is one node's job queue on its ledger, with a renderer the test drives (no browser:
// these tests are about the queue, not the page) and a real bbolt store for the files.
type jobsNode struct {
	jobs   *Jobs
	ledger *Ledger
	ended  *atomic.Int64
}

// renderFunc renders a job's page: the test decides when, and how it ends.
type renderFunc func(ctx context.Context, o *shotd.Options) (*shotd.Output, error)

func (f renderFunc) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	return f(ctx, o)
}

func pngOut() *shotd.Output {
	return &shotd.Output{Data: []byte("\x89PNG fake"), Format: "png", ContentType: "image/png", Width: 1, Height: 1}
}

func startJobsNode(t *testing.T, n *Node, render renderFunc, sender Sender, change func(*JobsConfig)) *jobsNode {
	t.Helper()
	st, err := store.Open(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("node", n.NodeName()).Logger()
	l := NewLedger(n.Ledger, n.NodeName(), LedgerConfig{Log: log})
	var ended atomic.Int64
	cfg := JobsConfig{Ledger: l, Sender: sender, Capacity: 2, AckWait: 2 * time.Second, SlotRetry: 100 * time.Millisecond,
		RetryDelays: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond},
		Renderer:    actors.JobRenderer{Files: st, Render: render, FileTTL: time.Hour, RenderGrace: time.Second, BusyRetry: time.Second},
		Ended:       func(shotd.Job) { ended.Add(1) }, Log: log}
	if change != nil {
		change(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := OpenJobs(ctx, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = j.Close(cctx)
		_ = l.Close(cctx)
		_ = st.Close(cctx)
	})
	return &jobsNode{jobs: j, ledger: l, ended: &ended}
}

func jobRequest(acc shotd.Account, plan shotd.Plan, n int, batch bool) shotd.JobRequest {
	req := shotd.JobRequest{Account: acc, Plan: plan, AccessKey: "key", Batch: batch}
	for range n {
		req.Options = append(req.Options, &shotd.Options{URL: "http://127.0.0.1/", Format: "png"})
	}
	return req
}

// waitJob waits until the job ends on every node's view and returns it.
func waitJob(t *testing.T, j *Jobs, accountID, id string, within time.Duration) shotd.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		job, err := j.Job(accountID, id)
		if err == nil && job.Final() {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %+v %v, not ended", id, job, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkBilled checks that the account's ledger record has want billed and no reservation left.
func checkBilled(t *testing.T, l *Ledger, acc shotd.Account, want int) {
	t.Helper()
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	st, err := l.State(context.Background(), LedgerKey(acc.ID, start))
	if err != nil {
		t.Fatal(err)
	}
	if st.Billed != want || st.Reservations != 0 {
		t.Fatalf("ledger %+v, want %d billed and no reservation left", st, want)
	}
}

// TestJobRedeliveredAfterNodeDies: a node takes a job and dies mid-render without acknowledging
// it; the job's message comes back after the ack wait, another node claims the dead node's
// reservation and renders it, and the job ends succeeded, billed once.
func TestJobRedeliveredAfterNodeDies(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_redeliver", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	dying := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		close(started)
		<-release // it never answers before its node is gone
		return pngOut(), nil
	}, nil, nil)
	jobs, _, err := dying.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	// The node dies: its NATS server stops, as with kill -9 nothing is acknowledged.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = nodes[0].Close(ctx)
	cancel()
	var renders atomic.Int64
	other := startJobsNode(t, nodes[1], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		renders.Add(1)
		return pngOut(), nil
	}, nil, nil)
	job := waitJob(t, other.jobs, acc.ID, jobs[0].JobID, 60*time.Second)
	if job.Status != shotd.JobSucceeded || job.Result == nil {
		t.Fatalf("job %s %s %s, want succeeded with a result", job.Status, job.ErrorCode, job.ErrorMessage)
	}
	r, _, err := other.jobs.getJob(context.Background(), job.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != nodes[1].NodeName() || r.Starts != 2 || renders.Load() != 1 {
		t.Fatalf("rendered by %s at start %d (%d renders), want %s at its second start", r.Node, r.Starts, renders.Load(), nodes[1].NodeName())
	}
	checkBilled(t, other.ledger, acc, 1)
}

// TestJobOneSuccess: a job delivered twice at once (its first node taken for dead while still
// rendering: cut off from the ledger, its lease expired) renders on two nodes; only the newer
// owner's end is recorded, and it is billed once.
func TestJobOneSuccess(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_one", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 2}}
	firstIn, firstOut := make(chan struct{}), make(chan struct{})
	secondIn := make(chan struct{})
	first := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		close(firstIn)
		<-firstOut
		return pngOut(), nil
	}, nil, func(c *JobsConfig) {
		c.Capacity = 1 // busy with the job: the second delivery goes elsewhere
		c.Ledger = NewLedger(nodes[0].Ledger, nodes[0].NodeName(), LedgerConfig{NoRenew: true, Lease: time.Second})
		t.Cleanup(func() { _ = c.Ledger.Close(context.Background()) })
	})
	jobs, _, err := first.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-firstIn
	second := startJobsNode(t, nodes[1], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		close(secondIn)
		return pngOut(), nil
	}, nil, nil)
	// A second delivery of the same job, as the stream makes when the first node stops
	// acknowledging (a message id of its own, past the duplicate window).
	data, _ := json.Marshal(workMsg{V: recordVersion, Kind: "job", ID: jobs[0].JobID})
	if _, err := nodes[2].js.Publish(context.Background(), subjectJob, data, jetstream.WithMsgID("again")); err != nil {
		t.Fatal(err)
	}
	<-secondIn
	job := waitJob(t, second.jobs, acc.ID, jobs[0].JobID, 30*time.Second)
	close(firstOut) // the first render ends after the second node recorded its own
	time.Sleep(500 * time.Millisecond)
	if job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s", job.Status, job.ErrorMessage)
	}
	if n := first.ended.Load() + second.ended.Load(); n != 1 || second.ended.Load() != 1 {
		t.Fatalf("%d ends recorded (%d by the second node), want 1 by the second", n, second.ended.Load())
	}
	checkBilled(t, first.ledger, acc, 1)
}

// TestJobsQuota: jobs reserve their quota when queued, all of a request or none; renders claim
// the account's concurrency across nodes; what fails is not billed.
func TestJobsQuota(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_quota", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 6, PlanLimits: shotd.PlanLimits{Concurrency: 2}}
	var running, peak atomic.Int64
	// The failing job ends only after the quota checks below: its end gives its reservation
	// back, which would make room for the bulk that must be refused.
	checked := make(chan struct{})
	var checkedOnce sync.Once
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(100 * time.Millisecond)
		if o.URL == "http://127.0.0.1/fail" {
			select {
			case <-checked:
			case <-ctx.Done():
			}
		}
		running.Add(-1)
		if o.URL == "http://127.0.0.1/fail" {
			return nil, shotd.Errorf(shotd.CodeNavigationFailed, "no page")
		}
		return pngOut(), nil
	}
	var js []*jobsNode
	for _, n := range nodes {
		js = append(js, startJobsNode(t, n, render, nil, nil))
	}
	t.Cleanup(func() { checkedOnce.Do(func() { close(checked) }) }) // before the nodes close
	req := jobRequest(acc, plan, 5, true)
	req.Options[4].URL = "http://127.0.0.1/fail"
	jobs, batch, err := js[0].jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// 5 of 6 reserved: a bulk of 2 is refused whole, a single job fits.
	if _, _, err := js[1].jobs.Submit(jobRequest(acc, plan, 2, true), 5*time.Second); shotd.CodeOf(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("bulk past the quota: %v, want quota_exceeded", err)
	}
	more, _, err := js[2].jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkedOnce.Do(func() { close(checked) })
	for _, jb := range append(jobs, more...) {
		waitJob(t, js[1].jobs, acc.ID, jb.JobID, 30*time.Second)
	}
	b, bj, err := js[2].jobs.Batch(acc.ID, batch.BatchID)
	if err != nil || len(bj) != 5 || b.BatchID != batch.BatchID {
		t.Fatalf("batch %+v %d jobs %v", b, len(bj), err)
	}
	ok := 0
	for _, jb := range bj {
		if jb.Status == shotd.JobSucceeded {
			ok++
		}
	}
	if ok != 4 || bj[4].Status != shotd.JobFailed || bj[4].ErrorCode != string(shotd.CodeNavigationFailed) {
		t.Fatalf("%d succeeded, last %s %s; want 4 and a navigation_failed", ok, bj[4].Status, bj[4].ErrorCode)
	}
	checkBilled(t, js[0].ledger, acc, 5) // 4 of the batch and the single job
	if peak.Load() > int64(plan.Concurrency) {
		t.Fatalf("%d renders of the account at once, concurrency %d", peak.Load(), plan.Concurrency)
	}
	if _, err := js[0].jobs.Job("acc_other", jobs[0].JobID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("another account's job: %v, want not found", err)
	}
	// Cluster status shows the work stream: its consumers, nothing waiting once all ended.
	st, err := nodes[2].Status(context.Background())
	if err != nil || st.Work == nil || len(st.Work.Consumers) != 2 || st.Work.Consumers[0].Name != consumerJob ||
		st.Work.Consumers[0].Waiting != 0 || len(st.Work.Replicas) != 2 {
		t.Fatalf("work stream status %+v %v", st.Work, err)
	}
	var out strings.Builder
	st.Print(&out)
	if !strings.Contains(out.String(), "work stream "+StreamWork) {
		t.Fatalf("status print lacks the work stream:\n%s", out.String())
	}
}

// recordingSender fails the first attempt of each delivery, then records it.
type recordingSender struct {
	mu      sync.Mutex
	tried   map[string]int
	jobs    map[string]int
	batches map[string][]shotd.Job
}

func (s *recordingSender) Send(j shotd.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tried[j.JobID]++; s.tried[j.JobID] == 1 {
		return errors.New("receiver down")
	}
	s.jobs[j.JobID]++
	return nil
}

func (s *recordingSender) SendBatch(b shotd.Batch, jobs []shotd.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tried[b.BatchID]++; s.tried[b.BatchID] == 1 {
		return errors.New("receiver down")
	}
	s.batches[b.BatchID] = jobs
	return nil
}

// TestJobsWebhooks: the webhooks of jobs and of their batch are delivered once the jobs end,
// whichever nodes ran them, a failed attempt retried after its delay; the batch's once, with
// every job ended.
func TestJobsWebhooks(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_hooks", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 100, PlanLimits: shotd.PlanLimits{Concurrency: 4}}
	s := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	var js []*jobsNode
	for _, n := range nodes {
		js = append(js, startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			time.Sleep(20 * time.Millisecond)
			return pngOut(), nil
		}, s, nil))
	}
	req := jobRequest(acc, plan, 6, true)
	req.BatchWebhookURL = "http://127.0.0.1:1/batch"
	for _, o := range req.Options {
		o.WebhookURL = "http://127.0.0.1:1/job"
	}
	jobs, batch, err := js[1].jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		done := len(s.jobs) == len(jobs) && s.batches[batch.BatchID] != nil
		s.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %d jobs of %d, batch %v", len(s.jobs), len(jobs), s.batches[batch.BatchID] != nil)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, jb := range s.batches[batch.BatchID] {
		if !jb.Final() {
			t.Fatalf("batch delivered with job %s %s", jb.JobID, jb.Status)
		}
	}
	// The sender hears a delivery before its outcome is written: wait for the records.
	for {
		b, _, berr := js[2].jobs.Batch(acc.ID, batch.BatchID)
		j0, jerr := js[0].jobs.Job(acc.ID, jobs[0].JobID)
		if berr == nil && jerr == nil && b.Webhook != nil && b.Webhook.Status != shotd.WebhookPending && j0.Webhook.Status != shotd.WebhookPending {
			if b.Webhook.Status != shotd.WebhookDelivered || b.Webhook.Attempts != 2 {
				t.Fatalf("batch webhook %+v, want delivered at the second attempt", b.Webhook)
			}
			if j0.Webhook.Status != shotd.WebhookDelivered || j0.Webhook.Attempts != 2 {
				t.Fatalf("job webhook %+v, want delivered at the second attempt", j0.Webhook)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhooks not recorded: batch %+v %v, job %+v %v", b.Webhook, berr, j0.Webhook, jerr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestJobUpdatesCAS: changes of one job record made at once from three nodes are each applied
// once (compare-and-swap, retried on a conflict): none is lost, none applied twice.
func TestJobUpdatesCAS(t *testing.T) {
	nodes := startCluster(t, 3)
	var js []*jobsNode
	for _, n := range nodes {
		js = append(js, startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			return pngOut(), nil
		}, nil, func(c *JobsConfig) { c.Capacity = -1 })) // takes no job: the test alone writes
	}
	job := shotd.Job{JobID: store.NewJobID(), AccountID: "acc_cas", Status: shotd.JobQueued,
		Webhook: &shotd.WebhookState{URL: "http://127.0.0.1:1/", Sign: true}}
	if _, err := js[0].jobs.put(context.Background(), jobKey(job.JobID), &jobRecord{Job: job}, 0); err != nil {
		t.Fatal(err)
	}
	const each = 10
	var wg sync.WaitGroup
	for _, n := range js {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := n.jobs.updateJob(context.Background(), job.JobID, func(r *jobRecord) error {
					r.Job.Webhook.Attempts++
					return nil
				}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	got, err := js[2].jobs.Job("acc_cas", job.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Webhook.Attempts != each*len(js) || !got.Webhook.Sign {
		t.Fatalf("%d changes applied (sign %v), want %d", got.Webhook.Attempts, got.Webhook.Sign, each*len(js))
	}
	// A job's end makes its webhook pending in the same write, or drops it when the job failed
	// with webhook_errors=false.
	final, err := js[1].jobs.updateJob(context.Background(), job.JobID, func(r *jobRecord) error {
		r.Job.Status = shotd.JobSucceeded
		return nil
	})
	if err != nil || final.Job.Webhook.Status != shotd.WebhookPending {
		t.Fatalf("ended job's webhook %+v %v, want pending", final.Job.Webhook, err)
	}
}

// TestJobWaitingForSlotLeavesAtClose: a node that stops while it holds a job waiting for a
// concurrency slot gives the job back at once, rather than wait for the slot until its shutdown
// deadline; another node renders it.
func TestJobWaitingForSlotLeavesAtClose(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_leave", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		if o.URL == "http://127.0.0.1/held" {
			once.Do(func() { close(started) })
			<-release
		}
		return pngOut(), nil
	}, nil, func(c *JobsConfig) { c.Capacity = 1 })
	req := jobRequest(acc, plan, 1, false)
	req.Options[0].URL = "http://127.0.0.1/held"
	held, _, err := a.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-started // the account's one slot is taken
	b := startJobsNode(t, nodes[1], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, nil)
	waiting, _, err := b.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for b.jobs.slotWaits.Load() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = b.jobs.Close(ctx)
	cancel()
	if err != nil {
		t.Fatalf("close with a job waiting for a slot: %v, want it given back at once", err)
	}
	close(release)
	for _, id := range []string{held[0].JobID, waiting[0].JobID} {
		if j := waitJob(t, a.jobs, acc.ID, id, 30*time.Second); j.Status != shotd.JobSucceeded {
			t.Fatalf("job %s %s %s", id, j.Status, j.ErrorMessage)
		}
	}
}

// TestDeleteAccount: an account with a job queued cannot be deleted; once its jobs ended, its
// jobs, batch, shared file records, keys and the account go, and its key stops working on
// another node.
func TestDeleteAccount(t *testing.T) {
	nodes := startCluster(t, 3)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	books := make([]*Book, 2)
	for i := range books {
		b, err := OpenBook(context.Background(), nodes[i], log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		books[i] = b
	}
	acc, err := books[0].CreateAccount("gone@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := books[0].CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	files := NewFiles(st, nodes[0], log)
	plan := shotd.Plan{MonthlyQuota: 10, PlanLimits: shotd.PlanLimits{Concurrency: 2}}
	idle := startJobsNode(t, nodes[0], nil, nil, func(c *JobsConfig) { c.Capacity, c.revokeSettle = -1, 100*time.Millisecond })
	jobs, batch, err := idle.jobs.Submit(jobRequest(acc, plan, 2, true), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DeleteAccount(books[0], idle.jobs, files, acc.ID); !errors.Is(err, shotd.ErrAccountBusy) {
		t.Fatalf("delete with jobs queued: %v, want ErrAccountBusy", err)
	}
	worker := startJobsNode(t, nodes[1], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, nil)
	for _, j := range jobs {
		waitJob(t, worker.jobs, acc.ID, j.JobID, 30*time.Second)
	}
	// The admin API's list of the account's jobs, a page at a time.
	page1, next, err := idle.jobs.JobsOf(acc.ID, "", 1)
	if err != nil || len(page1) != 1 || next != page1[0].JobID {
		t.Fatalf("first page %d jobs, next %q, %v", len(page1), next, err)
	}
	page2, next, err := idle.jobs.JobsOf(acc.ID, next, 1)
	if err != nil || len(page2) != 1 || next != "" || page2[0].JobID == page1[0].JobID {
		t.Fatalf("second page %d jobs, next %q, %v", len(page2), next, err)
	}
	rec := shotd.FileRecord{FileID: "file_gone", AccountID: acc.ID, Remote: true, ExpiresAt: time.Now().Add(time.Hour)}
	files.share(rec)
	if _, err := files.File(acc.ID, rec.FileID); err != nil {
		t.Fatalf("shared file record: %v", err)
	}
	d, err := DeleteAccount(books[0], idle.jobs, files, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d != (shotd.AccountDeletion{Keys: 1, Jobs: 2, Batches: 1, Files: 1}) {
		t.Fatalf("deleted %+v, want 1 key, 2 jobs, 1 batch, 1 file", d)
	}
	if _, err := worker.jobs.Job(acc.ID, jobs[0].JobID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("job after the deletion: %v", err)
	}
	if _, _, err := worker.jobs.Batch(acc.ID, batch.BatchID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("batch after the deletion: %v", err)
	}
	if _, err := files.File(acc.ID, rec.FileID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("file record after the deletion: %v", err)
	}
	// Another node's copies follow the bucket's watch: soon, not at once.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, _, kerr := books[1].Lookup(key.AccessKey)
		_, aerr := books[1].Account(acc.ID)
		if errors.Is(kerr, shotd.ErrNotFound) && errors.Is(aerr, shotd.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted account on another node: key %v, account %v", kerr, aerr)
		}
	}
}

// TestJobReservationOutlivesItsNode: the quota a job reserved when it was queued stays reserved
// after the node that queued it dies (it renews nothing), so that the job, taken by another
// node, renders rather than fail for a quota that others took meanwhile.
func TestJobReservationOutlivesItsNode(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_outlive", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 2, PlanLimits: shotd.PlanLimits{Concurrency: 2}}
	short := LedgerConfig{Lease: 300 * time.Millisecond, NoRenew: true}
	var dying *Ledger
	queued := startJobsNode(t, nodes[0], nil, nil, func(c *JobsConfig) {
		c.Capacity = -1
		dying = NewLedger(nodes[0].Ledger, nodes[0].NodeName(), short)
		c.Ledger = dying
	})
	jobs, _, err := queued.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = dying.Close(context.Background())
	time.Sleep(3 * short.Lease) // well past the node's own leases
	other := NewLedger(nodes[1].Ledger, nodes[1].NodeName(), LedgerConfig{})
	defer other.Close(context.Background())
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	key := LedgerKey(acc.ID, start)
	h, _, err := other.Reserve(context.Background(), key, plan.MonthlyQuota, plan.Concurrency, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Reserve(context.Background(), key, plan.MonthlyQuota, plan.Concurrency, true); shotd.CodeOf(err) != shotd.CodeQuotaExceeded {
		t.Fatalf("a second render beside the queued job: %v, want quota_exceeded", err)
	}
	if _, err := other.Settle(context.Background(), h, true); err != nil {
		t.Fatal(err)
	}
	worker := startJobsNode(t, nodes[2], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, nil)
	if j := waitJob(t, worker.jobs, acc.ID, jobs[0].JobID, 30*time.Second); j.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s %s, want succeeded", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	checkBilled(t, worker.ledger, acc, 2)
}

// TestWorkMessageOfAnUnknownVersion: a work message written by a newer node is left in the
// stream for a node that reads it (a rolling restart), not dropped and not misread.
func TestWorkMessageOfAnUnknownVersion(t *testing.T) {
	nodes := startCluster(t, 3)
	var renders atomic.Int64
	n := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		renders.Add(1)
		return pngOut(), nil
	}, nil, nil)
	data, _ := json.Marshal(workMsg{V: recordVersion + 1, Kind: "job", ID: "job_from_the_future"})
	if _, err := nodes[1].js.Publish(context.Background(), subjectJob, data); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := nodes[2].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Taken once (in progress or given back), and still in the stream.
		c := st.Work.Consumers[0]
		if st.Work.Messages == 1 && c.Waiting+uint64(c.InProgress) == 1 && c.Redelivered+c.InProgress >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("work stream %+v: the message was not taken, or not left in the stream", st.Work)
		}
	}
	if renders.Load() != 0 || n.ended.Load() != 0 {
		t.Fatalf("%d renders, %d ends of a message this node cannot read", renders.Load(), n.ended.Load())
	}
}

// TestJobBacklogDoesNotBlockOtherAccounts: a bulk of one account with a concurrency of 1 does not
// hold the node's room while its jobs wait for the account's slot: another account's job, queued
// behind the bulk, renders while the bulk's first render is still running.
func TestJobBacklogDoesNotBlockOtherAccounts(t *testing.T) {
	nodes := startCluster(t, 3)
	accA := shotd.Account{ID: "acc_bulk", CreatedAt: time.Now()}
	accB := shotd.Account{ID: "acc_small", CreatedAt: time.Now()}
	planA := shotd.Plan{MonthlyQuota: 100, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	planB := shotd.Plan{MonthlyQuota: 10, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		if o.URL != "http://127.0.0.1/b" {
			once.Do(func() { close(started) })
			select { // A's renders wait until B's job ended
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return pngOut(), nil
	}, nil, func(c *JobsConfig) { c.Capacity = 3 })
	if _, _, err := n.jobs.Submit(jobRequest(accA, planA, 30, true), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	<-started
	req := jobRequest(accB, planB, 1, false)
	req.Options[0].URL = "http://127.0.0.1/b"
	jobs, _, err := n.jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, n.jobs, accB.ID, jobs[0].JobID, 30*time.Second)
	close(release)
	if job.Status != shotd.JobSucceeded {
		t.Fatalf("B's job %s %s %s, want succeeded", job.Status, job.ErrorCode, job.ErrorMessage)
	}
}

// TestBatchEndCountsReads: a batch's jobs, ending on three nodes, queue the batch's webhook once
// all ended, and the job records read to find that out stay about one per job, not one per job
// for every job's end.
func TestBatchEndCountsReads(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_batchreads", CreatedAt: time.Now()}
	const n = 40
	// Concurrency: the workers' capacity (3 nodes of 3), so that no job waits on a claim.
	plan := shotd.Plan{MonthlyQuota: n, PlanLimits: shotd.PlanLimits{Concurrency: 9}}
	s := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	var reads atomic.Int64
	var js []*jobsNode
	for _, nd := range nodes {
		jn := startJobsNode(t, nd, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			return pngOut(), nil
		}, s, func(c *JobsConfig) { c.Capacity = -1 }) // no job until the reads are counted
		js = append(js, jn)
	}
	req := jobRequest(acc, plan, n, true)
	req.BatchWebhookURL = "http://127.0.0.1:1/batch"
	_, batch, err := js[0].jobs.Submit(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Workers on every node, counting their reads of the batch's job records.
	for _, nd := range nodes {
		startJobsNode(t, nd, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			return pngOut(), nil
		}, s, func(c *JobsConfig) {
			c.Capacity = 3
			c.onRead = func(key string) {
				if strings.HasPrefix(key, "j.") {
					reads.Add(1)
				}
			}
		})
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.mu.Lock()
		got := s.batches[batch.BatchID]
		s.mu.Unlock()
		if got != nil {
			if len(got) != n {
				t.Fatalf("batch delivered with %d jobs, want %d", len(got), n)
			}
			for _, jb := range got {
				if !jb.Final() {
					t.Fatalf("batch delivered with job %s %s", jb.JobID, jb.Status)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("batch webhook not delivered")
		}
	}
	b, _, err := js[1].jobs.getBatch(context.Background(), batch.BatchID)
	if err != nil || b.Ended != n {
		t.Fatalf("batch counted %d ended jobs (%v), want %d", b.Ended, err, n)
	}
	// A job's own run reads its record a few times (its start, its render, its end, again on a
	// retried write); finding the batch's end costs about one more read each: measured 7-9 per
	// job. Read at every end, it would be n (40) more each.
	if r := reads.Load(); r > 20*n {
		t.Fatalf("%d reads of job records for %d jobs, want at most %d", r, n, 20*n)
	}
}

// startRacedWorker starts a job queue on n that must not render, and runs meanwhile(id) once,
// between the first job's read and its claim: what another delivery does at that moment.
func startRacedWorker(t *testing.T, n *Node, meanwhile func(id string)) *jobsNode {
	var once sync.Once
	return startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		t.Error("a job ended or billed elsewhere was rendered")
		return pngOut(), nil
	}, nil, func(c *JobsConfig) {
		c.preClaim = func(id string) { once.Do(func() { meanwhile(id) }) }
	})
}

// TestJobEndedMeanwhileGivesItsClaimBack: a job ended by another delivery between this
// delivery's read and its claim of the reservation (the claim takes a new one) does not keep
// that reservation: it is dropped, not renewed for ever with a unit of quota and a slot.
func TestJobEndedMeanwhileGivesItsClaimBack(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_unclaim", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	other := startJobsNode(t, nodes[1], nil, nil, func(c *JobsConfig) { c.Capacity = -1 })
	ended := make(chan struct{})
	worker := startRacedWorker(t, nodes[0], func(id string) {
		// Another delivery ends the job, its reservation dropped, as its node would.
		ctx := context.Background()
		r, _, err := other.jobs.getJob(ctx, id)
		if err == nil {
			err = other.jobs.fail(ctx, r, "", r.Starts, shotd.Errorf(shotd.CodeInternalError, "ended elsewhere"))
		}
		if err != nil {
			t.Error(err)
		}
		close(ended)
	})
	if _, _, err := other.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	<-ended
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := worker.ledger.State(context.Background(), LedgerKey(acc.ID, start))
		if err == nil && st.Reservations == 0 && worker.ledger.Held() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger %+v %v, %d held: the claim of an ended job was kept", st, err, worker.ledger.Held())
		}
	}
}

// TestJobOutlivesManyFailedDeliveries: a job whose record cannot be read on many deliveries in
// a row (here: written by a newer node, as in a rolling restart) is not dropped after some count
// of deliveries; it ends once a delivery can read it.
func TestJobOutlivesManyFailedDeliveries(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_many", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	idle := startJobsNode(t, nodes[1], nil, nil, func(c *JobsConfig) { c.Capacity = -1 })
	jobs, _, err := idle.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := jobKey(jobs[0].JobID)
	e, err := nodes[1].Jobs.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	good := e.Value()
	var newer map[string]any
	if err := json.Unmarshal(good, &newer); err != nil {
		t.Fatal(err)
	}
	newer["v"] = recordVersion + 1
	data, _ := json.Marshal(newer)
	if _, err := nodes[1].Jobs.Put(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	worker := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, func(c *JobsConfig) {
		c.retry = 10 * time.Millisecond
		c.onRead = func(k string) {
			if k == key {
				reads.Add(1)
			}
		}
	})
	const deliveries = 40 // twice the bound there was
	for deadline := time.Now().Add(60 * time.Second); reads.Load() < deliveries; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job's message came %d times, then no more", reads.Load())
		}
	}
	if _, err := nodes[1].Jobs.Put(ctx, key, good); err != nil { // the newer node's change undone
		t.Fatal(err)
	}
	if j := waitJob(t, worker.jobs, acc.ID, jobs[0].JobID, 30*time.Second); j.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s %s, want succeeded", j.Status, j.ErrorCode, j.ErrorMessage)
	}
}

// TestJobBilledMeanwhileEndsSucceeded: a job billed by another delivery between this delivery's
// read and its claim (the claim answers ErrBilled) ends succeeded with its result, not failed
// over a success that was billed.
func TestJobBilledMeanwhileEndsSucceeded(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_billed", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, PlanLimits: shotd.PlanLimits{Concurrency: 1}}
	other := startJobsNode(t, nodes[1], nil, nil, func(c *JobsConfig) { c.Capacity = -1 })
	worker := startRacedWorker(t, nodes[0], func(id string) {
		// Another node rendered the job, wrote Billing and billed it, then died.
		ctx := context.Background()
		r, err := other.jobs.updateJob(ctx, id, func(r *jobRecord) error {
			r.Job.Status, r.Node, r.Starts = shotd.JobRendering, "gone", r.Starts+1
			r.Billing, r.Result = true, &shotd.JobResult{FileID: "file_billed"}
			return nil
		})
		if err == nil {
			_, err = other.ledger.Settle(ctx, r.Hold, true)
		}
		if err != nil {
			t.Error(err)
		}
	})
	jobs, _, err := other.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, worker.jobs, acc.ID, jobs[0].JobID, 30*time.Second)
	if j.Status != shotd.JobSucceeded || j.Result == nil || j.Result.FileID != "file_billed" {
		t.Fatalf("job %s %s %s, want succeeded with the billed result", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	checkBilled(t, worker.ledger, acc, 1)
}

// TestJobReadUnavailable: a job or batch read that the cluster cannot answer (here: the node's
// NATS server is gone) is service_unavailable, which a client retries, not internal_error.
func TestJobReadUnavailable(t *testing.T) {
	nodes := startCluster(t, 3)
	acc := shotd.Account{ID: "acc_unavailable", CreatedAt: time.Now()}
	n := startJobsNode(t, nodes[0], nil, nil, func(c *JobsConfig) { c.Capacity = -1 })
	jobs, batch, err := n.jobs.Submit(jobRequest(acc, shotd.Plan{MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{Concurrency: 1}}, 1, true), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = nodes[0].Close(ctx)
	cancel()
	if _, err := n.jobs.Job(acc.ID, jobs[0].JobID); shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("job read on a node cut off: %v (%s), want service_unavailable", err, shotd.CodeOf(err))
	}
	if _, _, err := n.jobs.Batch(acc.ID, batch.BatchID); shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("batch read on a node cut off: %v (%s), want service_unavailable", err, shotd.CodeOf(err))
	}
}

// TestJobEndForgetsItsBill: a job's bill leaves its account's ledger record once its end is
// recorded, without the sweeper: the record does not grow with the jobs of the last minutes.
func TestJobEndForgetsItsBill(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_forget", CreatedAt: time.Now()}
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, nil)
	jobs, _, err := jn.jobs.Submit(jobRequest(acc, shotd.Plan{MonthlyQuota: 5,
		PlanLimits: shotd.PlanLimits{Concurrency: 1}}, 1, false), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if job := waitJob(t, jn.jobs, acc.ID, jobs[0].JobID, 30*time.Second); job.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s", job.Status, job.ErrorMessage)
	}
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, _, err := jn.ledger.get(context.Background(), LedgerKey(acc.ID, start))
		if err == nil && r.Billed == 1 && len(r.Bills) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %+v %v; want 1 billed and the job's bill forgotten", r, err)
		}
	}
}

// TestSetOutcome: an attempt's outcome is kept unless a later attempt began meanwhile (two
// deliveries of one message overlapped); a delivery counts whichever attempt made it; a delivery
// that ended is left as it is.
func TestSetOutcome(t *testing.T) {
	pending := func(attempts int) *shotd.WebhookState {
		return &shotd.WebhookState{Status: shotd.WebhookPending, Attempts: attempts}
	}
	cases := []struct {
		name   string
		w      *shotd.WebhookState
		n      int
		status string
		want   string // the status after; "" for unchanged
	}{
		{"its own attempt failed", pending(1), 1, shotd.WebhookPending, shotd.WebhookPending},
		{"its own attempt delivered", pending(1), 1, shotd.WebhookDelivered, shotd.WebhookDelivered},
		{"an older attempt's failure", pending(2), 1, shotd.WebhookPending, ""},
		{"an older attempt's last failure", pending(2), 1, shotd.WebhookFailed, ""},
		{"an older attempt delivered", pending(2), 1, shotd.WebhookDelivered, shotd.WebhookDelivered},
		{"delivered already", &shotd.WebhookState{Status: shotd.WebhookDelivered, Attempts: 2}, 2, shotd.WebhookPending, ""},
		{"no webhook", nil, 1, shotd.WebhookDelivered, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := setOutcome(c.w, c.n, c.status, "", time.Time{})
			if c.want == "" {
				if !errors.Is(err, errUnchanged) {
					t.Fatalf("got %v, want the record unchanged", err)
				}
				return
			}
			if err != nil || c.w.Status != c.want {
				t.Fatalf("got %v, status %q; want %q", err, c.w.Status, c.want)
			}
		})
	}
}

// TestHookOutcomeNotRecorded: a delivery's final outcome that could not be written makes the
// attempt an error, so that its message comes back rather than being acknowledged with the
// record left pending for ever; a retry's outcome (the message comes back anyway) does not.
func TestHookOutcomeNotRecorded(t *testing.T) {
	j := &Jobs{cfg: JobsConfig{RetryDelays: []time.Duration{time.Second}}}
	unwritable := func(string, string, time.Time) error { return errors.New("no quorum") }
	if _, err := j.outcome(1, nil, unwritable, zerolog.Nop()); err == nil {
		t.Fatal("a delivery not recorded was taken as done")
	}
	if _, err := j.outcome(2, errors.New("receiver down"), unwritable, zerolog.Nop()); err == nil {
		t.Fatal("a last failure not recorded was taken as done")
	}
	if wait, err := j.outcome(1, errors.New("receiver down"), unwritable, zerolog.Nop()); err != nil || wait != time.Second {
		t.Fatalf("a retry: wait %v, %v; want its delay", wait, err)
	}
}

// TestBatchAttemptReadsJobsFirst: a batch webhook whose jobs cannot be read (here one is missing)
// uses up no attempt: the attempt is counted only once there is something to send.
func TestBatchAttemptReadsJobsFirst(t *testing.T) {
	nodes := startCluster(t, 1)
	sender := &recordingSender{tried: map[string]int{}, jobs: map[string]int{}, batches: map[string][]shotd.Job{}}
	jn := startJobsNode(t, nodes[0], func(context.Context, *shotd.Options) (*shotd.Output, error) { return pngOut(), nil }, sender, nil)
	ctx := context.Background()
	b := batchRecord{Batch: shotd.Batch{BatchID: "batch_unread", AccountID: "acc", JobIDs: []string{"job_missing"},
		Webhook: &shotd.WebhookState{URL: "http://127.0.0.1:1/b", Status: shotd.WebhookPending}}}
	if err := jn.jobs.create(ctx, batchKey(b.Batch.BatchID), &b); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := jn.jobs.attemptBatch(b.Batch.BatchID); err == nil {
			t.Fatal("an attempt without its jobs' records went on")
		}
	}
	got, _, err := jn.jobs.getBatch(ctx, b.Batch.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Batch.Webhook.Attempts != 0 || sender.tried[b.Batch.BatchID] != 0 {
		t.Fatalf("%d attempts counted, %d sent; want none", got.Batch.Webhook.Attempts, sender.tried[b.Batch.BatchID])
	}
}

// TestJobsQueueLimitAcrossNodes: an account's jobs waiting or rendering stay within its plan's
// queue_limit across the cluster, whichever node each request reached: the place of a job
// refused so is neither reserved nor written.
func TestJobsQueueLimitAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	idle := func(c *JobsConfig) { c.Capacity = -1 } // takes no job: the jobs stay queued
	render := func(context.Context, *shotd.Options) (*shotd.Output, error) { return pngOut(), nil }
	a := startJobsNode(t, nodes[0], render, nil, idle)
	b := startJobsNode(t, nodes[1], render, nil, idle)
	acc := shotd.Account{ID: "acc_queue", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 100, PlanLimits: shotd.PlanLimits{Concurrency: 2, QueueLimit: 3}}
	if _, _, err := a.jobs.Submit(jobRequest(acc, plan, 2, false), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.jobs.Submit(jobRequest(acc, plan, 2, true), 5*time.Second); code(err) != shotd.CodeQueueLimit {
		t.Fatalf("a bulk past the queue on another node: %v, want queue_limit", err)
	}
	if _, _, err := b.jobs.Submit(jobRequest(acc, plan, 1, false), 5*time.Second); err != nil {
		t.Fatalf("the last place: %v", err)
	}
	start, _ := shotd.BillingPeriod(acc.CreatedAt, time.Now())
	if st, err := b.ledger.State(context.Background(), LedgerKey(acc.ID, start)); err != nil || st.Reservations != 3 {
		t.Fatalf("ledger %+v %v, want the 3 queued jobs' reservations", st, err)
	}
}
