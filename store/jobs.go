package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shotd/shotd"

	"go.etcd.io/bbolt"
)

// JobIDPrefix and BatchIDPrefix start every job and batch id.
const (
	JobIDPrefix   = "job_"
	BatchIDPrefix = "bat_"
)

// jobIDBytes: 128 random bits, like file ids, in a batch id and in a job id made before job ids
// began with their time; the id travels in URLs and webhook bodies.
const jobIDBytes = 16

// A job id is its prefix and 22 url-safe characters, as it always was; the first jobIDTimeChars
// of them are its creation time in milliseconds, in an alphabet whose characters sort as their
// values, and the other jobIDRandChars are random (90 bits: an id is still not to be guessed,
// and ownership is checked besides). Ids made one after another sort one after another, so that
// the jobs a commit creates share the last leaves of jobs and jobs_active instead of each
// dirtying a leaf of its own: a commit's cost grows with its pages (docs/performance.md). Ids
// made before are random and stay valid: every id is only a key.
const (
	jobIDTimeChars = 7  // 42 bits of Unix milliseconds: up to the year 2109
	jobIDRandChars = 15 // 90 random bits
)

// sortedAlphabet holds the 64 url-safe characters in byte order: an id's time reads in order.
const sortedAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

var (
	bucketJobs            = []byte("jobs")             // job id -> jobRecord
	bucketJobsActive      = []byte("jobs_active")      // job id -> empty, while queued or rendering
	bucketWebhooksPending = []byte("webhooks_pending") // job id -> empty, while the delivery is pending
	bucketJobsDone        = []byte("jobs_done")        // doneKey(updated_at, job id) -> empty, final jobs
)

// JobRetention is how long a finished job (and its batch) is kept after its last change before
// the sweeper deletes it. Set it before Open; the sweeper reads it on every sweep.
var JobRetention = 7 * 24 * time.Hour

// finalStatus reports whether a job in state s has ended.
func finalStatus(s string) bool { return s == shotd.JobSucceeded || s == shotd.JobFailed }

// webhookPending reports whether j has a delivery waiting to be made.
func webhookPending(j shotd.Job) bool {
	return j.Webhook != nil && j.Webhook.Status == shotd.WebhookPending
}

// jobRecord is the stored form of a Job: it keeps the webhook fields that the public form hides.
type jobRecord struct {
	JobID        string           `json:"job_id"`
	AccountID    string           `json:"account_id"`
	AccessKey    string           `json:"access_key"`
	BatchID      string           `json:"batch_id,omitempty"`
	Index        int              `json:"index"`
	Status       string           `json:"status"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
	StartedAt    time.Time        `json:"started_at,omitzero"`
	Options      json.RawMessage  `json:"options"`
	Result       *shotd.JobResult `json:"result,omitempty"`
	ErrorCode    string           `json:"error_code,omitempty"`
	ErrorMessage string           `json:"error_message,omitempty"`
	Webhook      *webhookRecord   `json:"webhook,omitempty"`
	ExternalID   string           `json:"external_identifier,omitempty"`
	Interrupted  int              `json:"interrupted,omitempty"`
}

type webhookRecord struct {
	URL           string    `json:"url"`
	Status        string    `json:"status,omitempty"`
	Attempts      int       `json:"attempts"`
	Sign          bool      `json:"sign"`
	SkipFailed    bool      `json:"skip_failed,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	LastError     string    `json:"last_error,omitempty"`
}

// toRecord also brings every time to UTC without a monotonic reading, as now() makes them.
func toRecord(j shotd.Job) jobRecord {
	r := jobRecord{
		JobID: j.JobID, AccountID: j.AccountID, AccessKey: j.AccessKey, BatchID: j.BatchID,
		Index: j.Index, Status: j.Status, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		Options: j.Options, ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage, ExternalID: j.ExternalIdentifier,
		Interrupted: j.Interrupted,
	}
	r.CreatedAt, r.UpdatedAt = inUTC(r.CreatedAt), inUTC(r.UpdatedAt)
	if !j.StartedAt.IsZero() {
		r.StartedAt = inUTC(j.StartedAt)
	}
	if j.Result != nil {
		res := *j.Result
		res.ExpiresAt = inUTC(res.ExpiresAt)
		r.Result = &res
	}
	r.Webhook = newWebhookRecord(j.Webhook)
	return r
}

