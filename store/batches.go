package store

import (
	"errors"
	"fmt"
	"github.com/shotd/shotd"
	"strings"
	"time"

	"go.etcd.io/bbolt"
)

var bucketBatches = []byte("batches") // batch id -> Batch

// Batch is the set of jobs one bulk request made.
type Batch struct {
	BatchID   string    `json:"batch_id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	JobIDs    []string  `json:"job_ids"` // in request order
}

// Batch states of operator contract 5.6.
const (
	BatchQueued  = "queued"  // no job has started
	BatchRunning = "running" // some job started, not all ended
	BatchDone    = "done"    // every job ended
)

// Batch returns the batch batchID of accountID and its jobs in batch order, read in one
// transaction. A batch that does not exist or belongs to another account gives the same error
// wrapping ErrNotFound. The sweeper deletes a batch with all its jobs, never part of them.
func (s *Store) Batch(accountID, batchID string) (Batch, []Job, error) {
	notFound := fmt.Errorf("store: batch %s: %w", batchID, ErrNotFound)
	var (
		b    Batch
		jobs []Job
	)
	err := s.db.View(func(tx *bbolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketBatches), batchID, &b)
		if err != nil {
			return err
		}
		if !ok || b.AccountID != accountID {
			return notFound
		}
		jobs = make([]Job, 0, len(b.JobIDs))
		for _, id := range b.JobIDs {
			r, err := getJob(tx, id)
			if errors.Is(err, ErrNotFound) {
				continue // cannot happen: a batch goes with its jobs; show what there is
			}
			if err != nil {
				return err
			}
			jobs = append(jobs, r.job())
		}
		return nil
	})
	if err != nil {
		return Batch{}, nil, err
	}
	return b, jobs, nil
}

// JobView is the job record of operator contract 5.2 as GET /api/v1/jobs/{id} and the webhook
// body show it.
type JobView struct {
	JobID        string       `json:"job_id"`
	Status       string       `json:"status"`
	CreatedAt    time.Time    `json:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at"`
	BatchID      string       `json:"batch_id,omitempty"`
	Result       *ResultView  `json:"result,omitempty"`
	ErrorCode    string       `json:"error_code,omitempty"`
	ErrorMessage string       `json:"error_message,omitempty"`
	Webhook      *WebhookView `json:"webhook,omitempty"`
	// ExternalIdentifier is the client's own name for the job (external_identifier).
	ExternalIdentifier string `json:"external_identifier,omitempty"`
}

