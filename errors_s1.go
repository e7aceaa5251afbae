package shotd

// DialectS1 is Options.Dialect of a request made on ScreenshotOne's paths.
const DialectS1 = "s1"

// S1Code is ScreenshotOne's name for a catalogue code, and the HTTP status they answer it with
// (which httpd alone turns into an answer, on their paths).
type S1Code struct {
	Code   string
	Status int
}

// S1Codes maps every code of the catalogue to ScreenshotOne's (their error documentation,
// https://screenshotone.com/docs/errors/): the one table their paths' errors and their webhooks
// read. Client errors are 400 there, whatever their kind; what has no counterpart of theirs (an
// unknown path, a method) keeps its status.
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
	CodeContentCheckFailed:  {"content_contains_specified_string", 400},
	CodeHostReturnedError:   {"host_returned_error", 400},
	CodePageCrashed:         {"internal_application_error", 500},
	CodeRateLimited:         {"concurrency_limit_reached", 400},
	CodeConcurrencyLimit:    {"concurrency_limit_reached", 400},
	CodeQueueLimit:          {"concurrency_limit_reached", 400},
	CodeFailureLimit:        {"concurrency_limit_reached", 400},
	CodeInternalError:       {"internal_application_error", 500},
	CodeNavigationFailed:    {"network_error", 500},
	CodeStorageFailed:       {"storage_returned_transient_error", 500},
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
