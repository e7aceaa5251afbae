package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// holdFirstRound makes the first commit of s's job writes wait until want more writers queue
// behind it, so that a test knows which writes share a round; it returns the size of each
// round committed.
func holdFirstRound(t *testing.T, s *Store, want int) func() []int {
	var mu sync.Mutex
	var rounds []int
	g := &s.group
	g.commits = func(n int) {
		mu.Lock()
		first := len(rounds) == 0
		rounds = append(rounds, n)
		mu.Unlock()
		if !first {
			return
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			g.mu.Lock()
			queued := len(g.waiting)
			g.mu.Unlock()
			if queued >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d writers queued behind the first commit, want %d", queued, want)
				return
			}
		}
	}
	return func() []int { mu.Lock(); defer mu.Unlock(); return slices.Clone(rounds) }
}

// TestCreateJobsGroupCommit: submits made while a commit is in flight share the next commit, and
// each returns only once its jobs are stored: readable at once, and there after a reopen.
func TestCreateJobsGroupCommit(t *testing.T) {
	s, dir := openStore(t)
	const writers = 16
	rounds := holdFirstRound(t, s, writers-1)
	ids := make([]string, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			jobs := []shotd.Job{newJob("acc_a", true)}
			var b *shotd.Batch
			if i%4 == 3 { // some submits are batches of three
				jobs = append(jobs, newJob("acc_a", false), newJob("acc_a", false))
				b = &shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a"}
			}
			if err := s.CreateJobs(jobs, b); err != nil {
				t.Error(err)
				return
			}
			ids[i] = jobs[0].JobID
			for _, j := range jobs { // as the 202 is sent
				if got, err := s.Job("acc_a", j.JobID); err != nil || got.Status != shotd.JobQueued {
					t.Errorf("job %s after CreateJobs: %+v, %v", j.JobID, got, err)
				}
			}
		})
	}
	wg.Wait()
	if got := rounds(); !slices.Equal(got, []int{1, writers - 1}) {
		t.Fatalf("commits of %v writes, want [1 %d]: the writers queued during the first commit share one", got, writers-1)
	}
	checkIndexes(t, s)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, nopLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	for _, id := range ids {
		if _, err := s2.Job("acc_a", id); err != nil {
			t.Errorf("job %s after reopen: %v", id, err)
		}
	}
}

// TestRenderWritesShareCommits: a render's file records and its usage count, written while a
// job commit is in flight, share the next commit (a render beside async accepts costs them no
// commit of its own), and are there after a reopen; an unknown account's usage fails alone.
func TestRenderWritesShareCommits(t *testing.T) {
	s, dir := openStore(t)
	acc, err := s.CreateAccount("a@example.com", "default", false)
	if err != nil {
		t.Fatal(err)
	}
	rounds := holdFirstRound(t, s, 3)
	var wg sync.WaitGroup
	var rec shotd.FileRecord
	var usageErr, unknownErr error
	wg.Go(func() { createJob(t, s, acc.ID, false) })
	wg.Go(func() { rec = putFile(t, s, acc.ID, "png", time.Hour) })
	wg.Go(func() { _, _, usageErr = s.RecordUsage(acc, time.Now(), shotd.UsageDelta{Succeeded: 1}, 10) })
	wg.Go(func() {
		_, _, unknownErr = s.RecordUsage(shotd.Account{ID: "acc_gone"}, time.Now(), shotd.UsageDelta{Succeeded: 1}, 10)
	})
	wg.Wait()
	if got := rounds(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("commits of %v writes, want [1 3]: the file and the usage share the second", got)
	}
	if usageErr != nil || !errors.Is(unknownErr, shotd.ErrNotFound) {
		t.Fatalf("RecordUsage: %v; of an unknown account: %v, want ErrNotFound", usageErr, unknownErr)
	}
	s2 := reopen(t, s, dir)
	defer s2.Close(context.Background())
	if _, err := s2.File(acc.ID, rec.FileID); err != nil {
		t.Errorf("file after reopen: %v", err)
	}
	if u, err := s2.Usage(acc, time.Now()); err != nil || u.Succeeded != 1 {
		t.Errorf("usage after reopen: %+v, %v; want 1 success", u, err)
	}
}

