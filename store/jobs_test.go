package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

const optsJSON = `{"url":"https://example.com","format":"png"}`

// newJob is a job as the job actor makes it before CreateJobs.
func newJob(accountID string, webhook bool) shotd.Job {
	j := shotd.Job{JobID: NewJobID(), AccountID: accountID, AccessKey: "ak_test", Options: json.RawMessage(optsJSON)}
	if webhook {
		j.Webhook = &shotd.WebhookState{URL: "http://127.0.0.1:9/hook", Sign: true}
	}
	return j
}

// jobText is the whole of j, hidden webhook fields included, to compare jobs by value.
func jobText(j shotd.Job) string {
	r := toRecord(j)
	opts, _ := json.Marshal(string(r.Options)) // as a string: options that are not JSON compare too
	r.Options = opts
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func jobsText(jobs []shotd.Job) string {
	var s string
	for _, j := range jobs {
		s += jobText(j) + "\n"
	}
	return s
}

func createJob(t *testing.T, s *Store, accountID string, webhook bool) shotd.Job {
	t.Helper()
	jobs := []shotd.Job{newJob(accountID, webhook)}
	if err := s.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	return jobs[0]
}

func createBatch(t *testing.T, s *Store, accountID string, n int, webhook bool) (shotd.Batch, []shotd.Job) {
	t.Helper()
	jobs := make([]shotd.Job, n)
	for i := range jobs {
		jobs[i] = newJob(accountID, webhook)
	}
	b := shotd.Batch{BatchID: NewBatchID(), AccountID: accountID}
	if err := s.CreateJobs(jobs, &b); err != nil {
		t.Fatal(err)
	}
	return b, jobs
}

func updateJob(t *testing.T, s *Store, jobID string, fn func(*shotd.Job)) shotd.Job {
	t.Helper()
	j, err := s.UpdateJob(jobID, func(j *shotd.Job) error { fn(j); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func succeed(j *shotd.Job) {
	j.Status = shotd.JobSucceeded
	j.Result = &shotd.JobResult{FileID: "f_0123456789abcdef0123", ExpiresAt: time.Now().Add(time.Hour),
		Format: "png", ContentType: "image/png", SizeBytes: 1234, RenderMs: 56, Cache: "MISS", Width: 1280, Height: 720}
}

func fail(j *shotd.Job) {
	j.Status = shotd.JobFailed
	j.ErrorCode, j.ErrorMessage = "navigation_timeout", "The page did not load in time."
}

// indexes reads what the index buckets say of jobID: active, pending, and how many done entries
// name it.
func indexes(t *testing.T, s *Store, jobID string) (active, pending bool, done int) {
	t.Helper()
	err := s.db.View(func(tx *bbolt.Tx) error {
		active = tx.Bucket(bucketJobsActive).Get([]byte(jobID)) != nil
		pending = tx.Bucket(bucketWebhooksPending).Get([]byte(jobID)) != nil
		return tx.Bucket(bucketJobsDone).ForEach(func(k, _ []byte) error {
			if string(k[8:]) == jobID {
				done++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return active, pending, done
}

// checkIndexes fails the test unless the three index buckets hold exactly what the stored jobs
// call for.
func checkIndexes(t *testing.T, s *Store) {
	t.Helper()
	want := map[string][]string{}
	got := map[string][]string{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var r jobRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			j := r.job()
			if !j.Final() {
				want["active"] = append(want["active"], j.JobID)
			}
			if webhookPending(j) {
				want["pending"] = append(want["pending"], j.JobID)
			}
			if j.Final() {
				want["done"] = append(want["done"], string(doneKey(r.UpdatedAt, r.JobID)))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for name, b := range map[string][]byte{"active": bucketJobsActive, "pending": bucketWebhooksPending, "done": bucketJobsDone} {
			keys, err := indexKeys(tx.Bucket(b))
			if err != nil {
				return err
			}
			got[name] = keys
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"active", "pending", "done"} {
		w, g := want[name], got[name]
		slices.Sort(w)
		slices.Sort(g)
		if !slices.Equal(w, g) {
			t.Errorf("index %s holds %q, the jobs call for %q", name, g, w)
		}
	}
}

var idForm = regexp.MustCompile(`^(job|bat)_[A-Za-z0-9_-]{22}$`)

func TestNewIDs(t *testing.T) {
	tests := []struct {
		name   string
		gen    func() string
		prefix string
	}{
		{"job", NewJobID, "job_"},
		{"batch", NewBatchID, "bat_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 1000 {
				id := tt.gen()
				if !idForm.MatchString(id) || id[:4] != tt.prefix {
					t.Fatalf("id %q: want %s and 22 url-safe characters (128 bits)", id, tt.prefix)
				}
				if seen[id] {
					t.Fatalf("id %q made twice", id)
				}
				seen[id] = true
			}
		})
	}
}

// TestJobIDsInTimeOrder: a job id begins with its time, so that ids sort as they were made (a
// commit's new jobs then share leaves), whatever the carries between its characters; the rest
// is random.
func TestJobIDsInTimeOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for range 10000 {
		a := base.Add(time.Duration(r.Int63n(int64(40 * 365 * 24 * time.Hour))))
		b := a.Add(time.Duration(1+r.Int63n(1<<r.Intn(41))) * time.Millisecond) // a later millisecond, up to 2101
		ia, ib := timeOrderedID(JobIDPrefix, a), timeOrderedID(JobIDPrefix, b)
		if !idForm.MatchString(ia) || ia >= ib {
			t.Fatalf("id %s made at %v, id %s at %v: want the form and the order", ia, a, ib, b)
		}
	}
	seen := map[string]bool{}
	for range 1000 {
		id := timeOrderedID(JobIDPrefix, base)
		if seen[id[4+jobIDTimeChars:]] {
			t.Fatalf("id %s: its random part made twice", id)
		}
		seen[id[4+jobIDTimeChars:]] = true
	}
}

// TestCreateJobsShareLeaves: a commit of jobs made one after another writes their records into
// the same few pages, in a database that holds many jobs already: the pages a commit writes are
// what it costs.
func TestCreateJobsShareLeaves(t *testing.T) {
	s, _ := openStore(t)
	for range 20 {
		jobs := make([]shotd.Job, 100)
		for i := range jobs {
			jobs[i] = newJob("acc_a", false)
		}
		if err := s.CreateJobs(jobs, nil); err != nil {
			t.Fatal(err)
		}
	}
	jobs := make([]shotd.Job, 16)
	for i := range jobs {
		jobs[i] = newJob("acc_a", false)
	}
	st := s.db.Stats()
	before := st.TxStats.GetPageCount()
	if err := s.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	st = s.db.Stats()
	// Each job in a leaf of its own would be 32 leaves and more: 16 in jobs, 16 in jobs_active.
	if pages := st.TxStats.GetPageCount() - before; pages > 12 {
		t.Errorf("creating 16 jobs wrote %d pages, want 12 or fewer", pages)
	}
	checkIndexes(t, s)
}

// TestJobsOfRandomIDs: a database holding jobs with the random ids made before job ids began with
// their time keeps working after a reopen, beside new jobs: read, updated, requeued in order of
// creation, swept.
func TestJobsOfRandomIDs(t *testing.T) {
	s, dir := openStore(t)
	var old []shotd.Job
	for i := range 30 {
		j := newJob("acc_a", i%3 == 0)
		j.JobID = JobIDPrefix + randomToken(jobIDBytes) // as NewJobID made them
		if err := s.CreateJobs([]shotd.Job{j}, nil); err != nil {
			t.Fatal(err)
		}
		old = append(old, j)
	}
	updateJob(t, s, old[0].JobID, succeed)
	updateJob(t, s, old[1].JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	s = reopen(t, s, dir)
	defer s.Close(context.Background())
	var fresh []shotd.Job
	for range 30 {
		fresh = append(fresh, createJob(t, s, "acc_a", false))
	}
	for _, j := range append(slices.Clone(old), fresh...) {
		if got, err := s.Job("acc_a", j.JobID); err != nil || got.CreatedAt.IsZero() {
			t.Fatalf("job %s: %+v, %v", j.JobID, got, err)
		}
	}
	updateJob(t, s, old[2].JobID, fail)
	updateJob(t, s, fresh[0].JobID, succeed)
	queued, failed, err := s.RequeueUnfinished()
	if err != nil || len(failed) != 0 || len(queued) != len(old)+len(fresh)-3 {
		t.Fatalf("RequeueUnfinished = %d queued, %d failed, %v; want %d queued", len(queued), len(failed), err, len(old)+len(fresh)-3)
	}
	want := slices.Concat(old[1:2], old[3:], fresh[1:]) // the rendering one created first
	for i, j := range queued {
		if j.JobID != want[i].JobID {
			t.Fatalf("queued[%d] = %s, want %s: in order of creation", i, j.JobID, want[i].JobID)
		}
	}
	if n, err := s.SweepNow(time.Now().Add(JobRetention + time.Minute)); err != nil || n != 2 {
		t.Fatalf("SweepNow = %d, %v; want the 2 finished jobs without a pending delivery", n, err)
	}
	checkIndexes(t, s)
}

func TestCreateJobs(t *testing.T) {
	s, _ := openStore(t)
	tests := []struct {
		name    string
		n       int
		batch   bool
		webhook bool
	}{
		{"single", 1, false, false},
		{"single with webhook", 1, false, true},
		{"batch", 3, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := make([]shotd.Job, tt.n)
			for i := range jobs {
				jobs[i] = newJob("acc_a", tt.webhook)
			}
			var b *shotd.Batch
			if tt.batch {
				b = &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a"}
			}
			before := time.Now()
			if err := s.CreateJobs(jobs, b); err != nil {
				t.Fatal(err)
			}
			for i, j := range jobs {
				if j.Status != shotd.JobQueued || j.CreatedAt.Before(before) || !j.UpdatedAt.Equal(j.CreatedAt) ||
					j.CreatedAt.Location() != time.UTC {
					t.Fatalf("job %d written back as %+v", i, j)
				}
				if tt.batch && (j.BatchID != b.BatchID || j.Index != i || b.JobIDs[i] != j.JobID) {
					t.Fatalf("job %d: batch %s index %d, batch lists %v", i, j.BatchID, j.Index, b.JobIDs)
				}
				stored, err := s.Job("acc_a", j.JobID)
				if err != nil {
					t.Fatal(err)
				}
				if jobText(stored) != jobText(j) {
					t.Fatalf("stored\n%+v\nwant\n%+v", stored, j)
				}
				if tt.webhook && (stored.Webhook == nil || !stored.Webhook.Sign || stored.Webhook.Status != "") {
					t.Fatalf("webhook stored as %+v", stored.Webhook)
				}
				if a, p, d := indexes(t, s, j.JobID); !a || p || d != 0 {
					t.Fatalf("indexes active %v pending %v done %d; want a new job active only", a, p, d)
				}
			}
			if tt.batch {
				got, _, err := s.Batch("acc_a", b.BatchID)
				if err != nil || !slices.Equal(got.JobIDs, b.JobIDs) || !got.CreatedAt.Equal(jobs[0].CreatedAt) {
					t.Fatalf("Batch = %+v, %v; want %+v", got, err, *b)
				}
			}
		})
	}
	checkIndexes(t, s)
}

// TestCreateJobsRefused: every refusal stores nothing at all, even when only the last job of a
// batch is at fault.
func TestCreateJobsRefused(t *testing.T) {
	s, _ := openStore(t)
	existing := createJob(t, s, "acc_a", false)
	existingBatch, _ := createBatch(t, s, "acc_a", 1, false)

	jobs := func(n int, edit func([]shotd.Job)) []shotd.Job {
		js := make([]shotd.Job, n)
		for i := range js {
			js[i] = newJob("acc_a", true)
		}
		if edit != nil {
			edit(js)
		}
		return js
	}
	batch := func() *shotd.Batch { return &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a"} }
	tests := []struct {
		name         string
		jobs         []shotd.Job
		batch        *shotd.Batch
		wantConflict bool
	}{
		{"no jobs", nil, nil, false},
		{"empty job id", jobs(1, func(js []shotd.Job) { js[0].JobID = "" }), nil, false},
		{"no account", jobs(1, func(js []shotd.Job) { js[0].AccountID = "" }), nil, false},
		{"not queued", jobs(1, func(js []shotd.Job) { js[0].Status = shotd.JobSucceeded }), nil, false},
		{"no options", jobs(1, func(js []shotd.Job) { js[0].Options = nil }), nil, false},
		{"options not JSON", jobs(1, func(js []shotd.Job) { js[0].Options = json.RawMessage(`{"url":`) }), nil, false},
		{"webhook without url", jobs(1, func(js []shotd.Job) { js[0].Webhook.URL = "" }), nil, false},
		{"webhook already pending", jobs(1, func(js []shotd.Job) { js[0].Webhook.Status = shotd.WebhookPending }), nil, false},
		{"batch id without batch", jobs(1, func(js []shotd.Job) { js[0].BatchID = "bat_x" }), nil, false},
		{"same id twice", jobs(3, func(js []shotd.Job) { js[2].JobID = js[0].JobID }), batch(), true},
		{"last job of a batch exists", jobs(3, func(js []shotd.Job) { js[2].JobID = existing.JobID }), batch(), true},
		{"single job exists", jobs(1, func(js []shotd.Job) { js[0].JobID = existing.JobID }), nil, true},
		{"batch exists", jobs(2, nil), &shotd.Batch{BatchID: existingBatch.BatchID, AccountID: "acc_a"}, true},
		{"batch without id", jobs(2, nil), &shotd.Batch{AccountID: "acc_a"}, false},
		{"job of another account in the batch", jobs(2, func(js []shotd.Job) { js[1].AccountID = "acc_b" }), batch(), false},
		{"job names another batch", jobs(2, func(js []shotd.Job) { js[1].BatchID = "bat_other" }), batch(), false},
		{"job index disagrees", jobs(2, func(js []shotd.Job) { js[1].Index = 5 }), batch(), false},
		{"batch lists other jobs", jobs(2, nil), &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a", JobIDs: []string{"job_x", "job_y"}}, false},
		{"batch lists fewer jobs", jobs(2, nil), &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a", JobIDs: []string{"job_x"}}, false},
	}
	all := [][]byte{bucketJobs, bucketBatches, bucketJobsActive, bucketWebhooksPending, bucketJobsDone}
	counts := func() []int {
		var n []int
		for _, b := range all {
			n = append(n, countKeys(t, s, b))
		}
		return n
	}
	want := counts()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := slices.Clone(tt.jobs)
			var givenBatch shotd.Batch
			if tt.batch != nil {
				givenBatch = *tt.batch
			}
			err := s.CreateJobs(tt.jobs, tt.batch)
			if err == nil {
				t.Fatal("CreateJobs succeeded")
			}
			if errors.Is(err, ErrConflict) != tt.wantConflict {
				t.Fatalf("CreateJobs = %v; want conflict %v", err, tt.wantConflict)
			}
			if got := counts(); !slices.Equal(got, want) {
				t.Fatalf("keys in %q: %v, want %v: a refused write stored something", all, got, want)
			}
			if jobsText(tt.jobs) != jobsText(given) || tt.batch != nil && fmt.Sprint(*tt.batch) != fmt.Sprint(givenBatch) {
				t.Fatal("a refused CreateJobs changed its arguments")
			}
		})
	}
}

func TestJobOwnership(t *testing.T) {
	s, _ := openStore(t)
	j := createJob(t, s, "acc_a", false)
	tests := []struct {
		name      string
		accountID string
		jobID     string
		wantErr   bool
	}{
		{"owner", "acc_a", j.JobID, false},
		{"another account", "acc_b", j.JobID, true},
		{"no account", "", j.JobID, true},
		{"unknown id", "acc_a", NewJobID(), true},
		{"empty id", "acc_a", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Job(tt.accountID, tt.jobID)
			if tt.wantErr {
				if !errors.Is(err, shotd.ErrNotFound) {
					t.Fatalf("Job = %v; want not found", err)
				}
				if want := fmt.Sprintf("store: job %s: %v", tt.jobID, shotd.ErrNotFound); err.Error() != want {
					t.Fatalf("error %q, want %q: a foreign job must read like an unknown one", err, want)
				}
				return
			}
			if err != nil || got.JobID != j.JobID {
				t.Fatalf("Job = %+v, %v", got, err)
			}
		})
	}
	if got, err := s.JobByID(j.JobID); err != nil || got.AccountID != "acc_a" {
		t.Fatalf("JobByID = %+v, %v", got, err)
	}
	if _, err := s.JobByID(NewJobID()); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("JobByID unknown = %v", err)
	}
}

// TestUpdateJobLifeCycle walks a job with a webhook and one without through every transition and
// checks the record and the indexes after each.
func TestUpdateJobLifeCycle(t *testing.T) {
	s, _ := openStore(t)
	withHook := createJob(t, s, "acc_a", true)
	noHook := createJob(t, s, "acc_a", false)
	retryAt := time.Now().Add(30 * time.Second).UTC().Round(0)

	steps := []struct {
		name        string
		job         string
		fn          func(*shotd.Job)
		wantStatus  string
		wantHook    string // webhook status; "-" for no webhook
		wantActive  bool
		wantPending bool
		check       func(t *testing.T, j shotd.Job)
	}{
		{"queued to rendering", withHook.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering }, shotd.JobRendering, "", true, false, nil},
		{"back to queued (restart)", withHook.JobID, func(j *shotd.Job) { j.Status = shotd.JobQueued }, shotd.JobQueued, "", true, false, nil},
		{"rendering again", withHook.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering }, shotd.JobRendering, "", true, false, nil},
		{"succeeded: delivery pending at once", withHook.JobID, succeed, shotd.JobSucceeded, shotd.WebhookPending, false, true,
			func(t *testing.T, j shotd.Job) {
				if j.Result == nil || j.Result.FileID == "" || j.Webhook.NextAttemptAt.IsZero() ||
					j.Webhook.NextAttemptAt.After(j.UpdatedAt) {
					t.Fatalf("result %+v, webhook %+v: want the result and a delivery due now", j.Result, j.Webhook)
				}
			}},
		{"attempt 1 failed, retry later", withHook.JobID, func(j *shotd.Job) {
			j.Webhook.Attempts++
			j.Webhook.LastError = "status 500"
			j.Webhook.NextAttemptAt = retryAt
		}, shotd.JobSucceeded, shotd.WebhookPending, false, true, func(t *testing.T, j shotd.Job) {
			if j.Webhook.Attempts != 1 || j.Webhook.LastError != "status 500" || !j.Webhook.NextAttemptAt.Equal(retryAt) {
				t.Fatalf("webhook %+v", j.Webhook)
			}
		}},
		{"attempt 2 delivered", withHook.JobID, func(j *shotd.Job) {
			j.Webhook.Attempts++
			j.Webhook.Status = shotd.WebhookDelivered
		}, shotd.JobSucceeded, shotd.WebhookDelivered, false, false, nil},
		{"no webhook: rendering", noHook.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering }, shotd.JobRendering, "-", true, false, nil},
		{"no webhook: failed", noHook.JobID, fail, shotd.JobFailed, "-", false, false, func(t *testing.T, j shotd.Job) {
			if j.ErrorCode != "navigation_timeout" || j.ErrorMessage == "" {
				t.Fatalf("error %q %q", j.ErrorCode, j.ErrorMessage)
			}
		}},
		{"no webhook: touched after the end", noHook.JobID, func(j *shotd.Job) {}, shotd.JobFailed, "-", false, false, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before, err := s.JobByID(st.job)
			if err != nil {
				t.Fatal(err)
			}
			got := updateJob(t, s, st.job, st.fn)
			stored, err := s.JobByID(st.job)
			if err != nil {
				t.Fatal(err)
			}
			if jobText(got) != jobText(stored) {
				t.Fatalf("UpdateJob returned\n%+v\nstored\n%+v", got, stored)
			}
			if got.Status != st.wantStatus || !got.UpdatedAt.After(before.UpdatedAt) || got.UpdatedAt.Location() != time.UTC {
				t.Fatalf("status %s updated %v (before %v); want %s and a later UTC time", got.Status, got.UpdatedAt, before.UpdatedAt, st.wantStatus)
			}
			hook := "-"
			if got.Webhook != nil {
				hook = got.Webhook.Status
			}
			if hook != st.wantHook {
				t.Fatalf("webhook status %q, want %q", hook, st.wantHook)
			}
			wantDone := 0
			if got.Final() {
				wantDone = 1
			}
			if a, p, d := indexes(t, s, st.job); a != st.wantActive || p != st.wantPending || d != wantDone {
				t.Fatalf("indexes active %v pending %v done %d; want %v %v %d", a, p, d, st.wantActive, st.wantPending, wantDone)
			}
			if st.check != nil {
				st.check(t, got)
			}
			checkIndexes(t, s)
		})
	}
}

func TestUpdateJobRefused(t *testing.T) {
	s, _ := openStore(t)
	b, bjobs := createBatch(t, s, "acc_a", 2, true)
	queued := bjobs[0]
	done := updateJob(t, s, bjobs[1].JobID, succeed)
	errAbort := errors.New("abort")
	tests := []struct {
		name         string
		job          string
		fn           func(*shotd.Job) error
		wantErr      error // checked with errors.Is; nil: any error
		wantNotFound bool
	}{
		{"fn error", queued.JobID, func(j *shotd.Job) error { j.Status = shotd.JobRendering; return errAbort }, errAbort, false},
		{"unknown job", NewJobID(), func(*shotd.Job) error { return nil }, shotd.ErrNotFound, true},
		{"change id", queued.JobID, func(j *shotd.Job) error { j.JobID = NewJobID(); return nil }, ErrConflict, false},
		{"change account", queued.JobID, func(j *shotd.Job) error { j.AccountID = "acc_b"; return nil }, ErrConflict, false},
		{"change batch", queued.JobID, func(j *shotd.Job) error { j.BatchID = ""; return nil }, ErrConflict, false},
		{"change index", queued.JobID, func(j *shotd.Job) error { j.Index = 7; return nil }, ErrConflict, false},
		{"change created_at", queued.JobID, func(j *shotd.Job) error { j.CreatedAt = j.CreatedAt.Add(-time.Hour); return nil }, ErrConflict, false},
		{"unknown state", queued.JobID, func(j *shotd.Job) error { j.Status = "paused"; return nil }, nil, false},
		{"succeeded back to queued", done.JobID, func(j *shotd.Job) error { j.Status = shotd.JobQueued; return nil }, ErrConflict, false},
		{"succeeded to failed", done.JobID, func(j *shotd.Job) error { j.Status = shotd.JobFailed; return nil }, ErrConflict, false},
		{"delivery before the end", queued.JobID, func(j *shotd.Job) error { j.Webhook.Status = shotd.WebhookPending; return nil }, nil, false},
		{"unknown webhook state", done.JobID, func(j *shotd.Job) error { j.Webhook.Status = "lost"; return nil }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before shotd.Job
			if !tt.wantNotFound {
				var err error
				if before, err = s.JobByID(tt.job); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.UpdateJob(tt.job, tt.fn)
			if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("UpdateJob = %+v, %v; want %v", got, err, tt.wantErr)
			}
			if tt.wantNotFound {
				return
			}
			after, err := s.JobByID(tt.job)
			if err != nil {
				t.Fatal(err)
			}
			if jobText(after) != jobText(before) {
				t.Fatalf("a refused update changed the job:\n%+v\n%+v", before, after)
			}
		})
	}
	checkIndexes(t, s)
	if _, jobs, err := s.Batch("acc_a", b.BatchID); err != nil || len(jobs) != 2 {
		t.Fatalf("Batch = %d jobs, %v", len(jobs), err)
	}
}

// TestRequeueUnfinished: jobs left rendering by a stop go back to queued, and every queued job
// comes back oldest first, a batch in its order; ended jobs do not.
func TestRequeueUnfinished(t *testing.T) {
	s, dir := openStore(t)
	first := createJob(t, s, "acc_a", false)
	_, batch := createBatch(t, s, "acc_b", 3, true)
	last := createJob(t, s, "acc_a", true)
	ended := createJob(t, s, "acc_a", true)
	updateJob(t, s, batch[1].JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	updateJob(t, s, last.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	updateJob(t, s, ended.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	updateJob(t, s, ended.JobID, fail)

	// A stop that does not finish the jobs: Close, then open the same directory again.
	s = reopen(t, s, dir)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	want := []string{first.JobID, batch[0].JobID, batch[1].JobID, batch[2].JobID, last.JobID}
	for _, round := range []string{"first start", "second start"} {
		t.Run(round, func(t *testing.T) {
			got, _, err := s.RequeueUnfinished()
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range got {
				if j.Status != shotd.JobQueued {
					t.Errorf("job %s returned %s", j.JobID, j.Status)
				}
				stored, err := s.JobByID(j.JobID)
				if err != nil || stored.Status != shotd.JobQueued || jobText(stored) != jobText(j) {
					t.Errorf("job %s stored as %+v, %v; returned %+v", j.JobID, stored, err, j)
				}
				ids = append(ids, j.JobID)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("requeued %v, want %v", ids, want)
			}
			checkIndexes(t, s)
		})
	}
	if j, err := s.JobByID(ended.JobID); err != nil || j.Status != shotd.JobFailed || j.Webhook.Status != shotd.WebhookPending {
		t.Fatalf("ended job after restart: %+v, %v", j, err)
	}
}

// crashEnv names the data directory of TestCrashHelper, which runs in a child process.
const crashEnv = "STORE_TEST_CRASH_DIR"

// TestCrashHelper is not a test: TestRequeueAfterKill runs it in a child process, which writes
// jobs, leaves some rendering, and kills itself with SIGKILL while the store is open.
func TestCrashHelper(t *testing.T) {
	s := openCrashChild(t, crashEnv, "TestRequeueAfterKill")
	jobs := []shotd.Job{newJob("acc_a", true), newJob("acc_a", true), newJob("acc_a", true)}
	b := shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a"}
	if err := s.CreateJobs(jobs, &b); err != nil {
		t.Fatal(err)
	}
	for i, fn := range []func(*shotd.Job){func(j *shotd.Job) { j.Status = shotd.JobRendering }, succeed} {
		if _, err := s.UpdateJob(jobs[i].JobID, func(j *shotd.Job) error { fn(j); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("batch %s\n", b.BatchID)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	time.Sleep(time.Minute)
}

// TestRequeueAfterKill: what a process killed with SIGKILL committed is there at the next start.
func TestRequeueAfterKill(t *testing.T) {
	cmd, dir := crashChild(t, "TestCrashHelper", crashEnv)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL; output:\n%s", err, out)
	}
	var batchID string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "batch %s", &batchID); err == nil {
			break
		}
	}
	if batchID == "" {
		t.Fatalf("child printed no batch id:\n%s", out)
	}
	s, err := Open(dir, nopLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	b, jobs, err := s.Batch("acc_a", batchID)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Batch = %+v %d jobs, %v", b, len(jobs), err)
	}
	requeued, _, err := s.RequeueUnfinished()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range requeued {
		ids = append(ids, j.JobID)
	}
	if want := []string{b.JobIDs[0], b.JobIDs[2]}; !slices.Equal(ids, want) {
		t.Fatalf("requeued %v, want %v (the rendering one and the queued one)", ids, want)
	}
	pending, err := s.PendingWebhooks()
	if err != nil || len(pending) != 1 || pending[0].JobID != b.JobIDs[1] || pending[0].Result == nil {
		t.Fatalf("PendingWebhooks = %+v, %v; want the succeeded job with its result", pending, err)
	}
	checkIndexes(t, s)
}

func TestPendingWebhooks(t *testing.T) {
	s, dir := openStore(t)
	base := time.Now().UTC().Round(0)
	var jobs []shotd.Job
	for range 4 {
		jobs = append(jobs, createJob(t, s, "acc_a", true))
	}
	createJob(t, s, "acc_a", false) // queued, no webhook: never pending
	plain := createJob(t, s, "acc_a", false)
	updateJob(t, s, plain.JobID, succeed) // ended, no webhook: never pending

	// Due times out of creation order; one delivered, so not pending.
	for i, due := range []time.Duration{3 * time.Minute, time.Minute, 2 * time.Minute, 0} {
		updateJob(t, s, jobs[i].JobID, func(j *shotd.Job) {
			fail(j)
			j.Webhook.NextAttemptAt = base.Add(due)
		})
	}
	updateJob(t, s, jobs[3].JobID, func(j *shotd.Job) { j.Webhook.Status = shotd.WebhookDelivered; j.Webhook.Attempts = 1 })
	want := []string{jobs[1].JobID, jobs[2].JobID, jobs[0].JobID}

	for _, round := range []string{"running", "after reopen"} {
		t.Run(round, func(t *testing.T) {
			if round == "after reopen" {
				s = reopen(t, s, dir)
				t.Cleanup(func() { _ = s.Close(context.Background()) })
			}
			got, err := s.PendingWebhooks()
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range got {
				if j.Webhook == nil || j.Webhook.Status != shotd.WebhookPending || !j.Webhook.Sign || j.Status != shotd.JobFailed {
					t.Fatalf("pending job %+v webhook %+v", j, j.Webhook)
				}
				ids = append(ids, j.JobID)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("pending %v, want %v (earliest due first)", ids, want)
			}
		})
	}
}

// TestSweepJobs: finished jobs go JobRetention after their last change; active jobs and pending
// deliveries never; a batch goes whole once every job of it can go.
func TestSweepJobs(t *testing.T) {
	s, _ := openStore(t)
	day := 24 * time.Hour
	finished := createJob(t, s, "acc_a", false)
	updateJob(t, s, finished.JobID, succeed)
	active := createJob(t, s, "acc_a", false)
	updateJob(t, s, active.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	pending := createJob(t, s, "acc_a", true)
	updateJob(t, s, pending.JobID, fail)
	b, bjobs := createBatch(t, s, "acc_b", 3, false)
	updateJob(t, s, bjobs[0].JobID, succeed)
	updateJob(t, s, bjobs[2].JobID, fail)
	start := time.Now()

	exists := func(id string) bool {
		_, err := s.JobByID(id)
		if err != nil && !errors.Is(err, shotd.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	later := func(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }
	fromStart := func(d time.Duration) func() time.Time { return func() time.Time { return start.Add(d) } }
	steps := []struct {
		name        string
		before      func()
		at          func() time.Time // the sweep's now, read after before ran
		wantRemoved int
		wantGone    []string
	}{
		{"within retention", nil, fromStart(JobRetention - time.Minute), 0, nil},
		{"finished single job goes", nil, fromStart(JobRetention + time.Minute), 1, []string{finished.JobID}},
		{"batch with an active job and a pending delivery stay", nil, fromStart(30 * day), 0, []string{finished.JobID}},
		{"last batch job ends and the delivery fails: not old enough", func() {
			updateJob(t, s, bjobs[1].JobID, succeed)
			updateJob(t, s, pending.JobID, func(j *shotd.Job) { j.Webhook.Status = shotd.WebhookFailed })
		}, later(JobRetention - time.Minute), 0, []string{finished.JobID}},
		{"batch goes whole with its jobs, the job after its delivery", nil, later(JobRetention + time.Minute), 5,
			[]string{finished.JobID, pending.JobID, bjobs[0].JobID, bjobs[1].JobID, bjobs[2].JobID}},
		{"active job never", nil, fromStart(1000 * day), 0,
			[]string{finished.JobID, pending.JobID, bjobs[0].JobID, bjobs[1].JobID, bjobs[2].JobID}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			n, err := s.SweepNow(st.at())
			if err != nil || n != st.wantRemoved {
				t.Fatalf("SweepNow = %d, %v; want %d removed", n, err, st.wantRemoved)
			}
			for _, id := range []string{finished.JobID, active.JobID, pending.JobID, bjobs[0].JobID, bjobs[1].JobID, bjobs[2].JobID} {
				if gone := !exists(id); gone != slices.Contains(st.wantGone, id) {
					t.Fatalf("job %s gone: %v; want gone %v", id, gone, st.wantGone)
				}
			}
			_, _, err = s.Batch("acc_b", b.BatchID)
			if batchGone := errors.Is(err, shotd.ErrNotFound); batchGone != slices.Contains(st.wantGone, bjobs[0].JobID) {
				t.Fatalf("Batch = %v", err)
			}
			checkIndexes(t, s)
		})
	}
	if a, _, _ := indexes(t, s, active.JobID); !a {
		t.Fatal("the active job left the active index")
	}
}

// TestSweepJobsPastManyKept: more than one transaction's worth of old jobs that must stay (their
// batch has an active job) does not hide an old job that may go behind them.
func TestSweepJobsPastManyKept(t *testing.T) {
	s, _ := openStore(t)
	n := sweepBatch + 10
	_, bjobs := createBatch(t, s, "acc_a", n+1, false)
	// End all but the last batch job in one transaction, as many UpdateJob calls would.
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, j := range bjobs[:n] {
			old, err := getJob(tx, j.JobID)
			if err != nil {
				return err
			}
			r := old
			r.Status, r.UpdatedAt = shotd.JobFailed, now()
			if err := putJob(tx, &old, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	single := createJob(t, s, "acc_a", false)
	updateJob(t, s, single.JobID, succeed)
	removed, err := s.SweepNow(time.Now().Add(JobRetention + time.Hour))
	if err != nil || removed != 1 {
		t.Fatalf("SweepNow = %d, %v; want only the single job removed", removed, err)
	}
	if _, err := s.JobByID(single.JobID); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("single job: %v", err)
	}
	if got := countKeys(t, s, bucketJobs); got != n+1 {
		t.Fatalf("%d jobs left, want the %d of the batch", got, n+1)
	}
	checkIndexes(t, s)
}

// TestJobsConcurrent runs job life cycles, webhook attempts and reads at once (run with -race);
// every update must count and the indexes must agree with the jobs at the end.
func TestJobsConcurrent(t *testing.T) {
	s, _ := openStore(t)
	shared := createJob(t, s, "acc_a", true)
	updateJob(t, s, shared.JobID, succeed)
	const workers, perWorker, attempts = 4, 10, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*3)
	for w := range workers {
		wg.Go(func() { // life cycles
			for i := range perWorker {
				jobs := []shotd.Job{newJob("acc_a", i%2 == 0), newJob("acc_a", false)}
				b := &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a"}
				if err := s.CreateJobs(jobs, b); err != nil {
					errs <- err
					return
				}
				for k, j := range jobs {
					steps := []func(*shotd.Job){func(j *shotd.Job) { j.Status = shotd.JobRendering }, succeed}
					if (w+i+k)%3 == 0 {
						steps[1] = fail
					}
					for _, fn := range steps {
						if _, err := s.UpdateJob(j.JobID, func(j *shotd.Job) error { fn(j); return nil }); err != nil {
							errs <- err
							return
						}
					}
				}
				if _, got, err := s.Batch("acc_a", b.BatchID); err != nil || len(got) != 2 {
					errs <- fmt.Errorf("batch %s: %d jobs, %v", b.BatchID, len(got), err)
					return
				}
			}
		})
		wg.Go(func() { // webhook attempts on one job
			for range attempts {
				_, err := s.UpdateJob(shared.JobID, func(j *shotd.Job) error { j.Webhook.Attempts++; return nil })
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() { // readers
			for range perWorker {
				if _, err := s.PendingWebhooks(); err != nil {
					errs <- err
					return
				}
				if _, err := s.Job("acc_a", shared.JobID); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if j, err := s.JobByID(shared.JobID); err != nil || j.Webhook.Attempts != workers*attempts {
		t.Fatalf("attempts %d, %v; want %d: an update was lost", j.Webhook.Attempts, err, workers*attempts)
	}
	if left, _, err := s.RequeueUnfinished(); err != nil || len(left) != 0 {
		t.Fatalf("RequeueUnfinished = %d jobs, %v; every job ended", len(left), err)
	}
	checkIndexes(t, s)
}

// BenchmarkCreateJob measures what accepting one async job costs the store (one committed,
// synced transaction).
func BenchmarkCreateJob(b *testing.B) {
	s, err := Open(b.TempDir(), nopLogger)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	for b.Loop() {
		if err := s.CreateJobs([]shotd.Job{newJob("acc_a", true)}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRequeueInterruptedFails: a job found rendering at start counts an interruption, and at
// shotd.MaxJobInterruptions it fails with internal_error, its webhook pending, instead of being
// queued again (a page that killed the process crashed it at every start).
func TestRequeueInterruptedFails(t *testing.T) {
	s, _ := openStore(t)
	crashing := createJob(t, s, "acc_a", true)
	quiet := createJob(t, s, "acc_a", false)
	for start := 1; start <= shotd.MaxJobInterruptions; start++ {
		updateJob(t, s, crashing.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
		queued, failed, err := s.RequeueUnfinished()
		if err != nil {
			t.Fatal(err)
		}
		if start < shotd.MaxJobInterruptions {
			if len(queued) != 2 || len(failed) != 0 {
				t.Fatalf("start %d: %d queued, %d failed; want both queued", start, len(queued), len(failed))
			}
			continue
		}
		if len(queued) != 1 || queued[0].JobID != quiet.JobID || len(failed) != 1 || failed[0].JobID != crashing.JobID {
			t.Fatalf("start %d: queued %v, failed %v; want the crashing job failed", start, queued, failed)
		}
	}
	j, err := s.JobByID(crashing.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != shotd.JobFailed || j.ErrorCode != string(shotd.CodeInternalError) || j.Interrupted != shotd.MaxJobInterruptions ||
		j.Webhook == nil || j.Webhook.Status != shotd.WebhookPending {
		t.Fatalf("stored %+v", j)
	}
	if q, f, err := s.RequeueUnfinished(); err != nil || len(q) != 1 || len(f) != 0 {
		t.Fatalf("next start: %d queued, %d failed, %v", len(q), len(f), err)
	}
	checkIndexes(t, s)
}
