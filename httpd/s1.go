package httpd

import (
	"strconv"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/view"
	"github.com/valyala/fasthttp"
)

// ScreenshotOne's paths at the root of the public listener, where their SDKs send when only
// the host is changed. There shotd answers as ScreenshotOne documents: their option defaults
// and bounds (option.S1Take, option.S1Animate), their answers and their error body.
var s1Paths = map[string]bool{"/take": true, "/animate": true, "/bulk": true, "/usage": true}

// isS1 reports whether ctx came in on one of ScreenshotOne's paths.
func isS1(ctx *fasthttp.RequestCtx) bool { return s1Paths[string(ctx.Path())] }

func (s *Server) s1Take(ctx *fasthttp.RequestCtx)    { s.render(ctx, option.S1Take) }
func (s *Server) s1Animate(ctx *fasthttp.RequestCtx) { s.render(ctx, option.S1Animate) }

// s1Code is one row of the table from shotd's catalogue to ScreenshotOne's error codes, with
// the status they answer it with.
type s1Code struct {
	code   string
	status int
}

// s1Codes maps every code of shotd's catalogue to ScreenshotOne's (their error documentation,
// https://screenshotone.com/docs/errors/): client errors are 400 there, whatever their kind,
// except what has no counterpart of theirs (an unknown path, a method), which keeps its status.
var s1Codes = map[shotd.Code]s1Code{
	shotd.CodeInvalidURL:          {"request_not_valid", 400},
	shotd.CodeInvalidOptions:      {"request_not_valid", 400},
	shotd.CodeInvalidRequest:      {"request_not_valid", 400},
	shotd.CodeAccessKeyRequired:   {"access_key_required", 400},
	shotd.CodeAccessKeyInvalid:    {"access_key_invalid", 400},
	shotd.CodeQuotaExceeded:       {"screenshots_limit_reached", 400},
	shotd.CodeHostNotAllowed:      {"request_not_valid", 400},
	shotd.CodeSignatureRequired:   {"signature_is_required", 400},
	shotd.CodeSignatureInvalid:    {"signature_is_not_valid", 400},
	shotd.CodeEmailNotVerified:    {"access_key_invalid", 400},
	shotd.CodeFeatureNotAvailable: {"request_not_valid", 400},
	shotd.CodeRequestExpired:      {"signature_is_not_valid", 400},
	shotd.CodeNotFound:            {"request_not_valid", 404},
	shotd.CodeJobNotFound:         {"request_not_valid", 404},
	shotd.CodeFileNotFound:        {"request_not_valid", 404},
	shotd.CodeMethodNotAllowed:    {"request_not_valid", 405},
	shotd.CodeContentTooLarge:     {"resulting_image_too_large", 400},
	shotd.CodeSelectorNotFound:    {"selector_not_found", 400},
	shotd.CodeContentCheckFailed:  {"content_contains_specified_string", 400},
	shotd.CodeHostReturnedError:   {"host_returned_error", 400},
	shotd.CodePageCrashed:         {"internal_application_error", 500},
	shotd.CodeRateLimited:         {"concurrency_limit_reached", 400},
	shotd.CodeConcurrencyLimit:    {"concurrency_limit_reached", 400},
	shotd.CodeQueueLimit:          {"concurrency_limit_reached", 400},
	shotd.CodeFailureLimit:        {"concurrency_limit_reached", 400},
	shotd.CodeInternalError:       {"internal_application_error", 500},
	shotd.CodeNavigationFailed:    {"network_error", 500},
	shotd.CodeStorageFailed:       {"storage_returned_transient_error", 500},
	shotd.CodeRendererBusy:        {"temporary_unavailable", 503},
	shotd.CodeRendererUnavailable: {"temporary_unavailable", 503},
	shotd.CodeServiceUnavailable:  {"temporary_unavailable", 503},
	shotd.CodeTimeout:             {"timeout_error", 500},
}

// s1CodeOf is ScreenshotOne's code and status for a catalogue code.
func s1CodeOf(c shotd.Code) s1Code {
	if x, ok := s1Codes[c]; ok {
		return x
	}
	return s1Codes[shotd.CodeInternalError]
}