// TestCreateJobsGroupCommitFailure: a submit refused in a shared commit fails alone; the others
// of its round are stored.
func TestCreateJobsGroupCommitFailure(t *testing.T) {
	s, _ := openStore(t)
	dup := createJob(t, s, "acc_a", false)
	const writers = 8
	rounds := holdFirstRound(t, s, writers-1)
	errs := make([]error, writers)
	ids := make([]string, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			j := newJob("acc_a", false)
			if i == writers/2 {
				j.JobID = dup.JobID
			}
			jobs := []shotd.Job{j}
			errs[i] = s.CreateJobs(jobs, nil)
			ids[i] = j.JobID
		})
	}
	wg.Wait()
	if got := rounds(); len(got) < 2 || got[1] != writers-1 {
		t.Fatalf("commits of %v writes, want the %d queued writers in the second", got, writers-1)
	}
	for i, err := range errs {
		if ids[i] == dup.JobID {
			if !errors.Is(err, ErrConflict) {
				t.Errorf("the job with a stored id: %v, want ErrConflict", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		} else if _, err := s.Job("acc_a", ids[i]); err != nil {
			t.Errorf("job %s: %v", ids[i], err)
		}
	}
	if got, err := s.Job("acc_a", dup.JobID); err != nil || jobText(got) != jobText(dup) {
		t.Errorf("the stored job changed: %+v, %v", got, err)
	}
	checkIndexes(t, s)
}

// TestUpdateJobsGroupCommit: status updates made while a commit is in flight share the next
// commit, with job creations, and each returns the job as stored once it is: there after a
// reopen.
func TestUpdateJobsGroupCommit(t *testing.T) {
	s, dir := openStore(t)
	const writers = 16
	jobs := createJobs(t, s, writers, true)
	rounds := holdFirstRound(t, s, writers-1)
	created := make([]string, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if i == writers-1 { // a submit shares the round too
				created[i] = createJob(t, s, "acc_a", false).JobID
				return
			}
			next := succeed
			if i%2 == 0 {
				next = func(j *shotd.Job) { j.Status, j.StartedAt = shotd.JobRendering, time.Now().UTC() }
			}
			got, err := s.UpdateJob(jobs[i].JobID, func(j *shotd.Job) error { next(j); return nil })
			if err != nil {
				t.Error(err)
				return
			}
			if stored, err := s.JobByID(got.JobID); err != nil || jobText(stored) != jobText(got) {
				t.Errorf("job %s: UpdateJob returned %+v, the store holds %+v (%v)", got.JobID, got, stored, err)
			}
		})
	}
	wg.Wait()
	if got := rounds(); !slices.Equal(got, []int{1, writers - 1}) {
		t.Fatalf("commits of %v writes, want [1 %d]: the updates queued during the first commit share one", got, writers-1)
	}
	checkIndexes(t, s)
	want := map[string]string{created[writers-1]: shotd.JobQueued}
	for i, j := range jobs[:writers-1] {
		want[j.JobID] = shotd.JobSucceeded
		if i%2 == 0 {
			want[j.JobID] = shotd.JobRendering
		}
	}
	s2 := reopen(t, s, dir)
	defer s2.Close(context.Background())
	for id, status := range want {
		if j, err := s2.JobByID(id); err != nil || j.Status != status {
			t.Errorf("job %s after reopen: %+v, %v; want %s", id, j, err, status)
		}
	}
	if p, err := s2.PendingWebhooks(); err != nil || len(p) != writers/2-1 {
		t.Errorf("%d pending webhooks after reopen (%v), want those of the %d succeeded jobs", len(p), err, writers/2-1)
	}
}

// TestUpdateJobsGroupRefusal: an update refused in a shared commit (by its function, by the
// store's rules, for a job that does not exist, or by a panic) fails alone, with its own error;
// the others of its round are stored, and the panic is raised in its own caller.
func TestUpdateJobsGroupRefusal(t *testing.T) {
	s, _ := openStore(t)
	const writers = 8
	jobs := createJobs(t, s, writers, false)
	errOwn := errors.New("fn refuses")
	fns := map[int]func(*shotd.Job) error{
		1: func(*shotd.Job) error { return errOwn },
		2: func(j *shotd.Job) error { j.AccountID = "acc_b"; return nil },
		3: func(*shotd.Job) error { panic("fn panics") },
	}
	rounds := holdFirstRound(t, s, writers-1)
	errs := make([]error, writers)
	panics := make([]any, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			defer func() { panics[i] = recover() }()
			id := jobs[i].JobID
			if i == 4 {
				id = NewJobID()
			}
			fn := fns[i]
			if fn == nil {
				fn = func(j *shotd.Job) error { j.Status = shotd.JobRendering; return nil }
			}
			_, errs[i] = s.UpdateJob(id, fn)
		})
	}
	wg.Wait()
	if got := rounds(); len(got) < 2 || got[1] != writers-1 {
		t.Fatalf("commits of %v writes, want the %d queued updates in the second", got, writers-1)
	}
	for i, err := range errs {
		status := shotd.JobQueued
		switch i {
		case 1:
			if err != errOwn {
				t.Errorf("update %d: %v, want fn's own error", i, err)
			}
		case 2:
			if !errors.Is(err, ErrConflict) {
				t.Errorf("update %d: %v, want ErrConflict", i, err)
			}
		case 3:
			if panics[i] != "fn panics" {
				t.Errorf("update %d: panic %v, want fn's in its caller", i, panics[i])
			}
		case 4:
			if !errors.Is(err, shotd.ErrNotFound) {
				t.Errorf("update %d: %v, want ErrNotFound", i, err)
			}
		default:
			if err != nil || panics[i] != nil {
				t.Errorf("update %d: %v, %v", i, err, panics[i])
			}
			status = shotd.JobRendering
		}
		if j, err := s.JobByID(jobs[i].JobID); err != nil || j.Status != status || j.AccountID != "acc_a" {
			t.Errorf("job %d: %+v, %v; want %s", i, j, err, status)
		}
	}
	checkIndexes(t, s)
}

