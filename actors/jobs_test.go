package actors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/store"
	"github.com/shotd/shotd/webhook"
)

// The job actor's own logic, with a scripted render function: a busy or restarting browser pool
// cannot be produced on demand with a real Chrome. Everything else is real: bbolt in a temp dir,
// the account actors, the webhook actor and an HTTP receiver on loopback. The end-to-end job
// tests with Chrome are in httpd and cmd/shotd.

var jobsPlan = shotd.Plan{Name: "default", MonthlyQuota: 100,
	PlanLimits: shotd.PlanLimits{RequestsPerMinute: 100, StatusRequestsPerMinute: 100, Concurrency: 2,
		QueueLimit: 10, FailuresPerMinute: 100},
	Features: shotd.AllFeatures}

// script answers renders with errs in turn, then with a 1x1 PNG (or with always, when set).
type script struct {
	mu     sync.Mutex
	errs   []error
	always error
	calls  int
}

func (s *script) render(_ context.Context, o *shotd.Options) (*shotd.Output, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls
	s.calls++
	if s.always != nil {
		return nil, s.always
	}
	if i < len(s.errs) {
		return nil, s.errs[i]
	}
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 1, 1)))
	return &shotd.Output{Data: b.Bytes(), Format: "png", ContentType: "image/png", Width: 1, Height: 1, RenderMs: 1}, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

type jobsEnv struct {
	st       *store.Store
	accounts *actors.Accounts
	jobs     *actors.Jobs
	webhooks *actors.Webhooks
}

// startJobs starts the account, webhook and job actors on st; Cleanup stops them.
func startJobs(t *testing.T, st *store.Store, render shotd.RenderFunc, busyRetry time.Duration) *jobsEnv {
	t.Helper()
	return startJobsSealed(t, st, render, busyRetry, nil)
}

// startJobsSealed is startJobs with the sealer of jobs' credentials.
func startJobsSealed(t *testing.T, st *store.Store, render shotd.RenderFunc, busyRetry time.Duration, secrets actors.Secrets) *jobsEnv {
	t.Helper()
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	webhooks, err := actors.StartWebhooks(sys, actors.WebhooksConfig{Store: st, Log: log, RetryDelays: []time.Duration{50 * time.Millisecond},
		Sender: &webhook.Sender{Client: &http.Client{Timeout: 2 * time.Second}, Keys: st, PublicURL: "http://shotd.test"}})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: render, Webhooks: webhooks,
		Plans: map[string]shotd.Plan{"default": jobsPlan}, BusyRetry: busyRetry, Secrets: secrets, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := jobs.Close(ctx); err != nil {
			t.Errorf("close jobs: %v", err)
		}
		if err := webhooks.Close(ctx); err != nil {
			t.Errorf("close webhooks: %v", err)
		}
		sys.Shutdown()
	})
	return &jobsEnv{st: st, accounts: accounts, jobs: jobs, webhooks: webhooks}
}

