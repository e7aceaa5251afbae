package shotd

import "time"

// Plan features named in feature_not_available (operator contract 5.7).
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
	Name                    string `json:"name"`
	MonthlyQuota            int    `json:"monthly_quota"`
	RequestsPerMinute       int    `json:"requests_per_minute"`
	StatusRequestsPerMinute int    `json:"status_requests_per_minute"`
	Concurrency             int    `json:"concurrency"`
	QueueLimit              int    `json:"queue_limit"`
	FailuresPerMinute       int    `json:"failures_per_minute"`
	// FailuresPerDay bounds the failed renders of the last 24 hours (0: no bound). Failed
	// renders are free, and a page's scripts may have sent the page anywhere before it failed:
	// this caps the free crawls an account can make that way (issue 19, item 6).
	FailuresPerDay int      `json:"failures_per_day"`
	Features       []string `json:"features"`
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
}
