package shotd

import (
	"errors"
	"fmt"
)

// Code is a stable error code of the public API. Clients compare on it.
type Code string

// The error codes, by HTTP status as the error documentation lists them; Catalogue keeps the
// same order.
const (
	CodeInvalidURL          Code = "invalid_url"
	CodeInvalidOptions      Code = "invalid_options"
	CodeInvalidRequest      Code = "invalid_request"
	CodeAccessKeyRequired   Code = "access_key_required"
	CodeAccessKeyInvalid    Code = "access_key_invalid"
	CodeQuotaExceeded       Code = "quota_exceeded"
	CodeHostNotAllowed      Code = "host_not_allowed"
	CodeSignatureRequired   Code = "signature_required"
	CodeSignatureInvalid    Code = "signature_invalid"
	CodeEmailNotVerified    Code = "email_not_verified"
	CodeFeatureNotAvailable Code = "feature_not_available"
	CodeRequestExpired      Code = "request_expired"
	CodeNotFound            Code = "not_found"
	CodeJobNotFound         Code = "job_not_found"
	CodeFileNotFound        Code = "file_not_found"
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeContentTooLarge     Code = "content_too_large"
	CodeSelectorNotFound    Code = "selector_not_found"
	CodeContentCheckFailed  Code = "content_check_failed"
	CodeHostReturnedError   Code = "host_returned_error"
	CodePageCrashed         Code = "page_crashed"
	CodeRateLimited         Code = "rate_limited"
	CodeConcurrencyLimit    Code = "concurrency_limit"
	CodeQueueLimit          Code = "queue_limit"
	CodeFailureLimit        Code = "failure_limit"
	CodeInternalError       Code = "internal_error"
	CodeNavigationFailed    Code = "navigation_failed"
	CodeStorageFailed       Code = "storage_failed"
	CodeRendererBusy        Code = "renderer_busy"
	CodeRendererUnavailable Code = "renderer_unavailable"
	CodeServiceUnavailable  Code = "service_unavailable"
	CodeTimeout             Code = "timeout"
)

// CodeInfo describes one catalogue entry.
type CodeInfo struct {
	Code      Code
	Status    int  // HTTP status; only httpd turns it into an answer
	Retryable bool // the same request may succeed later
	Doc       string
}