func jobOptions(t *testing.T, js string) *shotd.Options {
	t.Helper()
	ps, err := option.ParamsFromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	o, err := option.ParseOptions(ps, option.Limits{MaxSourceBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// submitJob admits and submits one job as httpd does.
func (e *jobsEnv) submitJob(t *testing.T, acc shotd.Account, key shotd.Key, o *shotd.Options) string {
	t.Helper()
	if _, _, err := e.accounts.Admit(shotd.Admission{Account: acc, Plan: jobsPlan, Kind: shotd.AdmitJobs, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	jobs, _, err := e.jobs.Submit(shotd.JobRequest{Account: acc, Plan: jobsPlan, AccessKey: key.AccessKey, Options: []*shotd.Options{o}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return jobs[0].JobID
}

func waitJobFinal(t *testing.T, st *store.Store, id string, timeout time.Duration) shotd.Job {
	t.Helper()
	for end := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		j, err := st.JobByID(id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Final() && (j.Webhook == nil || j.Webhook.Status != shotd.WebhookPending) {
			return j
		}
		if time.Now().After(end) {
			t.Fatalf("job %s still %s", id, j.Status)
		}
	}
}

func newJobAccount(t *testing.T, st *store.Store) (shotd.Account, shotd.Key) {
	t.Helper()
	return newJobAccountOn(t, st, "default")
}

// newJobAccountOn is newJobAccount with an account on plan.
func newJobAccountOn(t *testing.T, st *store.Store, plan string) (shotd.Account, shotd.Key) {
	t.Helper()
	acc, err := st.CreateAccount("jobs@example.test", plan, true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	return acc, key
}

func TestJobRenderRetries(t *testing.T) {
	busy := shotd.Errorf(shotd.CodeRendererBusy, "busy")
	down := shotd.Errorf(shotd.CodeRendererUnavailable, "restarting")
	navFailed := shotd.Errorf(shotd.CodeNavigationFailed, "connection refused")
	cases := []struct {
		name      string
		script    *script
		busyRetry time.Duration
		status    string
		code      shotd.Code
		minCalls  int
		maxCalls  int
		succeeded int // billed
		failed    int // counted in the failure window
	}{
		{"rendered at once", &script{}, 5 * time.Second, shotd.JobSucceeded, "", 1, 1, 1, 0},
		{"busy twice, then rendered", &script{errs: []error{busy, busy}}, 5 * time.Second, shotd.JobSucceeded, "", 3, 3, 1, 0},
		{"pool restarting, then rendered", &script{errs: []error{down}}, 5 * time.Second, shotd.JobSucceeded, "", 2, 2, 1, 0},
		{"page error is final", &script{errs: []error{navFailed}}, 5 * time.Second, shotd.JobFailed, shotd.CodeNavigationFailed, 1, 1, 0, 1},
		// Retries after 250, 500, 1000 ms: the bound of 600 ms stops them after the second or third.
		{"busy past the retry bound", &script{always: busy}, 600 * time.Millisecond, shotd.JobFailed, shotd.CodeRendererBusy, 2, 4, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := storetest.Open(t, "")
			e := startJobs(t, st, c.script.render, c.busyRetry)
			acc, key := newJobAccount(t, st)
			id := e.submitJob(t, acc, key, jobOptions(t, `{"url":"http://127.0.0.1:1/","async":true}`))
			j := waitJobFinal(t, st, id, 10*time.Second)
			if j.Status != c.status || j.ErrorCode != string(c.code) {
				t.Fatalf("job %s %q after %d renders, want %s %q", j.Status, j.ErrorCode, c.script.count(), c.status, c.code)
			}
			if n := c.script.count(); n < c.minCalls || n > c.maxCalls {
				t.Fatalf("%d renders, want %d..%d", n, c.minCalls, c.maxCalls)
			}
			if c.status == shotd.JobSucceeded && (j.Result == nil || j.Result.Width != 1 || j.Result.Cache != "MISS") {
				t.Fatalf("result %+v", j.Result)
			}
			// The service's own trouble (busy) is neither billed nor counted against the account.
			for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				u, err := e.accounts.Usage(acc, jobsPlan)
				if err != nil {
					t.Fatal(err)
				}
				if u.Renders.Succeeded == c.succeeded && u.Renders.Failed == c.failed && u.Jobs.Waiting == 0 && u.Jobs.Running == 0 {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("usage %+v, want %d succeeded, %d failed, none held", u, c.succeeded, c.failed)
				}
			}
		})
	}
}

// TestJobsResume: a data directory left by a stopped or crashed service, with a queued job, a
// job cut off while rendering and an ended job whose delivery is pending. A new start renders
// the first two and delivers all three webhooks.
func TestJobsResume(t *testing.T) {
	recv := testkit.StartReceiver(t)

	dir := t.TempDir()
	st := storetest.Open(t, dir)
	acc, key := newJobAccount(t, st)
	raw, err := json.Marshal(jobOptions(t, `{"url":"http://127.0.0.1:1/","async":true}`))
	if err != nil {
		t.Fatal(err)
	}
	mk := func() shotd.Job {
		return shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw,
			Webhook: &shotd.WebhookState{URL: recv.URL(), Sign: true}}
	}
	jobs := []shotd.Job{mk(), mk(), mk()}
	if err := st.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	queued, cut, ended := jobs[0].JobID, jobs[1].JobID, jobs[2].JobID
	if _, err := st.UpdateJob(cut, func(j *shotd.Job) error { j.Status = shotd.JobRendering; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateJob(ended, func(j *shotd.Job) error {
		j.Status, j.ErrorCode, j.ErrorMessage = shotd.JobFailed, string(shotd.CodeTimeout), "slow"
		j.Webhook.Attempts = 1 // one attempt was made (or under way) before the stop
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	sc := &script{}
	e := startJobs(t, st, sc.render, time.Second)
	for _, id := range []string{queued, cut, ended} {
		j := waitJobFinal(t, st, id, 10*time.Second)
		want := shotd.JobSucceeded
		if id == ended {
			want = shotd.JobFailed
		}
		if j.Status != want || j.Webhook.Status != shotd.WebhookDelivered {
			t.Fatalf("job %s: %s, webhook %+v; want %s, delivered", id, j.Status, j.Webhook, want)
		}
		if n := recv.Acknowledged()[id]; n != 1 {
			t.Fatalf("job %s: %d deliveries", id, n)
		}
	}
	if j, _ := st.JobByID(ended); j.Webhook.Attempts != 2 {
		t.Fatalf("the resumed delivery is attempt %d, want 2", j.Webhook.Attempts)
	}
	if n := sc.count(); n != 2 {
		t.Fatalf("%d renders, want 2 (the queued and the cut-off job; never the ended one)", n)
	}
	// The restored jobs held queue places and reservations; they are all given back.
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		u, err := e.accounts.Usage(acc, jobsPlan)
		if err != nil {
			t.Fatal(err)
		}
		if u.Renders.Succeeded == 2 && u.Quota.Used == 2 && u.Quota.Remaining == jobsPlan.MonthlyQuota-2 && u.Jobs.Waiting == 0 && u.Jobs.Running == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("usage %+v", u)
		}
	}
	if n := len(recv.Deliveries()); n != 3 {
		t.Fatalf("%d deliveries in all, want 3", n)
	}
}

// TestSubmitTooLate: jobs whose write could not start within the submit's timeout are not created
// (nothing renders) and give their queue places back, so a client told 503 has left nothing behind.
func TestSubmitTooLate(t *testing.T) {
	st := storetest.Open(t, "")
	sc := &script{}
	e := startJobs(t, st, sc.render, time.Second)
	acc, key := newJobAccount(t, st)
	o := jobOptions(t, `{"html":"<p>late</p>"}`)
	opts := make([]*shotd.Options, jobsPlan.QueueLimit)
	for i := range opts {
		opts[i] = o
	}
	if _, _, err := e.accounts.Admit(shotd.Admission{Account: acc, Plan: jobsPlan, Kind: shotd.AdmitJobs, Jobs: len(opts)}); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.jobs.Submit(shotd.JobRequest{Account: acc, Plan: jobsPlan, AccessKey: key.AccessKey, Options: opts,
		Batch: true}, -time.Millisecond)
	if code := shotd.CodeOf(err); code != shotd.CodeServiceUnavailable {
		t.Fatalf("late submit: %v, want %s", err, shotd.CodeServiceUnavailable)
	}
	// The whole queue is free again: the same number of jobs is admitted and they run.
	var admitErr error
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, _, admitErr = e.accounts.Admit(shotd.Admission{Account: acc, Plan: jobsPlan, Kind: shotd.AdmitJobs, Jobs: len(opts)}); admitErr == nil {
			break
		}
	}
	if admitErr != nil {
		t.Fatalf("queue places not given back: %v", admitErr)
	}
	jobs, _, err := e.jobs.Submit(shotd.JobRequest{Account: acc, Plan: jobsPlan, AccessKey: key.AccessKey, Options: opts, Batch: true}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if got := waitJobFinal(t, st, j.JobID, 10*time.Second); got.Status != shotd.JobSucceeded {
			t.Errorf("job %s: %s", j.JobID, got.Status)
		}
	}
	if n := sc.count(); n != len(opts) {
		t.Errorf("%d renders, want %d: the late jobs must never run", n, len(opts))
	}
}

// TestJobCutByShutdown: a job whose render the shutdown breaks (Close gave up waiting, then the
// browser went away under it) is not failed: it stays rendering in the store, delivers no
// webhook, and the next start renders it.
func TestJobCutByShutdown(t *testing.T) {
	hooks := testkit.StartReceiver(t)
	st := storetest.Open(t, "")
	acc, key := newJobAccount(t, st)

	// The render ends only when Close cancels it, with an error a page could cause too: that
	// the job was cut is known from Close, not guessed from the error's code.
	started := make(chan struct{})
	var once sync.Once
	cut := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return nil, shotd.Errorf(shotd.CodeNavigationFailed, "the page did not answer")
	}
	e := startJobs(t, st, cut, time.Second)
	id := e.submitJob(t, acc, key, jobOptions(t, `{"html":"<p>cut</p>","webhook_url":"`+hooks.URL()+`"}`))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.jobs.Close(ctx); err == nil {
		t.Fatal("Close returned while the job was rendering")
	}
	// The cut render ends at once: a second Close waits for it (and would fail if the render
	// were left to run out its budget).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := e.jobs.Close(ctx2); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	j, err := st.JobByID(id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != shotd.JobQueued || j.ErrorCode != "" {
		t.Fatalf("job after the cut: %s %s, want queued (not counted as a render that died with the service)", j.Status, j.ErrorCode)
	}

	// The next start renders it, and only then is the webhook sent.
	sc := &script{}
	startJobs(t, st, sc.render, time.Second)
	if j := waitJobFinal(t, st, id, 10*time.Second); j.Status != shotd.JobSucceeded {
		t.Fatalf("job after the restart: %s", j.Status)
	}
	if n := len(hooks.Deliveries()); n != 1 {
		t.Errorf("%d webhook deliveries, want 1 (after the restart only)", n)
	}
}

// TestJobEndingAtShutdownIsBilled: a job that succeeds while Close waits for it is billed. Its
// outcome is a message to the job actor, sent just before Close stops waiting: stopping the
// actor must not overtake it (a Stop is a system message, handled before any queued user
// message; the billing, and the account's usage write, were lost that way).
func TestJobEndingAtShutdownIsBilled(t *testing.T) {
	for i := range 8 {
		st := storetest.Open(t, "")
		acc, key := newJobAccount(t, st)
		started, release := make(chan struct{}), make(chan struct{})
		render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			close(started)
			<-release
			return &shotd.Output{Data: []byte("png"), Format: shotd.FormatPNG, ContentType: "image/png", Width: 1, Height: 1}, nil
		}
		e := startJobs(t, st, render, time.Second)
		id := e.submitJob(t, acc, key, jobOptions(t, `{"html":"<p>last</p>"}`))
		<-started
		closed := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			closed <- e.jobs.Close(ctx)
		}()
		time.Sleep(20 * time.Millisecond) // Close is waiting for the job
		close(release)
		if err := <-closed; err != nil {
			t.Fatalf("run %d: Close: %v", i, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := e.accounts.Close(ctx); err != nil {
			t.Fatalf("run %d: close accounts: %v", i, err)
		}
		cancel()
		if j, err := st.JobByID(id); err != nil || j.Status != shotd.JobSucceeded {
			t.Fatalf("run %d: job %+v, %v: want succeeded", i, j, err)
		}
		u, err := st.Usage(acc, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if u.Used != 1 || u.Succeeded != 1 {
			t.Fatalf("run %d: usage %+v after a job that succeeded during the shutdown, want 1 billed", i, u)
		}
	}
}

// TestRestoredJobsOfARemovedPlan: jobs found at start for an account whose plan is no longer in
// the config can never get a slot: they fail (as the account's requests do) and deliver their
// webhooks, instead of staying queued for good. Nothing renders.
func TestRestoredJobsOfARemovedPlan(t *testing.T) {
	hooks := testkit.StartReceiver(t)
	st := storetest.Open(t, "")
	acc, key := newJobAccountOn(t, st, "discontinued")
	raw, err := json.Marshal(jobOptions(t, `{"html":"<p>x</p>","async":true}`))
	if err != nil {
		t.Fatal(err)
	}
	jobs := []shotd.Job{
		{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw, Webhook: &shotd.WebhookState{URL: hooks.URL(), Sign: true}},
		{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw},
	}
	if err := st.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateJob(jobs[1].JobID, func(j *shotd.Job) error { j.Status = shotd.JobRendering; return nil }); err != nil {
		t.Fatal(err)
	}
	sc := &script{}
	startJobs(t, st, sc.render, time.Second) // its plans: "default" only
	for _, j := range jobs {
		got := waitJobFinal(t, st, j.JobID, 10*time.Second)
		if got.Status != shotd.JobFailed || got.ErrorCode != string(shotd.CodeInternalError) {
			t.Fatalf("job %s: %s %s, want failed internal_error", j.JobID, got.Status, got.ErrorCode)
		}
	}
	for end := time.Now().Add(5 * time.Second); len(hooks.Deliveries()) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d webhook deliveries, want 1", len(hooks.Deliveries()))
		}
	}
	if n := sc.count(); n != 0 {
		t.Fatalf("%d renders, want none", n)
	}
}

// TestJobEndNotRecorded: when the job's final write fails (here its record is gone from the
// real store when the render ends), the success is not billed: the job is left for the next
// start to render, which bills it then.
func TestJobEndNotRecorded(t *testing.T) {
	st := storetest.Open(t, "")
	acc, key := newJobAccount(t, st)
	var id atomic.Value
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		// The final UpdateJob finds no job: a write that fails.
		err := st.DB().Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("jobs")).Delete([]byte(id.Load().(string))) })
		if err != nil {
			return nil, err
		}
		return &shotd.Output{Data: []byte("png"), Format: shotd.FormatPNG, ContentType: "image/png", Width: 1, Height: 1}, nil
	}
	submitted := make(chan struct{})
	e := startJobs(t, st, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		<-submitted
		return render(ctx, o)
	}, time.Second)
	id.Store(e.submitJob(t, acc, key, jobOptions(t, `{"html":"<p>x</p>"}`)))
	close(submitted)
	// The job's slot and reservation come back, unbilled.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		u, err := e.accounts.Usage(acc, jobsPlan)
		if err != nil {
			t.Fatal(err)
		}
		if u.Jobs.Waiting == 0 && u.Jobs.Running == 0 {
			if u.Quota.Used != 0 || u.Renders.Succeeded != 0 {
				t.Fatalf("usage %+v: a job whose end was not recorded was billed", u)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatalf("usage %+v: the job still holds its place", u)
		}
	}
}