// s1ErrorBody is ScreenshotOne's error body. error_details lists each invalid option of
// request_not_valid; returned_status_code is the page's status of host_returned_error.
type s1ErrorBody struct {
	IsSuccessful       bool               `json:"is_successful"`
	ErrorCode          string             `json:"error_code"`
	ErrorMessage       string             `json:"error_message"`
	DocumentationURL   string             `json:"documentation_url"`
	ErrorDetails       []shotd.FieldError `json:"error_details,omitempty"`
	ReturnedStatusCode int                `json:"returned_status_code,omitempty"`
}

// newS1Error is err in ScreenshotOne's shape, with its status.
func newS1Error(publicURL string, err error) (int, s1ErrorBody) {
	e := shotd.AsError(err)
	info := shotd.Info(e.Code)
	x := s1CodeOf(info.Code)
	msg := e.Message
	if msg == "" {
		msg = info.Doc
	}
	return x.status, s1ErrorBody{ErrorCode: x.code, ErrorMessage: msg, ErrorDetails: e.Fields,
		DocumentationURL: publicURL + "/docs/errors#" + string(info.Code), ReturnedStatusCode: e.HostStatus}
}

// s1Result is ScreenshotOne's JSON answer of a render (response_type=json): the link to the
// file, the cache's when the cache kept it, the upload's location, the metadata asked for.
type s1Result struct {
	ScreenshotURL string          `json:"screenshot_url"`
	CacheURL      string          `json:"cache_url,omitempty"`
	Store         *view.StoreView `json:"store,omitempty"`
	Metadata      *shotd.Metadata `json:"metadata,omitempty"`
}

// newS1Result is ScreenshotOne's JSON answer of r.
func newS1Result(r shotd.JobResult, publicURL string, cached bool) s1Result {
	v := view.NewResultView(r, publicURL)
	out := s1Result{ScreenshotURL: v.URL, Store: v.Store, Metadata: v.Metadata}
	if cached {
		out.CacheURL = v.URL
	}
	return out
}

// writeResult answers a render's stored result as JSON: shotd's result view, or
// ScreenshotOne's on their paths.
func (s *Server) writeResult(ctx *fasthttp.RequestCtx, o *shotd.Options, r shotd.JobResult) {
	if isS1(ctx) {
		writeJSON(ctx, fasthttp.StatusOK, newS1Result(r, s.set.PublicURL, o.Cache))
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, view.NewResultView(r, s.set.PublicURL))
}

// s1Usage is ScreenshotOne's usage answer: the quota of the period and what is left of it,
// and the account's concurrency (reset in Unix nanoseconds, as theirs).
type s1Usage struct {
	Total       int `json:"total"`
	Available   int `json:"available"`
	Used        int `json:"used"`
	Concurrency struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"concurrency"`
}

// s1UsageOf is ScreenshotOne's usage answer of u at now: the quota with its bonus, and the
// account's renders at once (its background jobs rendering taken off), whose window is the
// current minute.
func s1UsageOf(u *shotd.UsageReport, now time.Time) s1Usage {
	var out s1Usage
	out.Total, out.Used = u.Quota.Limit+u.Quota.Bonus, u.Quota.Used
	out.Available = max(u.Quota.Remaining, 0)
	out.Concurrency.Limit = u.Concurrency
	out.Concurrency.Remaining = max(u.Concurrency-u.Jobs.Running, 0)
	out.Concurrency.Reset = now.Truncate(time.Minute).Add(time.Minute).UnixNano()
	return out
}

// s1UsageHandler serves GET /usage in ScreenshotOne's shape.
func (s *Server) s1UsageHandler(ctx *fasthttp.RequestCtx) {
	who, ok := s.statusAuth(ctx)
	if !ok {
		return
	}
	u, err := s.gate.Usage(who.account, who.plan)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, s1UsageOf(u, s.now()))
}

// s1Async is ScreenshotOne's answer to an accepted async request, with shotd's job id beside it
// so that the job can be followed.
func s1Async(jobID, statusURL string) map[string]any {
	return map[string]any{"is_successful": true, "job_id": jobID, "status_url": statusURL}
}

// s1IsAsync reports whether an S1 request asks for async, for its bounds: an async one may
// take 600 s.
func s1IsAsync(ps option.Params) bool {
	v, _ := ps.Get("async")
	b, err := strconv.ParseBool(v)
	return err == nil && b
}