// newWebhookRecord is the stored form of w, in full (nil for nil).
func newWebhookRecord(w *shotd.WebhookState) *webhookRecord {
	if w == nil {
		return nil
	}
	return &webhookRecord{URL: w.URL, Status: w.Status, Attempts: w.Attempts, Sign: w.Sign,
		SkipFailed: w.SkipFailed, NextAttemptAt: inUTC(w.NextAttemptAt), LastError: w.LastError}
}

// state is the delivery state w stores (nil for nil).
func (w *webhookRecord) state() *shotd.WebhookState {
	if w == nil {
		return nil
	}
	return &shotd.WebhookState{URL: w.URL, Status: w.Status, Attempts: w.Attempts, Sign: w.Sign,
		SkipFailed: w.SkipFailed, NextAttemptAt: w.NextAttemptAt, LastError: w.LastError}
}

func inUTC(t time.Time) time.Time { return t.UTC().Round(0) }

func (r jobRecord) job() shotd.Job {
	j := shotd.Job{
		JobID: r.JobID, AccountID: r.AccountID, AccessKey: r.AccessKey, BatchID: r.BatchID,
		Index: r.Index, Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Options: r.Options, Result: r.Result, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage,
		ExternalIdentifier: r.ExternalID, Interrupted: r.Interrupted, StartedAt: r.StartedAt,
	}
	j.Webhook = r.Webhook.state()
	return j
}

// NewJobID returns "job_" and 22 url-safe characters: the time now, then 90 random bits.
func NewJobID() string { return timeOrderedID(JobIDPrefix, time.Now()) }

// timeOrderedID is prefix, t's Unix milliseconds in jobIDTimeChars of sortedAlphabet, and
// jobIDRandChars random characters.
func timeOrderedID(prefix string, t time.Time) string {
	id := make([]byte, len(prefix)+jobIDTimeChars+jobIDRandChars)
	copy(id, prefix)
	ms := uint64(t.UnixMilli())
	for i := len(prefix) + jobIDTimeChars - 1; i >= len(prefix); i-- {
		id[i] = sortedAlphabet[ms&63]
		ms >>= 6
	}
	// 12 random bytes are 16 characters, the first 15 of them all random bits (90).
	copy(id[len(prefix)+jobIDTimeChars:], randomToken(12))
	return string(id)
}

// NewBatchID returns "bat_" and 128 random bits, url-safe.
func NewBatchID() string { return BatchIDPrefix + randomToken(jobIDBytes) }

// CreateJobs stores jobs, all queued, and the batch when batch is not nil, in one transaction
// (which concurrent calls may share, each returning once it committed): all or nothing. It sets Status, CreatedAt and UpdatedAt of every job (CreatedAt is kept when
// the caller set it), and with a batch also each job's BatchID and Index (its position in jobs)
// and the batch's CreatedAt and JobIDs, writing them back into jobs and *batch once the
// transaction committed, so that the caller holds what was stored. A job or batch id that
// exists gives an error wrapping ErrConflict.
func (s *Store) CreateJobs(jobs []shotd.Job, batch *shotd.Batch) error {
	recs, b, err := newJobRecords(jobs, batch)
	if err != nil {
		return err
	}
	// Concurrent submits share commits (an async accept is one commit, its fsync most of its
	// time); each returns after the commit that holds its jobs. The function may run twice: it
	// only writes what it was given.
	err = s.group.update(func(tx *bbolt.Tx) error {
		jb := tx.Bucket(bucketJobs)
		for _, r := range recs {
			if jb.Get([]byte(r.JobID)) != nil {
				return fmt.Errorf("store: job %s exists: %w", r.JobID, ErrConflict)
			}
			if err := putJob(tx, nil, r); err != nil {
				return err
			}
		}
		if batch == nil {
			return nil
		}
		bb := tx.Bucket(bucketBatches)
		if bb.Get([]byte(b.BatchID)) != nil {
			return fmt.Errorf("store: batch %s exists: %w", b.BatchID, ErrConflict)
		}
		return putBatch(bb, b)
	})
	if err != nil {
		return fmt.Errorf("store: create jobs: %w", err)
	}
	for i := range jobs {
		jobs[i] = recs[i].job()
	}
	if batch != nil {
		*batch = b
	}
	return nil
}

