package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	// refuse picks the writes that fail without landing, for good.
	refuse func(key string) bool
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
	plan := shotd.Plan{MonthlyQuota: 5, Concurrency: 1}
	fkv := &faultKV{KeyValue: nodes[0].Ledger, downFor: 1500 * time.Millisecond,
		lose: once(func(key string) bool { return strings.HasPrefix(key, acc.ID+".") })}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	l := NewLedger(fkv, nodes[0].NodeName(), LedgerConfig{Log: log})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	jn := startJobsNode(t, nodes[0], func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		return pngOut(), nil
	}, nil, func(c *JobsConfig) { c.Ledger = l })
	_, _, err := jn.jobs.Submit(jobRequest(acc, plan, 2, true), time.Second)
	if shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("Submit: %v, want service_unavailable", err)
	}
	if st := ledgerState(t, nodes[0], acc); st.Reservations != 0 {
		t.Fatalf("ledger %+v after a failed Submit: a reservation is left", st)
	}
}

// TestSubmitUndoesItsRecords: a Submit that cannot write one job's record fails, and leaves
// neither the records it wrote (they would stay queued for ever, never run) nor reservations.
func TestSubmitUndoesItsRecords(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_undo", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, Concurrency: 1}
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
	if shotd.CodeOf(err) != shotd.CodeServiceUnavailable {
		t.Fatalf("Submit: %v, want service_unavailable", err)
	}
	jobs, batches, err := jn.jobs.accountRecords(context.Background(), acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 || len(batches) != 0 {
		t.Fatalf("%d job records and %d batches left by a failed Submit", len(jobs), len(batches))
	}
	if st := ledgerState(t, nodes[0], acc); st.Reservations != 0 {
		t.Fatalf("ledger %+v after a failed Submit: a reservation is left", st)
	}
}

// TestSubmitRecordAnswerLost: a job record's write lands with its answer lost; the Submit tries
// again, finds its record and queues the job, which ends succeeded and billed.
func TestSubmitRecordAnswerLost(t *testing.T) {
	nodes := startCluster(t, 1)
	acc := shotd.Account{ID: "acc_rec", CreatedAt: time.Now()}
	plan := shotd.Plan{MonthlyQuota: 5, Concurrency: 1}
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
