package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd"
)

// hookState is a webhook's delivery state as the jobs bucket keeps it: shotd.WebhookState
// leaves its private fields out of JSON.
type hookState struct {
	URL        string    `json:"url"`
	Status     string    `json:"status,omitempty"`
	Attempts   int       `json:"attempts,omitempty"`
	Sign       bool      `json:"sign,omitempty"`
	SkipFailed bool      `json:"skip_failed,omitempty"`
	Next       time.Time `json:"next,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
}

func hookOf(w *shotd.WebhookState) *hookState {
	if w == nil {
		return nil
	}
	return &hookState{URL: w.URL, Status: w.Status, Attempts: w.Attempts, Sign: w.Sign, SkipFailed: w.SkipFailed,
		Next: w.NextAttemptAt, LastError: w.LastError}
}

func (h *hookState) state() *shotd.WebhookState {
	if h == nil {
		return nil
	}
	return &shotd.WebhookState{URL: h.URL, Status: h.Status, Attempts: h.Attempts, Sign: h.Sign, SkipFailed: h.SkipFailed,
		NextAttemptAt: h.Next, LastError: h.LastError}
}

// jobRecord is a job in the jobs bucket ("j." + job id). Every change is one compare-and-swap on
// its revision, as every change of a bbolt job is one transaction.
type jobRecord struct {
	V    int        `json:"v"`
	Job  shotd.Job  `json:"job"` // its Webhook is in Hook
	Hook *hookState `json:"hook,omitempty"`
	// Hold is the job's quota reservation in its account's ledger record, taken at submission;
	// Concurrency the plan's limit of renders at once, which the job's render claims a slot of.
	Hold        Hold `json:"hold"`
	Concurrency int  `json:"concurrency"`
	// Node renders the job's Starts-th render. A node whose render ends changes the record
	// only while both are still its own: a job redelivered to another node (its first node
	// stopped acknowledging) has one owner, and at most one success.
	Node   string `json:"node,omitempty"`
	Starts int    `json:"starts,omitempty"`
	// Billing: the render succeeded and its result is kept here, the bill is not confirmed yet.
	// The job shows as rendering until the bill is written, so that a success is never shown
	// unbilled; a node that dies here leaves it to the next delivery, which bills (at most
	// once: the ledger remembers the bills it made) and records the success.
	Billing bool             `json:"billing,omitempty"`
	Result  *shotd.JobResult `json:"result,omitempty"`
	// HookQueued: the message of the job's webhook is in the work stream; it is not queued
	// again (the stream drops a duplicate only within two minutes).
	HookQueued bool `json:"hook_queued,omitempty"`
	// Requeued: the sweeper queued the job's message again, the job having waited past a grace
	// without starting (its node may have died between its record and its message).
	Requeued bool `json:"requeued,omitempty"`
	recentChanges
}

func (r *jobRecord) encode() ([]byte, error) {
	c := *r
	c.V = recordVersion
	c.Hook = hookOf(r.Job.Webhook)
	c.Job.Webhook = nil
	return json.Marshal(c)
}

// batchRecord is a batch in the jobs bucket ("b." + batch id). Its counts are not kept: they
// follow from its jobs' records, read when it is shown.
type batchRecord struct {
	V     int         `json:"v"`
	Batch shotd.Batch `json:"batch"`
	Hook  *hookState  `json:"hook,omitempty"`
	// Ended: the batch's first Ended jobs (in request order) are known to have ended. A job's
	// end is for ever, so each node that sees a job end reads on from here and moves it on (by
	// compare-and-swap, never back): the batch's jobs are read about once each in all, not once
	// per job end.
	Ended int `json:"ended,omitempty"`
	// HookQueued: the message of the batch's webhook is in the work stream (as a job's).
	HookQueued bool `json:"hook_queued,omitempty"`
	recentChanges
}

func (r *batchRecord) encode() ([]byte, error) {
	c := *r
	c.V = recordVersion
	c.Hook = hookOf(r.Batch.Webhook)
	c.Batch.Webhook = nil
	return json.Marshal(c)
}

func jobKey(id string) string   { return "j." + id }
func batchKey(id string) string { return "b." + id }

// errUnchanged: an update's fn leaves the record as it is; update returns it without a write.
var errUnchanged = errors.New("cluster: unchanged")

// getJob reads a job's record: shotd.ErrNotFound when there is none.
func (j *Jobs) getJob(ctx context.Context, id string) (jobRecord, uint64, error) {
	r, rev, _, err := j.readJob(ctx, id)
	return r, rev, err
}

// readJob is getJob with the record as stored.
func (j *Jobs) readJob(ctx context.Context, id string) (jobRecord, uint64, []byte, error) {
	var r jobRecord
	rev, raw, err := j.get(ctx, "job", jobKey(id), &r)
	if err == nil {
		r.Job.Webhook = r.Hook.state()
	}
	return r, rev, raw, err
}

func (j *Jobs) getBatch(ctx context.Context, id string) (batchRecord, uint64, error) {
	r, rev, _, err := j.readBatch(ctx, id)
	return r, rev, err
}

func (j *Jobs) readBatch(ctx context.Context, id string) (batchRecord, uint64, []byte, error) {
	var r batchRecord
	rev, raw, err := j.get(ctx, "batch", batchKey(id), &r)
	if err == nil {
		r.Batch.Webhook = r.Hook.state()
	}
	return r, rev, raw, err
}

func (j *Jobs) get(ctx context.Context, kind, key string, v any) (uint64, []byte, error) {
	if j.cfg.onRead != nil {
		j.cfg.onRead(key)
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	e, err := j.kv.Get(actx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrInvalidKey):
		return 0, nil, shotd.ErrNotFound
	case err != nil: // no leader for a moment, or this node cut off: worth another try
		return 0, nil, shotd.Wrap(shotd.CodeServiceUnavailable, fmt.Errorf("cluster: %s %s: %w", kind, key, err),
			"the cluster's job records could not be read; try again")
	}
	if err := decode(j.log, kind, key, e.Value(), v); err != nil {
		return 0, nil, err
	}
	return e.Revision(), e.Value(), nil
}

// updateJob applies fn to a job's record and writes it by compare-and-swap, reading again and
// retrying when another node wrote first or no answer came, until ctx ends (casRecord). As in
// the bbolt store, a job that ends gets its webhook pending, or none when it failed with
// webhook_errors=false.
func (j *Jobs) updateJob(ctx context.Context, id string, fn func(r *jobRecord) error) (jobRecord, error) {
	return casRecord(ctx,
		func(ctx context.Context) (jobRecord, uint64, []byte, error) { return j.readJob(ctx, id) },
		func(ctx context.Context, r *jobRecord, rev uint64) ([]byte, error) {
			return j.put(ctx, jobKey(id), r, rev)
		},
		func(r *jobRecord) error {
			wasFinal := r.Job.Final()
			if err := fn(r); err != nil {
				return err
			}
			r.Job.UpdatedAt = time.Now().UTC()
			if w := r.Job.Webhook; r.Job.Status == shotd.JobFailed && !wasFinal && w != nil && w.SkipFailed {
				r.Job.Webhook = nil
			}
			if w := r.Job.Webhook; r.Job.Final() && w != nil && w.Status == "" {
				w.Status = shotd.WebhookPending
			}
			return nil
		},
		j.retry(ctx, "the cluster's job record could not be written"))
}

// updateBatch is updateJob for a batch's record.
func (j *Jobs) updateBatch(ctx context.Context, id string, fn func(r *batchRecord) error) (batchRecord, error) {
	return casRecord(ctx,
		func(ctx context.Context) (batchRecord, uint64, []byte, error) { return j.readBatch(ctx, id) },
		func(ctx context.Context, r *batchRecord, rev uint64) ([]byte, error) {
			return j.put(ctx, batchKey(id), r, rev)
		},
		fn, j.retry(ctx, "the cluster's batch record could not be written"))
}

// retry is updateJob's and updateBatch's answer to a failed try (casRecord's again): a record
// missing or of an unknown version ends the update; anything else (another node wrote first, no
// answer came) is tried again until ctx ends, then said to be unavailable (msg).
func (j *Jobs) retry(ctx context.Context, msg string) func(attempt int, err error) error {
	return func(attempt int, err error) error {
		if errors.Is(err, shotd.ErrNotFound) || errors.Is(err, ErrUnknownVersion) {
			return err
		}
		if !j.pause(ctx, attempt) {
			return shotd.Wrap(shotd.CodeServiceUnavailable, err, msg)
		}
		return nil
	}
}

// recentChanges names the last few changes written to a record (casRecord's), so that a change
// whose write lost its answer can tell that it landed even when other changes came after it.
type recentChanges struct {
	ChangeIDs []string `json:"writes,omitempty"`
}

// keptChanges is how many change ids a record keeps: more than the writes that can come between
// a lost answer and the read that follows it (the record's other writers, a few at once).
const keptChanges = 8

func (c *recentChanges) changes() *recentChanges { return c }

// add names a change's write, forgetting the oldest beyond keptChanges.
func (c *recentChanges) add(id string) {
	c.ChangeIDs = append(c.ChangeIDs, id)
	if n := len(c.ChangeIDs); n > keptChanges {
		c.ChangeIDs = append([]string(nil), c.ChangeIDs[n-keptChanges:]...)
	}
}

func (c *recentChanges) has(id string) bool { return slices.Contains(c.ChangeIDs, id) }

type namedChanges interface{ changes() *recentChanges }

// casRecord is the compare-and-swap update of one record that Jobs, the ledger sweep and the
// Book share: it reads the record (read: it, its revision and its bytes as stored), applies fn
// and writes it over that revision (write: what it sent when the answer was lost, else nil).
// fn's error is returned with nothing written (errUnchanged: nil and the record as it is). A
// failed try goes to again, which answers nil to read and try once more, else the error to
// return. A write whose answer was lost may have landed, later even than a try after it (which
// then met a conflict), and other writers may have changed the record since; fn must not be
// applied twice (an increment, or a start that would read as another delivery's). A record
// with recentChanges carries the change's id, found on every read after the first write; the
// Book's records, whose changes only set fields, are recognised by their bytes. A node of an
// older version that writes a job or batch record drops the ids: in a rolling restart a change
// whose answer was lost just before can then be applied twice.
func casRecord[R any](ctx context.Context, read func(context.Context) (R, uint64, []byte, error),
	write func(context.Context, *R, uint64) ([]byte, error), fn func(*R) error, again func(attempt int, err error) error) (R, error) {
	var sent []byte // the last write's record, whose answer did not come
	id := ""        // this change's, once a write of it was sent
	for attempt := 0; ; attempt++ {
		r, rev, raw, err := read(ctx)
		if err == nil {
			if c, ok := any(&r).(namedChanges); ok {
				if id != "" && c.changes().has(id) {
					return r, nil
				}
			} else if sent != nil && bytes.Equal(raw, sent) {
				return r, nil
			}
		}
		if err == nil {
			if ferr := fn(&r); errors.Is(ferr, errUnchanged) {
				return r, nil
			} else if ferr != nil {
				return r, ferr
			}
			if c, ok := any(&r).(namedChanges); ok {
				if id == "" {
					id = randomToken(9) // no other node's or call's can be mistaken for it
				}
				c.changes().add(id)
			}
			if sent, err = write(ctx, &r, rev); err == nil {
				return r, nil
			}
		}
		if err = again(attempt, err); err != nil {
			return r, err
		}
	}
}

type encoder interface{ encode() ([]byte, error) }

// put writes a record: created when rev is 0, else only over revision rev. It returns what it
// sent when the write failed otherwise than by a conflict (it may have landed), else nil.
func (j *Jobs) put(ctx context.Context, key string, r encoder, rev uint64) ([]byte, error) {
	data, err := r.encode()
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	if rev == 0 {
		_, err = j.kv.Create(actx, key, data)
	} else {
		_, err = j.kv.Update(actx, key, data, rev)
	}
	if err == nil || conflict(err) {
		return nil, err
	}
	return data, err
}

// create writes a new record, retried until ctx ends: a try whose answer was lost may have
// written it, which the next one finds (the same bytes).
func (j *Jobs) create(ctx context.Context, key string, r encoder) error {
	data, err := r.encode()
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err = j.kv.Create(actx, key, data)
		if conflict(err) {
			var e jetstream.KeyValueEntry
			if e, err = j.kv.Get(actx, key); err == nil {
				if !bytes.Equal(e.Value(), data) {
					err = fmt.Errorf("cluster: %s exists already", key)
				}
				cancel()
				return err
			}
		}
		cancel()
		if err == nil || !j.pause(ctx, attempt) {
			return err
		}
	}
}

// remove deletes a record, retried until ctx ends; one that is not there is no error.
func (j *Jobs) remove(ctx context.Context, key string) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := j.kv.Delete(actx, key)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if !j.pause(ctx, attempt) {
			return err
		}
	}
}

// pause waits before another try: a few ms doubled per attempt up to a quarter second; false
// when ctx ends first.
func (j *Jobs) pause(ctx context.Context, attempt int) bool {
	d := time.Duration(1+min(attempt, 8)) * time.Duration(1<<min(attempt, 5)) * time.Millisecond
	select {
	case <-ctx.Done():
		return false
	case <-j.stopped:
		return false
	case <-time.After(min(d, 250*time.Millisecond)):
		return true
	}
}

// Job reads a job of accountID: the same answer on every node (the bucket is read through its
// stream's leader).
func (j *Jobs) Job(accountID, jobID string) (shotd.Job, error) {
	job, err := j.JobByID(jobID)
	if err == nil && job.AccountID != accountID {
		return shotd.Job{}, shotd.ErrNotFound
	}
	return job, err
}

// Batch reads a batch of accountID with its jobs, in request order.
func (j *Jobs) Batch(accountID, batchID string) (shotd.Batch, []shotd.Job, error) {
	b, jobs, err := j.BatchByID(batchID)
	if err == nil && b.AccountID != accountID {
		return shotd.Batch{}, nil, shotd.ErrNotFound
	}
	return b, jobs, err
}

// batchJobs reads the jobs of b, a few at once.
func (j *Jobs) batchJobs(ctx context.Context, b shotd.Batch) ([]shotd.Job, error) {
	jobs := make([]shotd.Job, len(b.JobIDs))
	err := parallel(len(b.JobIDs), func(i int) error {
		r, _, err := j.getJob(ctx, b.JobIDs[i])
		jobs[i] = r.Job
		return err
	})
	return jobs, err
}

// parallel runs f(0..n-1), eight at a time, and returns the first error.
func parallel(n int, f func(i int) error) error {
	sem := make(chan struct{}, 8)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// JobByID reads a job whatever its account (the admin API's look-up).
func (j *Jobs) JobByID(jobID string) (shotd.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, _, err := j.getJob(ctx, jobID)
	return r.Job, err
}

// BatchByID reads a batch and its jobs whatever its account (the admin API's look-up).
func (j *Jobs) BatchByID(batchID string) (shotd.Batch, []shotd.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _, err := j.getBatch(ctx, batchID)
	if err != nil {
		return shotd.Batch{}, nil, err
	}
	jobs, err := j.batchJobs(ctx, b.Batch)
	return b.Batch, jobs, err
}
