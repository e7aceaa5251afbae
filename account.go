package shotd

import "time"

// Plan features, by the names feature_not_available gives.
const (
	FeaturePDF   = "pdf"
	FeatureVideo = "video"
	FeatureAsync = "async"
	FeatureBulk  = "bulk"
	FeatureCache = "cache"
)

// AllFeatures is what a plan without a features list has.
var AllFeatures = []string{FeaturePDF, FeatureVideo, FeatureAsync, FeatureBulk, FeatureCache}

// Plan is one [plans.NAME] table of the configuration.
type Plan struct {
	Name         string `json:"name"`
	MonthlyQuota int    `json:"monthly_quota"`
	PlanLimits
	Features []string `json:"features"`
}

// PlanLimits are a plan's limits besides its quota, which a UsageReport shows as they are.
// Embedded, their JSON fields stand in the embedding struct's place.
type PlanLimits struct {
	RequestsPerMinute       int `json:"requests_per_minute"`
	StatusRequestsPerMinute int `json:"status_requests_per_minute"`
	Concurrency             int `json:"concurrency"`
	QueueLimit              int `json:"queue_limit"`
	FailuresPerMinute       int `json:"failures_per_minute"`
	// FailuresPerDay bounds the failed renders of the last 24 hours (0: no bound). Failed
	// renders are free, and a page's scripts may have sent the page anywhere before it failed:
	// this caps the free crawls an account can make that way.
	FailuresPerDay int `json:"failures_per_day"`
}

// HasFeature reports whether the plan includes feature.
func (p Plan) HasFeature(feature string) bool {
	for _, f := range p.Features {
		if f == feature {
			return true
		}
	}
	return false
}

// Account owns keys, limits and quota. Limits belong to the account, never to a key.
type Account struct {
	ID               string    `json:"id"`
	Email            string    `json:"email"`
	Plan             string    `json:"plan"`
	EmailVerified    bool      `json:"email_verified"`
	BonusScreenshots int       `json:"bonus_screenshots"`
	CreatedAt        time.Time `json:"created_at"`
}

// Key is an access key pair. SecretKey never travels except in the answer that creates it.
type Key struct {
	AccessKey        string    `json:"access_key"`
	SecretKey        string    `json:"secret_key,omitempty"`
	Name             string    `json:"name"`
	RequireSignature bool      `json:"require_signature"`
	Revoked          bool      `json:"revoked"`
	AccountID        string    `json:"account_id"`
	CreatedAt        time.Time `json:"created_at"`
}

// Output is a rendered file.
type Output struct {
	Data        []byte
	Format      string
	ContentType string
	Width       int // pixels, images only
	Height      int
	RenderMs    int64
	// StorageLocation is the address of the object that store=true uploaded ("" = none).
	StorageLocation string
	// Metadata is what the metadata_* options asked for (nil: none), shown in a JSON answer.
	Metadata *Metadata
	// Extras are further files of the render, stored beside Data: the slices of
	// full_page_slices and the content of metadata_content. Each is referred to by its index
	// in Metadata.Content or Slices.
	Extras []Extra
	// Slices are the slices of full_page_slices, in a JSON answer (nil: none).
	Slices []Slice
}

// Size is the bytes of the file and its extras: what max_output_bytes bounds.
func (o *Output) Size() int {
	n := len(o.Data)
	for _, x := range o.Extras {
		n += len(x.Data)
	}
	return n
}

// Extra is one further file of a render (Output.Extras).
type Extra struct {
	Data        []byte
	Format      string
	ContentType string
}

// Metadata is ScreenshotOne's "metadata" of a JSON answer: each field is there when its
// metadata_* option asked for it.
type Metadata struct {
	ImageSize              *ImageSize        `json:"image_size,omitempty"`
	Fonts                  []string          `json:"fonts,omitempty"`
	Icon                   *Icon             `json:"icon,omitempty"`
	OpenGraph              map[string]string `json:"open_graph,omitempty"`
	PageTitle              *string           `json:"page_title,omitempty"`
	HTTPResponseStatusCode int               `json:"http_response_status_code,omitempty"`
	HTTPResponseHeaders    map[string]string `json:"http_response_headers,omitempty"`
	Content                *FileRef          `json:"content,omitempty"`
}

// ImageSize is the pixel size of the rendered image.
type ImageSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Icon is the page's icon as its <link rel=icon> (or /favicon.ico) gives it.
type Icon struct {
	URL  string `json:"url"`
	Type string `json:"type,omitempty"`
}

// FileRef is a further file of a render: Extra is its index in Output.Extras until it is
// stored, then FileID names it and URL links to it.
type FileRef struct {
	Extra   int       `json:"-"`
	FileID  string    `json:"file_id,omitempty"`
	URL     string    `json:"url,omitempty"`
	Format  string    `json:"format,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// Slice is one slice of full_page_slices: its place in the whole image and its file.
type Slice struct {
	Index   int `json:"index"`
	OffsetY int `json:"offset_y"`
	Width   int `json:"width"`
	Height  int `json:"height"`
	FileRef
}

// AccountDeletion counts what deleting an account removed with it.
type AccountDeletion struct {
	Keys    int `json:"keys"`
	Jobs    int `json:"jobs"`
	Batches int `json:"batches"`
	Files   int `json:"files"`
}
