package actors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/store"
)

// TestJobUsageSurvivesKill: a process killed between a job's recorded end and the write of its
// usage (the account's settle, another transaction) leaves the end's mark; the next start bills
// the success, once.
func TestJobUsageSurvivesKill(t *testing.T) {
	if dir := os.Getenv("SHOTD_TEST_KILLED_JOBS_DIR"); dir != "" {
		killedAfterEnd(dir) // the child: never returns
	}
	dir := t.TempDir()
	st := storetest.Open(t, dir)
	acc, key := newJobAccount(t, st)
	j := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: json.RawMessage(`{"html":"<p>x</p>"}`)}
	if err := st.CreateJobs([]shotd.Job{j}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestJobUsageSurvivesKill$")
	cmd.Env = append(os.Environ(), "SHOTD_TEST_KILLED_JOBS_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err == nil || cmd.ProcessState.ExitCode() != 9 {
		t.Fatalf("the child was not killed after the job's end: %v\n%s", err, out)
	}
	st, err := store.Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.JobByID(j.JobID); err != nil || got.Status != shotd.JobSucceeded {
		t.Fatalf("job %+v %v, want succeeded", got, err)
	}
	if u, err := st.Usage(acc, time.Now()); err != nil || u.Used != 0 {
		t.Fatalf("usage before the start %+v %v: the kill came before the usage write", u, err)
	}
	e := startJobs(t, st, (&script{}).render, time.Second)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	u, err := e.accounts.Usage(acc, jobsPlan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 1 || u.Renders.Succeeded != 1 {
		t.Fatalf("after the start: %d billed, %d succeeded; want the job's success once", u.Quota.Used, u.Renders.Succeeded)
	}
	if n, err := st.BillEndedJobs(func(string) (int, bool) { return 100, true }); err != nil || n != 0 {
		t.Fatalf("counted again: %d %v", n, err)
	}
}

// killedAfterEnd runs the jobs of the store in dir and exits with 9 as soon as a job's end is
// recorded, before its account settles it.
func killedAfterEnd(dir string) {
	st, err := store.Open(dir, zerolog.Nop())
	if err != nil {
		os.Exit(3)
	}
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		os.Exit(4)
	}
	_, err = actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: shotd.RenderFunc((&script{}).render),
		Plans: map[string]shotd.Plan{"default": jobsPlan}, BusyRetry: time.Second, Log: log,
		Ended: func(shotd.Job) { os.Exit(9) }})
	if err != nil {
		os.Exit(5)
	}
	time.Sleep(20 * time.Second)
	os.Exit(6)
}

// batchReceiver counts the batch webhooks it receives.
func batchReceiver(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-batch-id") != "" {
			hits.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func waitHits(t *testing.T, hits *atomic.Int32, want int32) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); hits.Load() < want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d batch webhooks, want %d", hits.Load(), want)
		}
	}
}

// TestBatchWebhookAfterJobsFailedAtStart: a batch whose last unfinished job is failed at the start
// (its render died with the service too often, or its account's plan is gone) still gets its
// batch webhook.
func TestBatchWebhookAfterJobsFailedAtStart(t *testing.T) {
	raw := json.RawMessage(`{"url":"http://127.0.0.1/"}`)
	t.Run("interrupted too often", func(t *testing.T) {
		srv, hits := batchReceiver(t)
		st := storetest.Open(t, "")
		acc, key := newJobAccount(t, st)
		j1 := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw}
		j2 := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw}
		b := shotd.Batch{BatchID: store.NewBatchID(), AccountID: acc.ID, Webhook: &shotd.WebhookState{URL: srv.URL + "/b"}}
		if err := st.CreateJobs([]shotd.Job{j1, j2}, &b); err != nil {
			t.Fatal(err)
		}
		if _, err := st.UpdateJob(j1.JobID, func(j *shotd.Job) error { j.Status = shotd.JobSucceeded; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := st.UpdateJob(j2.JobID, func(j *shotd.Job) error {
			j.Status, j.Interrupted = shotd.JobRendering, shotd.MaxJobInterruptions-1
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		startJobs(t, st, (&script{}).render, time.Second)
		if got := waitJobFinal(t, st, j2.JobID, 5*time.Second); got.Status != shotd.JobFailed {
			t.Fatalf("job 2 %s, want failed", got.Status)
		}
		waitHits(t, hits, 1)
	})
	t.Run("plan gone", func(t *testing.T) {
		srv, hits := batchReceiver(t)
		st := storetest.Open(t, "")
		acc, key := newJobAccountOn(t, st, "gone")
		j := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: raw}
		b := shotd.Batch{BatchID: store.NewBatchID(), AccountID: acc.ID, Webhook: &shotd.WebhookState{URL: srv.URL + "/b"}}
		if err := st.CreateJobs([]shotd.Job{j}, &b); err != nil {
			t.Fatal(err)
		}
		startJobs(t, st, (&script{}).render, time.Second)
		if got := waitJobFinal(t, st, j.JobID, 5*time.Second); got.Status != shotd.JobFailed {
			t.Fatalf("job %s, want failed", got.Status)
		}
		waitHits(t, hits, 1)
	})
}

// TestJobActorRestart: a panic in the job actor (here in its QueueWaited hook, on the first
// grant) restarts it with its queue: the other jobs restored at the start still run, once each,
// and the restart restores nothing again.
func TestJobActorRestart(t *testing.T) {
	st := storetest.Open(t, "")
	acc, key := newJobAccount(t, st)
	var ids []string
	for range 3 {
		j := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: json.RawMessage(`{"html":"<p>x</p>"}`)}
		if err := st.CreateJobs([]shotd.Job{j}, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.JobID)
	}
	log := zerolog.Nop()
	sys := actors.NewSystem(log)
	t.Cleanup(sys.Shutdown)
	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int32
	render := &script{}
	jobs, err := actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: shotd.RenderFunc(render.render),
		Plans: map[string]shotd.Plan{"default": jobsPlan}, BusyRetry: time.Second, Log: log,
		QueueWaited: func(time.Duration) {
			if waits.Add(1) == 1 {
				panic("a bug in the job actor")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = jobs.Close(ctx)
	})
	ended := 0
	for end := time.Now().Add(10 * time.Second); ended < 2; time.Sleep(20 * time.Millisecond) {
		ended = 0
		for _, id := range ids {
			if j, err := st.JobByID(id); err == nil && j.Final() {
				ended++
			}
		}
		if time.Now().After(end) {
			t.Fatalf("%d of the other 2 jobs ended after the restart", ended)
		}
	}
	time.Sleep(500 * time.Millisecond) // room for a second restore's renders
	if n := render.count(); n != 2 {
		t.Fatalf("%d renders, want the 2 jobs not cut by the panic, once each", n)
	}
}
