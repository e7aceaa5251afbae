package store

import (
	"context"
	"errors"
	"slices"
	"sync"
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
	g := &s.newJobs
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

// BenchmarkCreateJobParallel: what accepting async jobs costs the store with 16 submitting at
// once, their commits shared (compare BenchmarkCreateJob, one at a time).
func BenchmarkCreateJobParallel(b *testing.B) {
	s, err := Open(b.TempDir(), nopLogger)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	b.SetParallelism(8) // 16 submitters on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.CreateJobs([]shotd.Job{newJob("acc_a", true)}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
