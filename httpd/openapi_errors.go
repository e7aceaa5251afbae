package httpd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// Which error answers each operation of the OpenAPI document can give. A request goes through a
// few steps (the server's wrapper, the key, the signature, the body, the options, the account's
// admission, the render...), and each step refuses with its own few codes of the catalogue. An
// operation is the list of steps its handler runs; its error responses are the union of their
// codes, grouped by the statuses the catalogue gives them. A new operation (another route) adds
// one line to operationSteps, naming its steps; a handler that gains a refusal adds the code to
// its step. TestOpenAPIErrorStatuses sends bad requests to every operation and fails when an
// answer's code is not listed for it.

// step is one stage of a request's path with the codes it can answer.
type step []shotd.Code

var (
	// stepServer is what every request can get before or around its handler: a request line or
	// headers over maxHeadBytes or a declared body over the limit (content_too_large), a request
	// fasthttp could not read (invalid_request), one connection too many from the address or an
	// address or key past its allowance of refusals (rate_limited), a handler that panicked
	// (internal_error).
	stepServer = step{shotd.CodeInvalidRequest, shotd.CodeContentTooLarge, shotd.CodeRateLimited, shotd.CodeInternalError}
	// stepKey: identify. The key store not answering is service_unavailable; an account whose
	// plan is not configured, internal_error.
	stepKey = step{shotd.CodeAccessKeyRequired, shotd.CodeAccessKeyInvalid, shotd.CodeEmailNotVerified,
		shotd.CodeServiceUnavailable, shotd.CodeInternalError}
	// stepSignature: verify; a malformed expires is invalid_options.
	stepSignature = step{shotd.CodeSignatureInvalid, shotd.CodeSignatureRequired, shotd.CodeRequestExpired, shotd.CodeInvalidOptions}
	// stepBody: checkJSON and readBody (past the body budget: service_unavailable).
	stepBody = step{shotd.CodeInvalidRequest, shotd.CodeContentTooLarge, shotd.CodeServiceUnavailable}
	// stepStatusQuery: statusParams, the query of an endpoint that takes no option.
	stepStatusQuery = step{shotd.CodeInvalidOptions}
	// stepOptions: option.ParseOptions (and a JSON body's shape).
	stepOptions = step{shotd.CodeInvalidOptions, shotd.CodeInvalidURL, shotd.CodeContentTooLarge, shotd.CodeInvalidRequest}
	// stepAdmitStatus: the status allowance of the account.
	stepAdmitStatus = step{shotd.CodeRateLimited, shotd.CodeServiceUnavailable}
	// stepAdmitRender: a sync render's admission (a cache hit's is a part of it).
	stepAdmitRender = step{shotd.CodeFeatureNotAvailable, shotd.CodeRateLimited, shotd.CodeFailureLimit, shotd.CodeQuotaExceeded,
		shotd.CodeConcurrencyLimit, shotd.CodeServiceUnavailable}
	// stepAdmitJobs: async and bulk admission.
	stepAdmitJobs = step{shotd.CodeFeatureNotAvailable, shotd.CodeRateLimited, shotd.CodeFailureLimit, shotd.CodeQueueLimit,
		shotd.CodeQuotaExceeded, shotd.CodeServiceUnavailable}
	// stepTargets: checkTargets, the Markdown conversion and the egress guard (with DNS for a sync
	// render: navigation_failed for a name that does not resolve).
	stepTargets = step{shotd.CodeContentTooLarge, shotd.CodeRendererBusy, shotd.CodeInternalError, shotd.CodeHostNotAllowed,
		shotd.CodeInvalidURL, shotd.CodeInvalidOptions, shotd.CodeNavigationFailed}
	// stepRender: the render itself, the output limit and keeping the file (storage_failed).
	stepRender = step{shotd.CodeSelectorNotFound, shotd.CodeContentCheckFailed, shotd.CodeHostReturnedError, shotd.CodePageCrashed, shotd.CodeInternalError,
		shotd.CodeNavigationFailed, shotd.CodeHostNotAllowed, shotd.CodeStorageFailed, shotd.CodeRendererBusy,
		shotd.CodeRendererUnavailable, shotd.CodeServiceUnavailable, shotd.CodeTimeout, shotd.CodeContentTooLarge}
	// stepQueue: the job actor storing jobs (too busy: service_unavailable).
	stepQueue = step{shotd.CodeServiceUnavailable, shotd.CodeInternalError}
	// stepJobRecord: a job or batch looked up for the account.
	stepJobRecord = step{shotd.CodeJobNotFound, shotd.CodeInternalError}
	// stepFileRecord: a stored file looked up and opened (the service's bucket: storage_failed).
	stepFileRecord = step{shotd.CodeFileNotFound, shotd.CodeStorageFailed, shotd.CodeInternalError}
	// stepUsage: the account actor's usage report.
	stepUsage = step{shotd.CodeServiceUnavailable}
)