// keyChanged seals with one key and opens with another, as after data_dir's key was replaced.
type keyChanged struct{ seal, open *objstore.Sealer }

func (k keyChanged) SealOptions(o *shotd.Options) (*shotd.Options, error) {
	return k.seal.SealOptions(o)
}
func (k keyChanged) OpenOptions(o *shotd.Options) error { return k.open.OpenOptions(o) }

// TestJobCredentialsUnreadable: a job whose credentials were sealed with another key fails with
// the sealer's code and reason, storage_failed for storage credentials, and renders nothing.
func TestJobCredentialsUnreadable(t *testing.T) {
	st := storetest.Open(t, "")
	seal, err := objstore.OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := objstore.OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var renders atomic.Int32
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		renders.Add(1)
		return &shotd.Output{Data: []byte("png"), Format: "png", ContentType: "image/png"}, nil
	}
	e := startJobsSealed(t, st, render, time.Second, keyChanged{seal: seal, open: other})
	acc, key := newJobAccount(t, st)
	o := jobOptions(t, `{"url":"http://127.0.0.1/","async":true,"store":true,"storage_bucket":"shots","storage_path":"p","storage_access_key_id":"AKID","storage_secret_access_key":"secret-value"}`)
	j := waitJobFinal(t, st, e.submitJob(t, acc, key, o), 10*time.Second)
	if j.Status != shotd.JobFailed || j.ErrorCode != string(shotd.CodeStorageFailed) || !strings.Contains(j.ErrorMessage, "key changed") {
		t.Fatalf("job %s %s %q, want failed storage_failed saying the key changed", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	if n := renders.Load(); n != 0 {
		t.Fatalf("%d renders of a job whose credentials could not be read", n)
	}
}

// TestJobInterruptedTooOften: a job whose render died with the service at
// shotd.MaxJobInterruptions starts fails with internal_error at the next start, unrendered, and
// its webhook is delivered; before, it was queued again at every start, and a page that killed
// the process crash-looped the service.
func TestJobInterruptedTooOften(t *testing.T) {
	hooks := testkit.StartReceiver(t)
	st := storetest.Open(t, "")
	acc, key := newJobAccount(t, st)
	raw, err := json.Marshal(jobOptions(t, `{"html":"<p>crash</p>"}`))
	if err != nil {
		t.Fatal(err)
	}
	job := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw,
		Webhook: &shotd.WebhookState{URL: hooks.URL(), Sign: true}}
	if err := st.CreateJobs([]shotd.Job{job}, nil); err != nil {
		t.Fatal(err)
	}
	// Two starts found it rendering already; the process died under it once more.
	if _, err := st.UpdateJob(job.JobID, func(j *shotd.Job) error {
		j.Status, j.Interrupted = shotd.JobRendering, shotd.MaxJobInterruptions-1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sc := &script{}
	startJobs(t, st, sc.render, time.Second)
	j := waitJobFinal(t, st, job.JobID, 10*time.Second)
	if j.Status != shotd.JobFailed || j.ErrorCode != string(shotd.CodeInternalError) || j.Webhook.Status != shotd.WebhookDelivered {
		t.Fatalf("job: %s %s, webhook %+v; want failed internal_error, delivered", j.Status, j.ErrorCode, j.Webhook)
	}
	if n := sc.count(); n != 0 {
		t.Fatalf("%d renders of a job that died with the service %d times", n, shotd.MaxJobInterruptions)
	}
}

// TestJobRequestSecretsSealed: a job's headers, cookies and authorization are kept in its
// record only sealed (they were in clear, unlike the storage and proxy credentials), and the
// render gets them back whole.
func TestJobRequestSecretsSealed(t *testing.T) {
	dir := t.TempDir()
	st := storetest.Open(t, dir)
	seal, err := objstore.OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *shotd.Options, 1)
	render := func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		got <- o
		return (&script{}).render(ctx, o)
	}
	e := startJobsSealed(t, st, render, time.Second, seal)
	acc, key := newJobAccount(t, st)
	o := jobOptions(t, `{"url":"http://127.0.0.1/","async":true,"headers":["X-Api-Key: hdr-s3cret"],
		"cookies":["session=cookie-s3cret; Domain=127.0.0.1"],"authorization":"Bearer auth-s3cret"}`)
	j := waitJobFinal(t, st, e.submitJob(t, acc, key, o), 10*time.Second)
	if j.Status != shotd.JobSucceeded {
		t.Fatalf("job %s %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	for _, secret := range []string{"hdr-s3cret", "cookie-s3cret", "auth-s3cret"} {
		if strings.Contains(string(j.Options), secret) {
			t.Errorf("the job record holds %s in clear: %s", secret, j.Options)
		}
	}
	r := <-got
	if len(r.Headers) != 1 || r.Headers[0].Value != "hdr-s3cret" || len(r.Cookies) != 1 || r.Cookies[0].Value != "cookie-s3cret" ||
		r.Authorization != "Bearer auth-s3cret" || r.SealedRequest != nil {
		t.Fatalf("the render got headers %+v, cookies %+v, authorization %q", r.Headers, r.Cookies, r.Authorization)
	}
}

// TestJobBrowserLostBounded: a job whose every render loses its browser (a page that takes
// Chrome down, each replaced by the liveness watch) fails after three such renders, and the
// failure is the account's; it used to retry, released and uncounted, for the whole busy-retry
// window, killing a browser each time.
func TestJobBrowserLostBounded(t *testing.T) {
	st := storetest.Open(t, "")
	acc, key := newJobAccount(t, st)
	sc := &script{always: shotd.Wrap(shotd.CodeRendererUnavailable, fmt.Errorf("%w: chrome stopped", actors.ErrBrowserLost), "the browser stopped during the render")}
	e := startJobs(t, st, sc.render, time.Minute)
	j := waitJobFinal(t, st, e.submitJob(t, acc, key, jobOptions(t, `{"html":"<p>stall</p>"}`)), 30*time.Second)
	if j.Status != shotd.JobFailed || j.ErrorCode != string(shotd.CodeRendererUnavailable) {
		t.Fatalf("job %s %s %q", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	if n := sc.count(); n != 3 {
		t.Fatalf("%d renders, want 3", n)
	}
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		u, err := e.accounts.Usage(acc, jobsPlan)
		if err != nil {
			t.Fatal(err)
		}
		if u.Renders.Failed == 1 && u.Jobs.Running == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("usage %+v: want one failure", u.Renders)
		}
	}
}

// TestNextAttempt: the schedule of deliveries that job and batch webhooks share, on a single
// node and in a cluster.
func TestNextAttempt(t *testing.T) {
	delays := []time.Duration{time.Second, time.Minute}
	refused := shotd.Errorf(shotd.CodeHostNotAllowed, "refused by the egress guard")
	for _, c := range []struct {
		n       int
		err     error
		status  string
		wait    time.Duration
		outcome string
	}{
		{1, nil, shotd.WebhookDelivered, 0, "delivered"},
		{1, errors.New("503"), shotd.WebhookPending, time.Second, "retry"},
		{2, errors.New("503"), shotd.WebhookPending, time.Minute, "retry"},
		{3, errors.New("503"), shotd.WebhookFailed, 0, "failed"},
		{1, refused, shotd.WebhookFailed, 0, "failed"},
	} {
		status, wait, outcome := actors.NextAttempt(c.n, c.err, delays)
		if status != c.status || wait != c.wait || outcome != c.outcome {
			t.Errorf("attempt %d, %v: %s %v %s, want %s %v %s", c.n, c.err, status, wait, outcome, c.status, c.wait, c.outcome)
		}
	}
}
