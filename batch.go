package shotd

import "time"

// Batch is the set of jobs one bulk request made.
type Batch struct {
	BatchID   string    `json:"batch_id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	JobIDs    []string  `json:"job_ids"` // in request order
	// Webhook, when the bulk request gave a webhook_url, is the delivery of the batch.done event
	// once every job ended; its Status is "" until then.
	Webhook *WebhookState `json:"webhook,omitempty"`
}

// BatchDoneEvent is the event of a batch's webhook.
const BatchDoneEvent = "batch.done"

// Batch states, which follow from the states of its jobs.
const (
	BatchQueued  = "queued"  // no job has started
	BatchRunning = "running" // some job started, not all ended
	BatchDone    = "done"    // every job ended
)