// newJobRecords checks new jobs and their batch (nil: none) and returns their records and the
// batch as they will be stored: queued, created now unless given, in UTC, each job numbered by
// its place in the batch.
func newJobRecords(jobs []shotd.Job, batch *shotd.Batch) ([]jobRecord, shotd.Batch, error) {
	var b shotd.Batch
	if len(jobs) == 0 {
		return nil, b, errors.New("store: create jobs: no jobs")
	}
	created := now()
	if batch != nil {
		b = *batch
		if b.BatchID == "" || b.AccountID == "" {
			return nil, b, errors.New("store: create jobs: the batch needs an id and an account")
		}
		if b.JobIDs != nil && len(b.JobIDs) != len(jobs) {
			return nil, b, fmt.Errorf("store: create jobs: batch lists %d jobs, %d given", len(b.JobIDs), len(jobs))
		}
		if b.CreatedAt.IsZero() {
			b.CreatedAt = created
		}
		b.CreatedAt = inUTC(b.CreatedAt)
		b.JobIDs = make([]string, len(jobs))
	}
	recs := make([]jobRecord, len(jobs))
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if err := checkNewJob(i, j, seen); err != nil {
			return nil, b, err
		}
		seen[j.JobID] = true
		j.Status = shotd.JobQueued
		if j.CreatedAt.IsZero() {
			j.CreatedAt = created
		}
		j.CreatedAt = inUTC(j.CreatedAt)
		j.UpdatedAt = j.CreatedAt
		switch {
		case batch != nil:
			if err := checkBatchMember(i, j, b, batch.JobIDs); err != nil {
				return nil, b, err
			}
			j.BatchID, j.Index = b.BatchID, i
			b.JobIDs[i] = j.JobID
		case j.BatchID != "":
			return nil, b, fmt.Errorf("store: create jobs: job %s names batch %s but no batch is given", j.JobID, j.BatchID)
		}
		recs[i] = toRecord(j)
	}
	return recs, b, nil
}

// checkNewJob refuses job i of a creation when it could not be a new job: no id or account, an
// id given twice (seen), a state other than queued, options that are not JSON, a webhook
// without a url or with a delivery state already.
func checkNewJob(i int, j shotd.Job, seen map[string]bool) error {
	switch {
	case j.JobID == "" || j.AccountID == "":
		return fmt.Errorf("store: create jobs: job %d needs an id and an account", i)
	case seen[j.JobID]:
		return fmt.Errorf("store: create jobs: job %s given twice: %w", j.JobID, ErrConflict)
	case j.Status != "" && j.Status != shotd.JobQueued:
		return fmt.Errorf("store: create jobs: job %s: a new job is queued, not %q", j.JobID, j.Status)
	case len(j.Options) == 0 || !json.Valid(j.Options):
		return fmt.Errorf("store: create jobs: job %s: options must be JSON", j.JobID)
	case j.Webhook != nil && (j.Webhook.URL == "" || j.Webhook.Status != ""):
		return fmt.Errorf("store: create jobs: job %s: a webhook needs a url and no delivery state yet", j.JobID)
	}
	return nil
}

// checkBatchMember refuses job j at place i of batch b when they disagree: another account, a
// batch id or index of its own, or another job listed at i by the caller (listed; nil: none).
func checkBatchMember(i int, j shotd.Job, b shotd.Batch, listed []string) error {
	switch {
	case j.AccountID != b.AccountID:
		return fmt.Errorf("store: create jobs: job %s belongs to another account than its batch", j.JobID)
	case j.BatchID != "" && j.BatchID != b.BatchID, j.Index != 0 && j.Index != i:
		return fmt.Errorf("store: create jobs: job %s: batch id or index disagree with the batch", j.JobID)
	case listed != nil && listed[i] != j.JobID:
		return fmt.Errorf("store: create jobs: batch lists %s at %d, not %s", listed[i], i, j.JobID)
	}
	return nil
}

// Job returns the job jobID of accountID. A job that does not exist or belongs to another
// account gives the same error wrapping ErrNotFound, so that nobody learns another's id exists.
func (s *Store) Job(accountID, jobID string) (shotd.Job, error) {
	j, err := s.JobByID(jobID)
	if err != nil {
		return shotd.Job{}, err
	}
	if j.AccountID != accountID {
		return shotd.Job{}, jobNotFound(jobID)
	}
	return j, nil
}