// createJobs creates n jobs of acc_a, one by one.
func createJobs(t *testing.T, s *Store, n int, webhook bool) []shotd.Job {
	t.Helper()
	jobs := make([]shotd.Job, n)
	for i := range jobs {
		jobs[i] = createJob(t, s, "acc_a", webhook)
	}
	return jobs
}

// crashChild is the command that runs the test helper in a child process, on a store in dir.
func crashChild(t *testing.T, helper, env string) (cmd *exec.Cmd, dir string) {
	dir = filepath.Join(t.TempDir(), "data")
	cmd = exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	return cmd, dir
}

// killChild runs the test helper in a child process on a store in dir, gives each line it
// prints to read, kills it with SIGKILL after killAfter lines and returns, once it is dead and
// every line it printed was read.
func killChild(t *testing.T, helper, env string, read func(line string)) (dir string) {
	t.Helper()
	cmd, dir := crashChild(t, helper, env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for lines := 0; sc.Scan(); lines++ {
		read(sc.Text())
		if lines == killAfter {
			_ = cmd.Process.Signal(syscall.SIGKILL) // the lines already written are still read
		}
	}
	_ = cmd.Wait()
	return dir
}

// killAfter is how many lines a killed child prints before the kill.
const killAfter = 2000

// openCrashChild opens the store of a child process in the directory the environment variable
// env names, and skips the test when it is not set: it runs only as the child of parent.
func openCrashChild(t *testing.T, env, parent string) *Store {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("runs only as the child of " + parent)
	}
	s, err := Open(dir, nopLogger)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// updateCrashEnv names the data directory of TestUpdateCrashHelper, run in a child process.
const updateCrashEnv = "STORE_TEST_UPDATE_CRASH_DIR"

// TestUpdateCrashHelper is not a test: TestUpdatesAfterKill runs it in a child process, where 16
// writers update a job each, over and over, printing each update once UpdateJob returned, until
// the parent kills the process.
func TestUpdateCrashHelper(t *testing.T) {
	s := openCrashChild(t, updateCrashEnv, "TestUpdatesAfterKill")
	var mu sync.Mutex
	for range 16 {
		j := newJob("acc_a", false)
		if err := s.CreateJobs([]shotd.Job{j}, nil); err != nil {
			t.Fatal(err)
		}
		go func() {
			for n := 1; ; n++ {
				if _, err := s.UpdateJob(j.JobID, func(j *shotd.Job) error { j.ErrorMessage = strconv.Itoa(n); return nil }); err != nil {
					fmt.Printf("error %v\n", err)
					return
				}
				mu.Lock()
				fmt.Printf("updated %s %d\n", j.JobID, n) // one write(2): in the pipe before any kill
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Minute)
}

// TestUpdatesAfterKill: every update whose UpdateJob returned before the process was killed is
// on disk at the next start, whatever commit it shared, and the indexes agree with the jobs.
func TestUpdatesAfterKill(t *testing.T) {
	returned := map[string]int{} // job id: the last update that returned
	dir := killChild(t, "TestUpdateCrashHelper", updateCrashEnv, func(line string) {
		var id string
		var n int
		if _, err := fmt.Sscanf(line, "updated %s %d", &id, &n); err != nil {
			t.Errorf("child: %s", line)
			return
		}
		returned[id] = max(returned[id], n)
	})
	if len(returned) != 16 {
		t.Fatalf("updates of %d jobs returned, want 16", len(returned))
	}
	s, err := Open(dir, nopLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for id, n := range returned {
		j, err := s.JobByID(id)
		if err != nil {
			t.Fatal(err)
		}
		// At most one more: the update in flight when the process died may have committed.
		if got, _ := strconv.Atoi(j.ErrorMessage); got != n && got != n+1 {
			t.Errorf("job %s holds update %d after the kill; update %d had returned", id, got, n)
		}
	}
	checkIndexes(t, s)
}

// createCrashEnv names the data directory of TestCreateCrashHelper, run in a child process.
const createCrashEnv = "STORE_TEST_CREATE_CRASH_DIR"

// TestCreateCrashHelper is not a test: TestCreatesAfterKill runs it in a child process, where 16
// writers create jobs, over and over, printing each job once CreateJobs returned, until the
// parent kills the process.
func TestCreateCrashHelper(t *testing.T) {
	s := openCrashChild(t, createCrashEnv, "TestCreatesAfterKill")
	var mu sync.Mutex
	for range 16 {
		go func() {
			for {
				j := newJob("acc_a", false)
				if err := s.CreateJobs([]shotd.Job{j}, nil); err != nil {
					fmt.Printf("error %v\n", err)
					return
				}
				mu.Lock()
				fmt.Printf("created %s\n", j.JobID) // one write(2): in the pipe before any kill
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Minute)
}

// TestCreatesAfterKill: every job whose CreateJobs returned (an async accept answers 202 then)
// before the process was killed is on disk, queued, at the next start, whatever commit it
// shared, and the indexes agree with the jobs.
func TestCreatesAfterKill(t *testing.T) {
	var created []string
	dir := killChild(t, "TestCreateCrashHelper", createCrashEnv, func(line string) {
		var id string
		if _, err := fmt.Sscanf(line, "created %s", &id); err != nil {
			t.Errorf("child: %s", line)
			return
		}
		created = append(created, id)
	})
	if len(created) < killAfter {
		t.Fatalf("%d jobs created before the kill, want %d or more", len(created), killAfter)
	}
	s, err := Open(dir, nopLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for _, id := range created {
		if j, err := s.JobByID(id); err != nil || j.Status != shotd.JobQueued {
			t.Errorf("job %s after the kill: %+v, %v; its CreateJobs had returned", id, j, err)
		}
	}
	checkIndexes(t, s)
}

// BenchmarkCreateJobParallel: what accepting async jobs costs the store with 16 submitting at
// once, their commits shared (compare BenchmarkCreateJob, one at a time), in a database holding
// prefill jobs already, each job's options in full or compact. Beside the rate it
// reports the rounds' size and the pages each round wrote (bbolt's Tx stats): a commit's cost
// grows with its pages.
func BenchmarkCreateJobParallel(b *testing.B) {
	const prefill = 5000
	for _, opts := range []struct {
		name string
		json json.RawMessage
	}{
		{"options-full", benchOptions},    // as the job actor stored them before it left zero fields out
		{"options-compact", benchCompact}, // as it stores them now
	} {
		b.Run(opts.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), nopLogger)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			job := func() shotd.Job {
				j := newJob("acc_a", true)
				j.Options = opts.json
				return j
			}
			for range prefill / 100 {
				jobs := make([]shotd.Job, 100)
				for i := range jobs {
					jobs[i] = job()
				}
				if err := s.CreateJobs(jobs, nil); err != nil {
					b.Fatal(err)
				}
			}
			var rounds atomic.Int64
			s.group.commits = func(int) { rounds.Add(1) }
			st := s.db.Stats()
			pages, alloc := st.TxStats.GetWrite(), st.TxStats.GetPageCount()
			b.SetParallelism(8) // 16 submitters on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.CreateJobs([]shotd.Job{job()}, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			n := float64(rounds.Load())
			b.ReportMetric(float64(b.N)/n, "jobs/round")
			st = s.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetWrite()-pages)/n, "writes/round")
			b.ReportMetric(float64(st.TxStats.GetPageCount()-alloc)/n, "pages/round")
			b.ReportMetric(float64(st.FreePageN+st.PendingPageN), "free-pages")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// benchOptions are a job's options in full: shotd.Options in JSON, most of its fields zero;
// benchCompact the same without its zero fields.
var benchOptions = func() json.RawMessage {
	data, err := json.Marshal(&shotd.Options{URL: "https://example.com/", Format: shotd.FormatPNG, Async: true,
		ViewportWidth: 1280, ViewportHeight: 1024, Given: []string{"url", "async"}})
	if err != nil {
		panic(err)
	}
	return data
}()

var benchCompact = json.RawMessage(`{"URL":"https://example.com/","Format":"png","Async":true,"ViewportWidth":1280,"ViewportHeight":1024,"Given":["url","async"]}`)
