package shotd

import (
	"encoding/json"
	"time"
)

// Job states: a job is queued, then rendering, then ends succeeded or failed.
const (
	JobQueued    = "queued"
	JobRendering = "rendering"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
)

// Webhook delivery states. A job's delivery has no state ("") until the job ends.
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// Job is a background render: one async=true request, or one item of a bulk request.
type Job struct {
	JobID        string
	AccountID    string
	AccessKey    string // the key that created the job; its secret signs the webhook
	BatchID      string
	Index        int // position in its batch
	Status       string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	StartedAt    time.Time       // when its render last started; zero while it never did
	Options      json.RawMessage // the validated Options as JSON, re-read at restart
	Result       *JobResult
	ErrorCode    string
	ErrorMessage string
	Webhook      *WebhookState // nil when no webhook_url
	// ExternalIdentifier is the client's own name for the job (external_identifier).
	ExternalIdentifier string
	// Interrupted counts the starts of the service that found the job rendering: its render
	// died with the process (or was cut by a shutdown). At MaxJobInterruptions the job fails.
	Interrupted int
}

// MaxJobInterruptions is how many times a job's render may die with the service before the
// job fails (internal_error) rather than be queued again: a page that kills the process would
// otherwise crash it at every start.
const MaxJobInterruptions = 3

// Final reports whether the job has ended (succeeded or failed).
func (j Job) Final() bool { return j.Status == JobSucceeded || j.Status == JobFailed }

// WebhookState is the delivery state of a job's webhook. Sign, NextAttemptAt and LastError are
// kept but never shown to clients.
type WebhookState struct {
	URL           string    `json:"url"`
	Status        string    `json:"status"` // "" until the job ends, then pending -> delivered|failed
	Attempts      int       `json:"attempts"`
	Sign          bool      `json:"-"`
	SkipFailed    bool      `json:"-"` // webhook_errors=false: none for a failed job
	NextAttemptAt time.Time `json:"-"`
	LastError     string    `json:"-"`
}

// JobResult is a render result: the stored file it made, without the link to the files
// endpoint, which depends on the public URL of the moment.
type JobResult struct {
	FileID      string    `json:"file_id"`
	ExpiresAt   time.Time `json:"expires_at"`
	Format      string    `json:"format"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	RenderMs    int64     `json:"render_ms"`
	Cache       string    `json:"cache"` // "HIT" or "MISS"
	Width       int       `json:"width,omitempty"`
	Height      int       `json:"height,omitempty"`
	// URL, when set, is the link to the file: a presigned GET of the service's bucket, valid
	// until ExpiresAt.
	URL string `json:"url,omitempty"`
	// StorageLocation: see FileRecord.
	StorageLocation string `json:"storage_location,omitempty"`
	// Metadata and Slices: see FileRecord.
	Metadata *Metadata `json:"metadata,omitempty"`
	Slices   []Slice   `json:"slices,omitempty"`
}

// JobRequest asks for background renders: one for async=true, one per item of a bulk request,
// which makes them one batch. The request has been admitted (AdmitJobs) for len(Options) jobs.
type JobRequest struct {
	Account   Account
	Plan      Plan
	AccessKey string // the key of the request, whose secret signs the webhooks
	Options   []*Options
	Batch     bool
	// BatchWebhookURL receives one batch.done delivery when every job of the batch ended.
	BatchWebhookURL string
}

// JobStats counts the jobs of a run of the service: Queued and Rendering now, Succeeded and
// Failed since it started. Queued is the queue depth (jobs waiting for their account's slot).
type JobStats struct {
	Queued, Rendering int64
	Succeeded, Failed uint64
}