// JobByID returns the job jobID whatever its account: for the workers, never for a request.
func (s *Store) JobByID(jobID string) (shotd.Job, error) {
	r, err := view(s, func(tx *bbolt.Tx) (jobRecord, error) { return getJob(tx, jobID) })
	if err != nil {
		return shotd.Job{}, err
	}
	return r.job(), nil
}

func jobNotFound(jobID string) error {
	return fmt.Errorf("store: job %s: %w", jobID, shotd.ErrNotFound)
}

func getJob(tx *bbolt.Tx, jobID string) (jobRecord, error) {
	return getRecord[jobRecord](tx.Bucket(bucketJobs), jobID, func() error { return jobNotFound(jobID) })
}

// UpdateJob applies fn to the job jobID in one transaction, sets UpdatedAt and returns the job as
// stored, once it is on disk. An error from fn aborts the change and is returned as it is. The
// indexes follow whatever fn changed. Rules, each an error that aborts the change:
//   - fn may not change JobID, AccountID, BatchID, Index or CreatedAt (ErrConflict);
//   - Status must be a job state, and a final job (succeeded, failed) keeps its state
//     (ErrConflict);
//   - while the job is queued or rendering its webhook has no delivery state.
//
// When the job ends with a webhook whose Status is "", the delivery becomes pending in the same
// transaction (NextAttemptAt now unless fn set it), so that no ended job can lose its delivery.
//
// Concurrent updates (and job creations) share commits, as CreateJobs's do. fn is called with
// the job as stored; it may be called a second time, on the job read again, when the commit it
// shared failed for another update's reason: it sets fields, it does not count its calls.
func (s *Store) UpdateJob(jobID string, fn func(*shotd.Job) error) (shotd.Job, error) {
	return s.updateJob(jobID, fn, nil)
}

// updateJob is UpdateJob; ended, when set, writes more in the same transaction when the job
// ends (it was not final, it is now).
func (s *Store) updateJob(jobID string, fn func(*shotd.Job) error, ended func(tx *bbolt.Tx, j shotd.Job) error) (shotd.Job, error) {
	var out shotd.Job
	var panicked any
	err := s.group.update(func(tx *bbolt.Tx) error {
		panicked = nil
		old, err := getJob(tx, jobID)
		if err != nil {
			return refuse(err)
		}
		j := old.job()
		// Up to putJob nothing is written: a refusal leaves the shared commit to the others.
		if p, err := applyUpdate(fn, &j); p != nil {
			panicked = p
			return refuse(errUpdatePanicked)
		} else if err != nil {
			return refuse(err)
		}
		if err := checkUpdate(old, &j); err != nil {
			return refuse(err)
		}
		j.UpdatedAt = now()
		if w := j.Webhook; j.Status == shotd.JobFailed && !finalStatus(old.Status) && w != nil && w.SkipFailed {
			j.Webhook = nil // webhook_errors=false: a failed job sends none
		}
		if w := j.Webhook; j.Final() && w != nil && w.Status == "" {
			w.Status = shotd.WebhookPending
			if w.NextAttemptAt.IsZero() {
				w.NextAttemptAt = j.UpdatedAt
			}
		}
		r := toRecord(j)
		if err := putJob(tx, &old, r); err != nil {
			return err
		}
		out = r.job()
		if ended != nil && j.Final() && !finalStatus(old.Status) {
			return ended(tx, out)
		}
		return nil
	})
	if panicked != nil {
		panic(panicked) // in the caller's goroutine, not in the one that committed the round
	}
	if err != nil {
		return shotd.Job{}, err
	}
	return out, nil
}

var errUpdatePanicked = errors.New("store: update function panicked")

// applyUpdate calls fn, turning a panic into a value: fn may run in another updater's goroutine,
// which commits the round, and must not take that one down.
func applyUpdate(fn func(*shotd.Job) error, j *shotd.Job) (panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return nil, fn(j)
}

