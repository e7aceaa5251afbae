package shotd

import "time"

// Batch is the set of jobs one bulk request made.
type Batch struct {
	BatchID   string    `json:"batch_id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	JobIDs    []string  `json:"job_ids"` // in request order
}

// Batch states, which follow from the states of its jobs.
const (
	BatchQueued  = "queued"  // no job has started
	BatchRunning = "running" // some job started, not all ended
	BatchDone    = "done"    // every job ended
)
