package shotd

import "strings"

// DialectS1 is Options.Dialect of a request made on ScreenshotOne's paths.
const DialectS1 = "s1"

// S1Code is ScreenshotOne's name for a catalogue code, and the HTTP status they answer it with
// (which httpd alone turns into an answer, on their paths).
type S1Code struct {
	Code   string
	Status int
}

// S1Codes maps every code of the catalogue to ScreenshotOne's, with their statuses (their error
// documentation, https://screenshotone.com/docs/errors/, and their list of codes,
// github.com/screenshotone/errors): the one table their paths' errors and their webhooks read.
// What has no counterpart of theirs (an unknown path, a method) keeps its status. S1CodeOfError
// tells apart what their list splits and shotd's code does not.
var S1Codes = map[Code]S1Code{
	CodeInvalidURL:          {"request_not_valid", 400},
	CodeInvalidOptions:      {"request_not_valid", 400},
	CodeInvalidRequest:      {"request_not_valid", 400},
	CodeAccessKeyRequired:   {"access_key_required", 400},
	CodeAccessKeyInvalid:    {"access_key_invalid", 400},
	CodeQuotaExceeded:       {"screenshots_limit_reached", 400},
	CodeHostNotAllowed:      {"request_not_valid", 400},
	CodeSignatureRequired:   {"signature_is_required", 400},
	CodeSignatureInvalid:    {"signature_is_not_valid", 400},
	CodeEmailNotVerified:    {"access_key_invalid", 400},
	CodeFeatureNotAvailable: {"request_not_valid", 400},
	CodeRequestExpired:      {"signature_is_not_valid", 400},
	CodeNotFound:            {"request_not_valid", 404},
	CodeJobNotFound:         {"request_not_valid", 404},
	CodeFileNotFound:        {"request_not_valid", 404},
	CodeMethodNotAllowed:    {"request_not_valid", 405},
	CodeContentTooLarge:     {"resulting_image_too_large", 400},
	CodeSelectorNotFound:    {"selector_not_found", 400},
	CodeContentCheckFailed:  {"content_contains_specified_string", 500},
	CodeHostReturnedError:   {"host_returned_error", 500},
	CodePageCrashed:         {"internal_application_error", 500},
	CodeRateLimited:         {"concurrency_limit_reached", 400},
	CodeConcurrencyLimit:    {"concurrency_limit_reached", 400},
	CodeQueueLimit:          {"concurrency_limit_reached", 400},
	CodeFailureLimit:        {"concurrency_limit_reached", 400},
	CodeInternalError:       {"internal_application_error", 500},
	CodeNavigationFailed:    {"network_error", 500},
	CodeStorageFailed:       {"storage_returned_transient_error", 400},
	CodeRendererBusy:        {"temporary_unavailable", 503},
	CodeRendererUnavailable: {"temporary_unavailable", 503},
	CodeServiceUnavailable:  {"temporary_unavailable", 503},
	CodeTimeout:             {"timeout_error", 500},
}

// S1CodeOf is ScreenshotOne's code and status for a catalogue code; an unknown one is their
// internal_application_error.
func S1CodeOf(c Code) S1Code {
	if x, ok := S1Codes[c]; ok {
		return x
	}
	return S1Codes[CodeInternalError]
}

// s1Splits are their codes for a part of a catalogue code, told by a word of its message.
var s1Splits = []struct {
	code Code
	word string
	s1   S1Code
}{
	{CodeNavigationFailed, "could not be resolved", S1Code{"name_not_resolved", 400}},
	{CodeNavigationFailed, "no such host", S1Code{"name_not_resolved", 400}},
	{CodeContentCheckFailed, "fail_if_content_missing", S1Code{"content_missing_specified_string", 500}},
	{CodeContentTooLarge, "the request", S1Code{"request_body_too_large", 413}},
}

// S1CodeOfError is ScreenshotOne's code and status for e: S1CodeOf its code, or the finer code
// of theirs its message tells.
func S1CodeOfError(e *Error) S1Code {
	for _, sp := range s1Splits {
		if e.Code == sp.code && strings.Contains(e.Message, sp.word) {
			return sp.s1
		}
	}
	return S1CodeOf(e.Code)
}