// checkUpdate enforces UpdateJob's rules on j, the result of fn applied to old.
func checkUpdate(old jobRecord, j *shotd.Job) error {
	switch {
	case j.JobID != old.JobID || j.AccountID != old.AccountID || j.BatchID != old.BatchID ||
		j.Index != old.Index || !j.CreatedAt.Equal(old.CreatedAt):
		return fmt.Errorf("store: job %s: id, account, batch, index and created_at cannot change: %w", old.JobID, ErrConflict)
	case j.Status != shotd.JobQueued && j.Status != shotd.JobRendering && !j.Final():
		return fmt.Errorf("store: job %s: unknown state %q", old.JobID, j.Status)
	case finalStatus(old.Status) && j.Status != old.Status:
		return fmt.Errorf("store: job %s: %s cannot become %s: %w", old.JobID, old.Status, j.Status, ErrConflict)
	}
	if w := j.Webhook; w != nil {
		switch w.Status {
		case "", shotd.WebhookPending, shotd.WebhookDelivered, shotd.WebhookFailed:
		default:
			return fmt.Errorf("store: job %s: unknown webhook state %q", old.JobID, w.Status)
		}
		if !j.Final() && w.Status != "" {
			return fmt.Errorf("store: job %s: webhook %s while the job is %s", old.JobID, w.Status, j.Status)
		}
	}
	return nil
}

// putJob writes r and brings the three indexes in line with it. old is the record r replaces,
// nil for a new job: its done entry is keyed by its UpdatedAt, which r changes.
func putJob(tx *bbolt.Tx, old *jobRecord, r jobRecord) error {
	id := []byte(r.JobID)
	done := tx.Bucket(bucketJobsDone)
	for _, b := range [][]byte{bucketJobs, bucketJobsActive, bucketJobsDone} {
		// Keyed by time (NewJobID, doneKey), they grow at their end: a leaf split there is
		// never filled again, so it is split full (bbolt's default leaves it half empty).
		tx.Bucket(b).FillPercent = appendFill
	}
	if old != nil && finalStatus(old.Status) {
		if err := done.Delete(doneKey(old.UpdatedAt, old.JobID)); err != nil {
			return err
		}
	}
	j := r.job()
	steps := []struct {
		b  *bbolt.Bucket
		k  []byte
		in bool
	}{
		{tx.Bucket(bucketJobsActive), id, !j.Final()},
		{tx.Bucket(bucketWebhooksPending), id, webhookPending(j)},
		{done, doneKey(r.UpdatedAt, r.JobID), j.Final()},
	}
	for _, st := range steps {
		var err error
		if st.in {
			err = st.b.Put(st.k, nil)
		} else {
			err = st.b.Delete(st.k)
		}
		if err != nil {
			return err
		}
	}
	return putJSON(tx.Bucket(bucketJobs), r.JobID, r)
}

// appendFill is the FillPercent of the job buckets, which grow at their end; a little room is
// left for the records that grow in place as their job runs (status, result).
const appendFill = 0.9

// deleteJob removes r and its index entries.
func deleteJob(tx *bbolt.Tx, r jobRecord) error {
	id := []byte(r.JobID)
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bucketJobsActive, id},
		{bucketWebhooksPending, id},
		{bucketJobsDone, doneKey(r.UpdatedAt, r.JobID)},
		{bucketUnbilled, id},
		{bucketJobs, id},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	return nil
}

// doneKey orders final jobs by their last change, so that the sweeper reads only the old ones:
// 8 bytes of big-endian Unix nanoseconds, then the job id.
func doneKey(updated time.Time, jobID string) []byte {
	k := make([]byte, 8, 8+len(jobID))
	binary.BigEndian.PutUint64(k, uint64(updated.UnixNano()))
	return append(k, jobID...)
}

