package shotd

import (
	"errors"
	"time"
)

// FileRecord describes a stored rendered file: what a render result is made of.
type FileRecord struct {
	FileID      string    `json:"file_id"`
	AccountID   string    `json:"account_id"`
	Format      string    `json:"format"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	Width       int       `json:"width,omitempty"`
	Height      int       `json:"height,omitempty"`
	RenderMs    int64     `json:"render_ms"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Remote: the data is an object of the service's own bucket, not a file of data_dir.
	Remote bool `json:"remote,omitempty"`
	// StorageLocation is where store=true uploaded the render. It is kept whatever was asked;
	// an answer shows it only when storage_return_location asked for it (view.ResultFor).
	StorageLocation string `json:"storage_location,omitempty"`
	// Metadata and Slices are what the metadata_* options and full_page_slices gave; the
	// content and the slices are files of their own, named by their FileID.
	Metadata *Metadata `json:"metadata,omitempty"`
	Slices   []Slice   `json:"slices,omitempty"`
}

// Expired reports whether the file is gone at t: a file expires at ExpiresAt exactly.
func (r FileRecord) Expired(t time.Time) bool { return !t.Before(r.ExpiresAt) }

// ResultOf describes a stored file as a render result; cache is "HIT" or "MISS".
func ResultOf(rec FileRecord, cache string) JobResult {
	return JobResult{FileID: rec.FileID, ExpiresAt: rec.ExpiresAt, Format: rec.Format, ContentType: rec.ContentType,
		SizeBytes: rec.SizeBytes, RenderMs: rec.RenderMs, Cache: cache, Width: rec.Width, Height: rec.Height,
		StorageLocation: rec.StorageLocation, Metadata: rec.Metadata, Slices: rec.Slices}
}

// StoredError is the error of a file that could not be stored, as a client sees it: its own
// catalogue error (storage_failed when the service's bucket refused or did not answer), else
// internal_error.
func StoredError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(CodeInternalError, err, "the rendered file could not be stored")
}
