package view

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/shotd/shotd"
)

// JobView is the job record as GET /api/v1/jobs/{id} and the webhook body show it.
type JobView struct {
	JobID     string    `json:"job_id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// StartedAt is when its render started (absent while queued); QueuePosition, while it is
	// queued, is its place among its account's queued jobs of this run (1: the next to start).
	StartedAt     *time.Time   `json:"started_at,omitempty"`
	QueuePosition int          `json:"queue_position,omitempty"`
	BatchID       string       `json:"batch_id,omitempty"`
	Result        *ResultView  `json:"result,omitempty"`
	ErrorCode     string       `json:"error_code,omitempty"`
	ErrorMessage  string       `json:"error_message,omitempty"`
	Webhook       *WebhookView `json:"webhook,omitempty"`
	// ExternalIdentifier is the client's own name for the job (external_identifier).
	ExternalIdentifier string `json:"external_identifier,omitempty"`
}

// ResultView is a render result: of a job, or of a sync render with response_type=json.
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

// WebhookView is the webhook part of a job record.
type WebhookView struct {
	URL      string `json:"url"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// BatchView is the batch record of GET /api/v1/batches/{id}.
type BatchView struct {
	BatchID string      `json:"batch_id"`
	Status  string      `json:"status"`
	Total   int         `json:"total"`
	Counts  BatchCounts `json:"counts"`
	Jobs    []JobView   `json:"jobs"`
}

// BatchRecord is the batch record that GET /api/v1/batches/{id} answers: the batch view and how
// far the batch is.
type BatchRecord struct {
	BatchView
	Progress BatchProgress `json:"progress"`
	// Webhook is the batch.done delivery of a bulk request that gave a webhook_url: "pending"
	// until every job ended and the receiver took it.
	Webhook *WebhookView `json:"webhook,omitempty"`
}

// NewBatchRecord is the public record of b with its progress.
func NewBatchRecord(b shotd.Batch, jobs []shotd.Job, publicURL string) BatchRecord {
	v := NewBatchView(b, jobs, publicURL)
	ended := v.Counts.Succeeded + v.Counts.Failed
	r := BatchRecord{BatchView: v, Progress: BatchProgress{Ended: ended, Total: v.Total}}
	if v.Total > 0 {
		r.Progress.Percent = ended * 100 / v.Total
	}
	if w := b.Webhook; w != nil {
		r.Webhook = &WebhookView{URL: w.URL, Status: w.Status, Attempts: w.Attempts}
		if r.Webhook.Status == "" {
			r.Webhook.Status = shotd.WebhookPending
		}
	}
	return r
}

// BatchProgress is how far a batch is.
type BatchProgress struct {
	Ended   int `json:"ended"`
	Total   int `json:"total"`
	Percent int `json:"percent"` // Ended*100/Total, rounded down
}

// BatchCounts counts a batch's jobs by state.
type BatchCounts struct {
	Queued    int `json:"queued"`
	Rendering int `json:"rendering"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
}

// fileURL is the files endpoint's link to fileID; a trailing "/" of publicURL is ignored.
func fileURL(publicURL, fileID string) string {
	return strings.TrimRight(publicURL, "/") + "/api/v1/files/" + fileID
}

// NewResultView is r as clients see it, with the link to its file: the presigned link of the
// service's bucket when r has one, the files endpoint otherwise.
func NewResultView(r shotd.JobResult, publicURL string) ResultView {
	v := ResultView{FileID: r.FileID, URL: r.URL, ExpiresAt: r.ExpiresAt.UTC(), Format: r.Format,
		ContentType: r.ContentType, SizeBytes: r.SizeBytes, RenderMs: r.RenderMs, Cache: r.Cache,
		Width: r.Width, Height: r.Height}
	if v.URL == "" {
		v.URL = fileURL(publicURL, r.FileID)
	}
	link := func(ref *shotd.FileRef) {
		ref.URL = fileURL(publicURL, ref.FileID)
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

// ResultFor is r as the request of o may see it: without the store=true upload's location
// unless o asked for it (storage_return_location). The file record and the job record keep
// the location whatever was asked; it is left out here, where answers are written.
func ResultFor(r shotd.JobResult, o *shotd.Options) shotd.JobResult {
	if !o.Storage.ReturnLocation {
		r.StorageLocation = ""
	}
	return r
}

// PublicResult is j's result as its client may see it (ResultFor its options); nil while it
// has none. Options that do not decode show no location.
func PublicResult(j shotd.Job) *shotd.JobResult {
	r := j.Result
	if r == nil || r.StorageLocation == "" {
		return r // the options are read only when there is something to hide
	}
	var o shotd.Options
	if err := json.Unmarshal(j.Options, &o); err != nil {
		o = shotd.Options{}
	}
	c := ResultFor(*r, &o)
	return &c
}

// NewJobView is the public record of j; its result links to publicURL + "/api/v1/files/" +
// file_id. A delivery without a state yet (the job has not ended) shows as pending: it is still
// to come.
func NewJobView(j shotd.Job, publicURL string) JobView {
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
	if !j.StartedAt.IsZero() && j.Status != shotd.JobQueued {
		t := j.StartedAt.UTC()
		v.StartedAt = &t
	}
	if r := PublicResult(j); r != nil {
		rv := NewResultView(*r, publicURL)
		v.Result = &rv
	}
	if w := j.Webhook; w != nil {
		v.Webhook = &WebhookView{URL: w.URL, Status: w.Status, Attempts: w.Attempts}
		if v.Webhook.Status == "" {
			v.Webhook.Status = shotd.WebhookPending
		}
	}
	return v
}

// NewBatchView is the public record of b with its jobs in batch order: queued while every job
// is queued, done once every job ended, running in between.
func NewBatchView(b shotd.Batch, jobs []shotd.Job, publicURL string) BatchView {
	v := BatchView{BatchID: b.BatchID, Total: len(b.JobIDs), Jobs: make([]JobView, 0, len(jobs))}
	for _, j := range jobs {
		switch j.Status {
		case shotd.JobQueued:
			v.Counts.Queued++
		case shotd.JobRendering:
			v.Counts.Rendering++
		case shotd.JobSucceeded:
			v.Counts.Succeeded++
		case shotd.JobFailed:
			v.Counts.Failed++
		}
		v.Jobs = append(v.Jobs, NewJobView(j, publicURL))
	}
	switch ended := v.Counts.Succeeded + v.Counts.Failed; {
	case ended == len(jobs):
		v.Status = shotd.BatchDone
	case v.Counts.Queued == len(jobs):
		v.Status = shotd.BatchQueued
	default:
		v.Status = shotd.BatchRunning
	}
	return v
}

// S1Result is ScreenshotOne's JSON answer of a render (response_type=json on their paths), and
// the body of their webhooks: the link to the file, the cache's when the cache kept it, the
// upload's location, the metadata asked for.
type S1Result struct {
	IsSuccessful  bool            `json:"is_successful"`
	ScreenshotURL string          `json:"screenshot_url,omitempty"`
	CacheURL      string          `json:"cache_url,omitempty"`
	Store         *StoreView      `json:"store,omitempty"`
	Metadata      *shotd.Metadata `json:"metadata,omitempty"`
}

// NewS1Result is ScreenshotOne's JSON answer of r.
func NewS1Result(r shotd.JobResult, publicURL string, cached bool) S1Result {
	v := NewResultView(r, publicURL)
	out := S1Result{IsSuccessful: true, ScreenshotURL: v.URL, Store: v.Store, Metadata: v.Metadata}
	if cached {
		out.CacheURL = v.URL
	}
	return out
}