// ResultView is the render result of operator contract 5.4.
type ResultView struct {
	FileID      string    `json:"file_id"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expires_at"`
	Format      string    `json:"format"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	RenderMs    int64     `json:"render_ms"`
	Cache       string    `json:"cache"`
	Width       int       `json:"width,omitempty"`
	Height      int       `json:"height,omitempty"`
	// Store is there when store=true asked for the location (storage_return_location).
	Store *StoreView `json:"store,omitempty"`
	// Metadata is what the metadata_* options asked for, Slices the slices of
	// full_page_slices, each with the link to its file (ScreenshotOne's names).
	Metadata *shotd.Metadata `json:"metadata,omitempty"`
	Slices   []shotd.Slice   `json:"slices,omitempty"`
}

// StoreView tells where store=true uploaded the file, as ScreenshotOne's store.location does.
type StoreView struct {
	Location string `json:"location"`
}

// View is the result as clients see it, with the link to its file: the presigned link of the
// service's bucket when there is one, the files endpoint otherwise.
func (r JobResult) View(publicURL string) ResultView {
	v := ResultView{FileID: r.FileID, URL: r.URL, ExpiresAt: r.ExpiresAt.UTC(), Format: r.Format,
		ContentType: r.ContentType, SizeBytes: r.SizeBytes, RenderMs: r.RenderMs, Cache: r.Cache,
		Width: r.Width, Height: r.Height}
	if v.URL == "" {
		v.URL = strings.TrimRight(publicURL, "/") + "/api/v1/files/" + r.FileID
	}
	link := func(ref *shotd.FileRef) {
		ref.URL = strings.TrimRight(publicURL, "/") + "/api/v1/files/" + ref.FileID
		ref.Expires = ref.Expires.UTC()
	}
	if r.Metadata != nil {
		m := *r.Metadata
		if m.Content != nil {
			c := *m.Content
			link(&c)
			m.Content = &c
		}
		v.Metadata = &m
	}
	for _, sl := range r.Slices {
		link(&sl.FileRef)
		v.Slices = append(v.Slices, sl)
	}
	if r.StorageLocation != "" {
		v.Store = &StoreView{Location: r.StorageLocation}
	}
	return v
}

// ResultOf describes a stored file as a render result; cache is "HIT" or "MISS".
func ResultOf(rec FileRecord, cache string) JobResult {
	return JobResult{FileID: rec.FileID, ExpiresAt: rec.ExpiresAt, Format: rec.Format, ContentType: rec.ContentType,
		SizeBytes: rec.SizeBytes, RenderMs: rec.RenderMs, Cache: cache, Width: rec.Width, Height: rec.Height,
		StorageLocation: rec.StorageLocation, Metadata: rec.Metadata, Slices: rec.Slices}
}

// WebhookView is the webhook part of a job record.
type WebhookView struct {
	URL      string `json:"url"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// View returns the public record of j. publicURL is the service's public URL (a trailing "/" is
// ignored); the result's url is publicURL + "/api/v1/files/" + file_id. A delivery without a
// state yet (the job has not ended) shows as pending: it is still to come.
func (j Job) View(publicURL string) JobView {
	v := JobView{
		JobID:              j.JobID,
		Status:             j.Status,
		CreatedAt:          j.CreatedAt.UTC(),
		UpdatedAt:          j.UpdatedAt.UTC(),
		BatchID:            j.BatchID,
		ErrorCode:          j.ErrorCode,
		ErrorMessage:       j.ErrorMessage,
		ExternalIdentifier: j.ExternalIdentifier,
	}
	if r := j.Result; r != nil {
		rv := r.View(publicURL)
		v.Result = &rv
	}
	if w := j.Webhook; w != nil {
		v.Webhook = &WebhookView{URL: w.URL, Status: w.Status, Attempts: w.Attempts}
		if v.Webhook.Status == "" {
			v.Webhook.Status = WebhookPending
		}
	}
	return v
}

// BatchView is the batch record of operator contract 5.6 (GET /api/v1/batches/{id}).
type BatchView struct {
	BatchID string      `json:"batch_id"`
	Status  string      `json:"status"`
	Total   int         `json:"total"`
	Counts  BatchCounts `json:"counts"`
	Jobs    []JobView   `json:"jobs"`
}

// BatchCounts counts a batch's jobs by state.
type BatchCounts struct {
	Queued    int `json:"queued"`
	Rendering int `json:"rendering"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// View returns the public record of b with its jobs as Store.Batch returns them: queued while
// every job is queued, done once every job ended, running in between.
func (b Batch) View(jobs []Job, publicURL string) BatchView {
	v := BatchView{BatchID: b.BatchID, Total: len(b.JobIDs), Jobs: make([]JobView, 0, len(jobs))}
	for _, j := range jobs {
		switch j.Status {
		case JobQueued:
			v.Counts.Queued++
		case JobRendering:
			v.Counts.Rendering++
		case JobSucceeded:
			v.Counts.Succeeded++
		case JobFailed:
			v.Counts.Failed++
		}
		v.Jobs = append(v.Jobs, j.View(publicURL))
	}
	switch ended := v.Counts.Succeeded + v.Counts.Failed; {
	case ended == len(jobs):
		v.Status = BatchDone
	case v.Counts.Queued == len(jobs):
		v.Status = BatchQueued
	default:
		v.Status = BatchRunning
	}
	return v
}
