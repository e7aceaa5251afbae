package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
)

// docOperation is one operation of the served document, with its error answers.
type docOperation struct {
	method, path string
	responses    map[string]struct {
		Codes []string `json:"x-error-codes"`
	}
}

// documentOperations reads the operations of the served document by operationId.
func documentOperations(t *testing.T, served []byte) map[string]docOperation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Responses   map[string]struct {
				Codes []string `json:"x-error-codes"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]docOperation{}
	for path, item := range doc.Paths {
		for method, op := range item {
			ops[op.OperationID] = docOperation{strings.ToUpper(method), path, op.Responses}
		}
	}
	return ops
}

// TestOpenAPIErrorStatuses sends bad requests to every operation of the document and checks that
// the operation lists the status answered and, under it, the error code: an answer the document
// omits fails. It also checks that each operation lists only what it can answer, for a few
// statuses that belong to other operations.
func TestOpenAPIErrorStatuses(t *testing.T) {
	_, served := openAPIValidator(t)
	ops := documentOperations(t, served)

	a := newAccount(t, "default", true)
	basic := newAccount(t, "basic", true)
	unverified := newAccount(t, "default", false)
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	bigHTML := `{"html":"` + strings.Repeat("x", 65<<10) + `"}`
	jsonCT := map[string]string{"Content-Type": "application/json"}
	bigHead := map[string]string{"Cookie": "c=" + strings.Repeat("x", 70<<10)}
	cases := []struct {
		name   string
		op     string
		path   string // as sent; the {id} of the operation's path filled in
		q      url.Values
		body   string
		header map[string]string
		code   shotd.Code
	}{
		{"no key", "screenshotGet", "/api/v1/screenshot", url.Values{"url": {page("/")}}, "", nil, shotd.CodeAccessKeyRequired},
		{"unknown key", "screenshotGet", "/api/v1/screenshot", url.Values{"access_key": {"nope"}, "url": {page("/")}}, "", nil, shotd.CodeAccessKeyInvalid},
		{"unverified", "screenshotGet", "/api/v1/screenshot", unverified.q("url", page("/")), "", nil, shotd.CodeEmailNotVerified},
		{"bad signature", "screenshotGet", "/api/v1/screenshot", a.q("url", page("/"), "signature", "00"), "", nil, shotd.CodeSignatureInvalid},
		{"expired", "screenshotGet", "/api/v1/screenshot", signed(a.key.SecretKey, "/api/v1/screenshot", a.q("url", page("/"), "expires", past)), "", nil, shotd.CodeRequestExpired},
		{"invalid option", "screenshotGet", "/api/v1/screenshot", a.q("url", page("/"), "viewport_width", "5"), "", nil, shotd.CodeInvalidOptions},
		{"invalid url", "screenshotGet", "/api/v1/screenshot", a.q("url", "http://999.1.1.1/"), "", nil, shotd.CodeInvalidURL},
		{"plan lacks pdf", "screenshotGet", "/api/v1/screenshot", basic.q("url", page("/"), "format", "pdf"), "", nil, shotd.CodeFeatureNotAvailable},
		{"private host", "screenshotGet", "/api/v1/screenshot", a.q("url", "http://127.0.0.3/"), "", nil, shotd.CodeHostNotAllowed},
		{"no such host", "screenshotGet", "/api/v1/screenshot", a.q("url", "http://"+nowhere+"/"), "", nil, shotd.CodeNavigationFailed},
		{"content check", "screenshotGet", "/api/v1/screenshot", tiny(a, "fail_if_content_contains", "x"), "", nil, shotd.CodeContentCheckFailed},
		{"head too large", "screenshotGet", "/api/v1/screenshot", tiny(a), "", bigHead, shotd.CodeContentTooLarge},
		{"not json", "screenshotPost", "/api/v1/screenshot", a.q(), `{"url":"x"}`, map[string]string{"Content-Type": "text/plain"}, shotd.CodeInvalidRequest},
		{"broken json", "screenshotPost", "/api/v1/screenshot", a.q(), `{"url":`, jsonCT, shotd.CodeInvalidRequest},
		{"source too large", "screenshotPost", "/api/v1/screenshot", a.q(), bigHTML, jsonCT, shotd.CodeContentTooLarge},
		{"async without the feature", "screenshotPost", "/api/v1/screenshot", basic.q(), `{"html":"<p>x</p>","async":true}`, jsonCT, shotd.CodeFeatureNotAvailable},
		{"take invalid option", "takeGet", "/api/v1/take", a.q("url", page("/"), "format", "bmp"), "", nil, shotd.CodeInvalidOptions},
		{"take no key", "takePost", "/api/v1/take", nil, `{"url":"https://example.com"}`, jsonCT, shotd.CodeAccessKeyRequired},
		{"animate step scroll", "animateGet", "/api/v1/animate", a.q("url", page("/"), "scroll_by", "100"), "", nil, shotd.CodeInvalidOptions},
		{"animate broken json", "animatePost", "/api/v1/animate", a.q(), `[1]`, jsonCT, shotd.CodeInvalidRequest},
		{"bulk no key", "bulk", "/api/v1/bulk", nil, `{"requests":[{"html":"x"}]}`, jsonCT, shotd.CodeAccessKeyRequired},
		{"bulk no list", "bulk", "/api/v1/bulk", a.q(), `{}`, jsonCT, shotd.CodeInvalidRequest},
		{"bulk invalid item", "bulk", "/api/v1/bulk", a.q(), `{"requests":[{"html":"x","viewport_width":5}]}`, jsonCT, shotd.CodeInvalidOptions},
		{"bulk without the feature", "bulk", "/api/v1/bulk", basic.q(), `{"requests":[{"html":"x"}]}`, jsonCT, shotd.CodeFeatureNotAvailable},
		{"bulk private host", "bulk", "/api/v1/bulk", a.q(), `{"requests":[{"url":"http://127.0.0.3/"}]}`, jsonCT, shotd.CodeHostNotAllowed},
		{"usage with an option", "getUsage", "/api/v1/usage", a.q("format", "png"), "", nil, shotd.CodeInvalidOptions},
		{"usage bad signature", "getUsage", "/api/v1/usage", a.q("signature", "00"), "", nil, shotd.CodeSignatureInvalid},
		{"no such job", "getJob", "/api/v1/jobs/job_nope", a.q(), "", nil, shotd.CodeJobNotFound},
		{"no such batch", "getBatch", "/api/v1/batches/bat_nope", a.q(), "", nil, shotd.CodeJobNotFound},
		{"no such file", "getFile", "/api/v1/files/f_nope", a.q(), "", nil, shotd.CodeFileNotFound},
		{"file no key", "getFile", "/api/v1/files/f_nope", nil, "", nil, shotd.CodeAccessKeyRequired},
		{"healthz head too large", "healthz", "/healthz", nil, "", bigHead, shotd.CodeContentTooLarge},
		{"docs page head too large", "docsAPI", "/docs/api", nil, "", bigHead, shotd.CodeContentTooLarge},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, ok := ops[c.op]
			if !ok {
				t.Fatalf("the document has no operation %s", c.op)
			}
			covered[c.op] = true
			method := http.MethodGet
			if c.body != "" {
				method = http.MethodPost
			}
			if method != op.method || !matchesPath(op.path, c.path) {
				t.Fatalf("%s %s is not %s: %s %s", method, c.path, c.op, op.method, op.path)
			}
			u := env.base + c.path
			if c.q != nil {
				u += "?" + c.q.Encode()
			}
			r, err := fetch(method, u, []byte(c.body), c.header)
			if err != nil {
				t.Fatal(err)
			}
			got := codeOf(r)
			if got != string(c.code) {
				t.Fatalf("answered %d %s, want %s: %.200s", r.status, got, c.code, r.body)
			}
			resp, ok := op.responses[strconv.Itoa(r.status)]
			if !ok {
				t.Fatalf("%s answered %d %s, which the document does not list for it", c.op, r.status, got)
			}
			if !slices.Contains(resp.Codes, got) {
				t.Fatalf("%s answered %d %s; the document lists only %v under %d", c.op, r.status, got, resp.Codes, r.status)
			}
		})
	}
	for id := range ops {
		switch id {
		case "readyz", "pressure", "openapi", "docs":
			// Their only error answers are the server's own, sampled on healthz and docsAPI.
		default:
			if !covered[id] {
				t.Errorf("operation %s has no bad request in this test", id)
			}
		}
	}

	// Only what each can answer: no status operation renders, no render looks up a job, nothing
	// the document describes answers 404 not_found or 405.
	for _, c := range []struct {
		op     string
		status string
		absent bool
	}{
		{"getUsage", "422", true}, {"getUsage", "504", true}, {"getJob", "402", true},
		{"screenshotGet", "422", false}, {"screenshotGet", "504", false}, {"bulk", "422", true},
		{"healthz", "401", true}, {"healthz", "503", true}, {"readyz", "503", false},
	} {
		_, listed := ops[c.op].responses[c.status]
		if listed == c.absent {
			t.Errorf("%s lists %s: %v", c.op, c.status, listed)
		}
	}
	for id, op := range ops {
		for st, resp := range op.responses {
			if st == "405" || slices.Contains(resp.Codes, string(shotd.CodeNotFound)) ||
				(id != "getJob" && id != "getBatch" && slices.Contains(resp.Codes, string(shotd.CodeJobNotFound))) {
				t.Errorf("%s lists %s %v", id, st, resp.Codes)
			}
		}
	}
}

// matchesPath reports whether path is an instance of the template tmpl ({id} for one segment).
func matchesPath(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if ts[i] != ps[i] && !(strings.HasPrefix(ts[i], "{") && ps[i] != "") {
			return false
		}
	}
	return true
}

// undocumentedAnswers are the error statuses this package's service answered on a path of the
// document, over every test that ran, that no operation of that path lists (405s aside: they
// answer the methods the document does not describe). TestMain fails the run on any: every test
// of the package is a sample of what the handlers answer.
func undocumentedAnswers() ([]string, error) {
	resp, err := http.Get(env.admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(httpd.OpenAPI("http://shotd.test"), &doc); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range families["shotd_requests_total"].GetMetric() {
		var route, status string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "route":
				route = l.GetValue()
			case "status":
				status = l.GetValue()
			}
		}
		item, ok := doc.Paths[route]
		if !ok || status < "400" || status == "405" {
			continue
		}
		listed := false
		for _, op := range item {
			_, has := op.Responses[status]
			listed = listed || has
		}
		if !listed {
			out = append(out, fmt.Sprintf("%s answered %s (%v times), which no operation of it lists", route, status, m.GetCounter().GetValue()))
		}
	}
	return out, nil
}