// RequeueUnfinished sets every rendering job back to queued in one transaction and returns every
// queued job, oldest first (a batch in its order). The job actor calls it at start, before it
// dispatches anything: a job found rendering was cut short by a stop or a crash, and counts one
// more interruption. A job interrupted shotd.MaxJobInterruptions times fails instead
// (internal_error), its webhook pending, and is returned in failed: a page that kills the
// process must not crash it at every start.
func (s *Store) RequeueUnfinished() (queued, failed []shotd.Job, err error) {
	err = s.db.Update(func(tx *bbolt.Tx) error {
		queued, failed = queued[:0], failed[:0]
		ids, err := indexKeys(tx.Bucket(bucketJobsActive))
		if err != nil {
			return err
		}
		t := now()
		for _, id := range ids {
			r, err := getJob(tx, id)
			if errors.Is(err, shotd.ErrNotFound) || err == nil && finalStatus(r.Status) {
				// An entry without an active job cannot be made by putJob; drop it all the same.
				if err := tx.Bucket(bucketJobsActive).Delete([]byte(id)); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if r.Status != shotd.JobRendering {
				queued = append(queued, r.job())
				continue
			}
			old := r
			r.Status, r.UpdatedAt, r.Interrupted = shotd.JobQueued, t, r.Interrupted+1
			if r.Interrupted >= shotd.MaxJobInterruptions {
				r.Status, r.ErrorCode = shotd.JobFailed, string(shotd.CodeInternalError)
				r.ErrorMessage = fmt.Sprintf("the service stopped %d times while rendering this job; it is not tried again", r.Interrupted)
				if w := r.Webhook; w != nil && w.SkipFailed {
					r.Webhook = nil
				} else if w != nil {
					w.Status, w.NextAttemptAt = shotd.WebhookPending, t
				}
			}
			if err := putJob(tx, &old, r); err != nil {
				return err
			}
			if r.Status == shotd.JobFailed {
				failed = append(failed, r.job())
			} else {
				queued = append(queued, r.job())
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: requeue unfinished jobs: %w", err)
	}
	slices.SortFunc(queued, func(a, b shotd.Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.BatchID, b.BatchID),
			cmp.Compare(a.Index, b.Index), strings.Compare(a.JobID, b.JobID))
	})
	return queued, failed, nil
}

// PendingWebhooks returns the jobs whose delivery is pending, the earliest NextAttemptAt first:
// the webhook actor resumes them at start.
func (s *Store) PendingWebhooks() ([]shotd.Job, error) {
	var jobs []shotd.Job
	err := s.db.View(func(tx *bbolt.Tx) error {
		ids, err := indexKeys(tx.Bucket(bucketWebhooksPending))
		if err != nil {
			return err
		}
		for _, id := range ids {
			r, err := getJob(tx, id)
			if errors.Is(err, shotd.ErrNotFound) {
				continue // cannot happen (putJob and deleteJob keep the index); skip it all the same
			}
			if err != nil {
				return err
			}
			if j := r.job(); webhookPending(j) {
				jobs = append(jobs, j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: pending webhooks: %w", err)
	}
	slices.SortFunc(jobs, func(a, b shotd.Job) int {
		return cmp.Or(a.Webhook.NextAttemptAt.Compare(b.Webhook.NextAttemptAt), strings.Compare(a.JobID, b.JobID))
	})
	return jobs, nil
}

// indexKeys copies the keys of an index bucket, so that the caller may change the bucket.
func indexKeys(b *bbolt.Bucket) ([]string, error) {
	var ids []string
	err := b.ForEach(func(k, _ []byte) error {
		ids = append(ids, string(k))
		return nil
	})
	return ids, err
}

// sweepJobs deletes final jobs whose last change is JobRetention old at now, with no pending
// delivery. A job of a batch goes only with the whole batch, once every job of it can go, so
// that a batch never shows part of its jobs. It returns how many jobs and batches it deleted.
// Each transaction deletes about sweepBatch jobs (a batch is never split).
func (s *Store) sweepJobs(now time.Time) (int, error) {
	cutoff := doneKey(now.Add(-JobRetention), "")
	binary.BigEndian.PutUint64(cutoff, binary.BigEndian.Uint64(cutoff)+1) // keys below: updated at or before
	total := 0
	var after []byte // candidates left alone so far; the next read starts past them
	for {
		var cands []string
		var last []byte
		err := s.db.View(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bucketJobsDone).Cursor()
			k, _ := c.First()
			if after != nil {
				if k, _ = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && bytes.Compare(k, cutoff) < 0 && len(cands) < sweepBatch; k, _ = c.Next() {
				cands = append(cands, string(k[8:]))
				last = append(last[:0], k...)
			}
			return nil
		})
		if err != nil || len(cands) == 0 {
			return total, err
		}
		var n int
		err = s.db.Update(func(tx *bbolt.Tx) error {
			n = 0
			cutoffTime := now.Add(-JobRetention)
			decided := map[string]bool{} // batch id -> deleted already or kept
			for _, id := range cands {
				r, err := getJob(tx, id)
				if errors.Is(err, shotd.ErrNotFound) {
					continue // deleted with its batch a moment ago
				}
				if err != nil {
					return err
				}
				if !sweepable(r, cutoffTime) {
					continue
				}
				if r.BatchID == "" {
					if err := deleteJob(tx, r); err != nil {
						return err
					}
					n++
					continue
				}
				if decided[r.BatchID] {
					continue
				}
				decided[r.BatchID] = true
				m, err := sweepBatchJobs(tx, r, cutoffTime)
				if err != nil {
					return err
				}
				n += m
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("store: sweep jobs: %w", err)
		}
		total += n
		if len(cands) < sweepBatch {
			return total, nil
		}
		after = last
	}
}

// sweepable: r ended, its delivery is not pending, and its last change is at or before cutoff.
func sweepable(r jobRecord, cutoff time.Time) bool {
	j := r.job()
	return j.Final() && !webhookPending(j) && !r.UpdatedAt.After(cutoff)
}

// sweepBatchJobs deletes the batch of r with all its jobs when every one of them is sweepable,
// and returns how many records it deleted. A job whose batch record is missing goes alone.
func sweepBatchJobs(tx *bbolt.Tx, r jobRecord, cutoff time.Time) (int, error) {
	var b shotd.Batch
	ok, err := getJSON(tx.Bucket(bucketBatches), r.BatchID, &b)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 1, deleteJob(tx, r)
	}
	if w := b.Webhook; w != nil && (w.Status == shotd.WebhookPending || w.Status == "") {
		// Its delivery is under way, or due and not started yet (every job ended): kept until
		// it ends, as a job with its webhook pending is.
		return 0, nil
	}
	members := make([]jobRecord, 0, len(b.JobIDs))
	for _, id := range b.JobIDs {
		m, err := getJob(tx, id)
		if errors.Is(err, shotd.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if !sweepable(m, cutoff) {
			return 0, nil
		}
		members = append(members, m)
	}
	for _, m := range members {
		if err := deleteJob(tx, m); err != nil {
			return 0, err
		}
	}
	return len(members) + 1, tx.Bucket(bucketBatches).Delete([]byte(b.BatchID))
}

// CreateFinishedJob stores a job that has already ended (a sync render whose webhook_url asks
// for a delivery): succeeded with its result, or failed with its code, and its webhook pending,
// in one transaction. It is never queued, so a crash cannot requeue and render it again; the
// pending webhook is found by PendingWebhooks at the next start. It sets UpdatedAt (CreatedAt
// too when unset) and writes back into *j what was stored.
func (s *Store) CreateFinishedJob(j *shotd.Job) error {
	switch {
	case j.JobID == "" || j.AccountID == "" || j.BatchID != "":
		return errors.New("store: create finished job: it needs an id and an account, and no batch")
	case !j.Final():
		return fmt.Errorf("store: create finished job %s: %q has not ended", j.JobID, j.Status)
	case j.Status == shotd.JobSucceeded && j.Result == nil:
		return fmt.Errorf("store: create finished job %s: succeeded without a result", j.JobID)
	case len(j.Options) == 0 || !json.Valid(j.Options):
		return fmt.Errorf("store: create finished job %s: options must be JSON", j.JobID)
	case j.Webhook == nil || j.Webhook.URL == "":
		return fmt.Errorf("store: create finished job %s: it needs a webhook", j.JobID)
	}
	t := now()
	if j.CreatedAt.IsZero() {
		j.CreatedAt = t
	}
	j.UpdatedAt = t
	w := *j.Webhook
	w.Status, w.Attempts, w.NextAttemptAt = shotd.WebhookPending, 0, t
	j.Webhook = &w
	r := toRecord(*j)
	err := s.group.update(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketJobs).Get([]byte(r.JobID)) != nil {
			return fmt.Errorf("store: job %s exists: %w", r.JobID, ErrConflict)
		}
		return putJob(tx, nil, r)
	})
	if err != nil {
		return fmt.Errorf("store: create finished job: %w", err)
	}
	*j = r.job()
	return nil
}