// Catalogue lists every code in documentation order.
var Catalogue = []CodeInfo{
	{CodeInvalidURL, 400, false, "The URL is not a valid full http:// or https:// address."},
	{CodeInvalidOptions, 400, false, "An option is misspelled, unknown, has an invalid value, or two options conflict (for example selector with clip_width). The errors list names each field."},
	{CodeInvalidRequest, 400, false, "The request body is unreadable: invalid JSON, not a JSON object, not sent as application/json, or a bulk call with no requests list or too many items."},
	{CodeAccessKeyRequired, 401, false, "No access key was sent. Send it as access_key in the query, as X-Access-Key, or as Authorization: Bearer."},
	{CodeAccessKeyInvalid, 401, false, "The access key is unknown or was revoked."},
	{CodeQuotaExceeded, 402, false, "The monthly screenshot quota of the billing period is used up. It resets at the time given in X-Quota-Reset."},
	{CodeHostNotAllowed, 403, false, "The target host is private, local or internal, or resolves to such an address."},
	{CodeSignatureRequired, 403, false, "The key requires signed requests and no signature was sent."},
	{CodeSignatureInvalid, 403, false, "The signature does not match the parameters, the endpoint or the secret key."},
	{CodeEmailNotVerified, 403, false, "The account's email address is not verified yet."},
	{CodeFeatureNotAvailable, 403, false, "The account's plan does not include the requested feature (pdf, video, async, bulk or cache); the message names it."},
	{CodeRequestExpired, 403, false, "The request's expires time is in the past."},
	{CodeNotFound, 404, false, "The path is not an API endpoint."},
	{CodeJobNotFound, 404, false, "The job or batch id does not exist for this account."},
	{CodeFileNotFound, 404, false, "The stored file is gone, expired, the link was altered, or it belongs to another account."},
	{CodeMethodNotAllowed, 405, false, "The endpoint does not accept this HTTP method; the Allow header lists those it does."},
	{CodeContentTooLarge, 413, false, "The sent html, markdown, styles or scripts, the request body, the request line and headers (over 64 KiB; send long options in a POST body), or the rendered output exceeds the allowed size."},
	{CodeSelectorNotFound, 422, false, "Nothing matched selector, click or wait_for_selector in time."},
	{CodeContentCheckFailed, 422, false, "The page contained the text of fail_if_content_contains, or lacked that of fail_if_content_missing."},
	{CodeHostReturnedError, 422, false, "ignore_host_errors=false (the default on ScreenshotOne's paths) and the page's document answered an HTTP status of 400 or more; the answer names it (returned_status_code). Not billed."},
	{CodePageCrashed, 422, false, "The page crashed the browser tab that rendered it, most often by using more memory than a page may (the server's browser.js_heap_mb). Not billed; it counts as a failed render of the account."},
	{CodeRateLimited, 429, true, "Too many requests in the last minute. Retry after the Retry-After seconds."},
	{CodeConcurrencyLimit, 429, true, "Too many renders of the account are running at once. Retry after the Retry-After seconds."},
	{CodeQueueLimit, 429, true, "Too many async and bulk jobs are waiting or rendering; nothing was queued or counted."},
	{CodeFailureLimit, 429, true, "Too many renders of the account failed in the last minute, or in the last 24 hours counting those still under way (failures_per_day). Retry after the Retry-After seconds."},
	{CodeInternalError, 500, true, "Rendering failed on the service side. It was not billed; retry after a short pause."},
	{CodeNavigationFailed, 502, true, "The page could not be loaded: no such domain, server down or connection refused."},
	{CodeStorageFailed, 502, true, "The result could not be uploaded to the S3-compatible storage (store=true, or the service's own bucket): wrong credentials, a missing bucket, or the storage did not answer. Not billed; retry after a short pause."},
	{CodeRendererBusy, 503, true, "All render slots are busy. Retry after a short pause."},
	{CodeRendererUnavailable, 503, true, "No browser is available to render right now. Retry after a short pause."},
	{CodeServiceUnavailable, 503, true, "The service could not take the request now: the component that checks limits did not answer (the request was refused rather than let through uncounted), the job queue was too busy to store a job (nothing was queued), too many request bodies were being read at once, or the service is stopping. Retry after a short pause."},
	{CodeTimeout, 504, true, "The page was not ready before the timeout option ran out, or the render went past its whole budget (timeout, delay, the capture, a video's recording)."},
}

var catalogueByCode = func() map[Code]CodeInfo {
	m := make(map[Code]CodeInfo, len(Catalogue))
	for _, c := range Catalogue {
		m[c.Code] = c
	}
	return m
}()

// Info returns the catalogue entry of code; an unknown code is reported as internal_error.
func Info(code Code) CodeInfo {
	if c, ok := catalogueByCode[code]; ok {
		return c
	}
	return catalogueByCode[CodeInternalError]
}

// FieldError is one item of the errors list of invalid_options.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	// Index is the position in a bulk requests list; nil outside bulk.
	Index *int `json:"index,omitempty"`
}

// Error is an error from the catalogue. Message is safe to show to the client; Cause is logged
// only.
type Error struct {
	Code       Code
	Message    string
	Fields     []FieldError
	RetryAfter int // seconds, for 429 answers
	// HostStatus is the HTTP status the page's document answered, for host_returned_error.
	HostStatus int
	Cause      error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// Errorf builds a catalogue error with a client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds a catalogue error that keeps cause for the log.
func Wrap(code Code, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Cause: cause}
}

// AsError returns the catalogue error inside err, or an internal_error that wraps err.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: "internal error", Cause: err}
}

// CodeOf returns the catalogue code of err (internal_error when it carries none, "" for nil).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}

// ErrNotFound is what a store returns, wrapped, for a record that does not exist or that the
// asker may not see (test with errors.Is). It is a plain sentinel, not a catalogue error: the
// code it becomes depends on who asked (an unknown access key is access_key_invalid on the public
// API but not_found on the admin API).
var ErrNotFound = errors.New("not found")

// ErrFileUnreadable is what a kept file that cannot be read is, wrapped in an internal_error (test
// with errors.Is): the service's trouble, not the client's. A store=true cache hit whose file it
// is renders afresh instead.
var ErrFileUnreadable = errors.New("the kept file could not be read")

// ErrAccountBusy: an account with jobs queued or rendering cannot be deleted.
var ErrAccountBusy = errors.New("the account has jobs queued or rendering")
