package webhook

import (
	"encoding/json"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/view"
)

// IsS1 reports whether job was made on ScreenshotOne's paths, whose webhooks are theirs.
func IsS1(job shotd.Job) bool {
	var o struct{ Dialect string }
	return json.Unmarshal(job.Options, &o) == nil && o.Dialect == shotd.DialectS1
}

// S1Body is ScreenshotOne's webhook body: what their JSON answer of the request would be
// (is_successful, screenshot_url, store, metadata), or their error body for a failed job, with
// shotd's job id and the request's external_identifier beside it.
type S1Body struct {
	view.S1Result
	ErrorCode          string `json:"error_code,omitempty"`
	ErrorMessage       string `json:"error_message,omitempty"`
	JobID              string `json:"job_id"`
	ExternalIdentifier string `json:"external_identifier,omitempty"`
}

// NewS1Body is the body of job's delivery in ScreenshotOne's form.
func NewS1Body(job shotd.Job, publicURL string) ([]byte, error) {
	b := S1Body{JobID: job.JobID, ExternalIdentifier: job.ExternalIdentifier}
	switch {
	case job.Status == shotd.JobSucceeded && job.Result != nil:
		b.S1Result = view.NewS1Result(*view.PublicResult(job), publicURL, false)
	default:
		b.ErrorCode = shotd.S1CodeOfError(&shotd.Error{Code: shotd.Code(job.ErrorCode), Message: job.ErrorMessage}).Code
		b.ErrorMessage = job.ErrorMessage
	}
	return json.Marshal(b)
}