var (
	// renderGetSteps are a render from the query: sync, cached or async (admitted as a job).
	renderGetSteps = []step{stepServer, stepKey, stepSignature, stepOptions, stepAdmitRender, stepAdmitJobs, stepTargets, stepRender, stepQueue}
	// renderPostSteps read a JSON body besides.
	renderPostSteps = append(slices.Clone(renderGetSteps), stepBody)
	statusSteps     = []step{stepServer, stepKey, stepSignature, stepStatusQuery, stepAdmitStatus}
)

// operationSteps are the steps of each operation of the document, by operationId.
var operationSteps = map[string][]step{
	"screenshotGet":  renderGetSteps,
	"screenshotPost": renderPostSteps,
	"takeGet":        renderGetSteps,
	"takePost":       renderPostSteps,
	"animateGet":     renderGetSteps,
	"animatePost":    renderPostSteps,
	"bulk":           {stepServer, stepKey, stepBody, stepSignature, stepStatusQuery, stepOptions, stepAdmitJobs, stepTargets, stepQueue},
	"getUsage":       append(slices.Clone(statusSteps), stepUsage),
	"getJob":         append(slices.Clone(statusSteps), stepJobRecord),
	"getBatch":       append(slices.Clone(statusSteps), stepJobRecord),
	"getFile":        append(slices.Clone(statusSteps), stepFileRecord),
	// Health and documents: nothing but the server's own refusals.
	"healthz": {stepServer}, "readyz": {stepServer}, "pressure": {stepServer}, "openapi": {stepServer}, "docs": {stepServer},
	"docsAPI": {stepServer},
}

// operationCodes are the codes operation id can answer, in catalogue order. It panics for an
// operation missing from operationSteps: the document is built in tests, which then fail.
func operationCodes(id string) []shotd.Code {
	steps, ok := operationSteps[id]
	if !ok {
		panic(fmt.Sprintf("openapi: operation %q has no entry in operationSteps (openapi_errors.go)", id))
	}
	var out []shotd.Code
	for _, c := range shotd.Catalogue {
		for _, st := range steps {
			if slices.Contains(st, c.Code) {
				out = append(out, c.Code)
				break
			}
		}
	}
	return out
}

// errorResponses are operation id's error answers: one per status, listing its codes with an
// example of the first.
func errorResponses(id, publicURL string) obj {
	byStatus := map[int][]shotd.CodeInfo{}
	for _, code := range operationCodes(id) {
		c := shotd.Info(code)
		byStatus[c.Status] = append(byStatus[c.Status], c)
	}
	out := obj{}
	for st, infos := range byStatus {
		var codes, lines []string
		for _, c := range infos {
			codes = append(codes, string(c.Code))
			lines = append(lines, fmt.Sprintf("- `%s`%s: %s", c.Code, retryNote(c), c.Doc))
		}
		headers := obj{"X-Reference-Id": ref("headers", "X-Reference-Id")}
		if st == fasthttp.StatusTooManyRequests {
			headers["Retry-After"] = ref("headers", "Retry-After")
		}
		first := infos[0]
		out[strconv.Itoa(st)] = obj{
			"description": fasthttp.StatusMessage(st) + ". error_code is one of:\n" + strings.Join(lines, "\n"),
			"headers":     headers,
			"content": obj{"application/json": obj{"schema": ref("schemas", "Error"), "example": obj{
				"error_code": first.Code, "error_message": first.Doc,
				"documentation_url": publicURL + "/docs/errors#" + string(first.Code),
			}}},
			"x-error-codes": codes,
		}
	}
	return out
}

// anyPathCodes are the codes no operation of the document answers: they are for requests that
// match none (an unknown path, a method the path does not take).
var anyPathCodes = []shotd.Code{shotd.CodeNotFound, shotd.CodeMethodNotAllowed}
