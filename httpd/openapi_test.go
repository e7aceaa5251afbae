package httpd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/option"
)

// openAPIValidator loads the document served at /openapi.json into libopenapi and checks it
// against the OpenAPI 3.1 schema.
func openAPIValidator(t *testing.T) (validator.Validator, []byte) {
	t.Helper()
	resp, err := http.Get(env.base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(served, httpd.OpenAPI("http://shotd.test")) {
		t.Fatal("/openapi.json is not the generated document")
	}
	doc, err := libopenapi.NewDocument(served)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("document version %q", v)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatalf("build the 3.1 model: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("document: %s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
			}
		}
		t.FailNow()
	}
	return v, served
}

// TestOpenAPIDocument validates the served document with libopenapi and checks that it carries
// every option and every error code and status of the tables it is generated from.
func TestOpenAPIDocument(t *testing.T) {
	_, served := openAPIValidator(t)
	var doc struct {
		Paths      map[string]any `json:"paths"`
		Components struct {
			Parameters map[string]any `json:"parameters"`
			Schemas    struct {
				Options struct {
					Properties map[string]struct{ Enum []string }
				} `json:"Options"`
				ErrorCode struct{ Enum []string } `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range option.OptionTable {
		prop, ok := doc.Components.Schemas.Options.Properties[s.Name]
		if doc.Components.Parameters[s.Name] == nil || !ok {
			t.Errorf("option %s is missing from the parameters or the Options schema", s.Name)
		}
		for alias := range s.Aliases {
			if !slices.Contains(prop.Enum, alias) {
				t.Errorf("option %s: the accepted spelling %q is missing from its enum %v", s.Name, alias, prop.Enum)
			}
		}
	}
	if len(doc.Components.Schemas.Options.Properties) != len(option.OptionTable) {
		t.Errorf("Options has %d properties, the option table %d rows", len(doc.Components.Schemas.Options.Properties), len(option.OptionTable))
	}
	// Every code is answered by some operation, under its status, but the two of requests that
	// match no operation.
	listed := map[string]bool{}
	for _, op := range documentOperations(t, served) {
		for st, r := range op.responses {
			for _, code := range r.Codes {
				listed[st+" "+code] = true
			}
		}
	}
	for _, c := range shotd.Catalogue {
		if !slices.Contains(doc.Components.Schemas.ErrorCode.Enum, string(c.Code)) {
			t.Errorf("error code %s is missing from ErrorCode", c.Code)
		}
		anyPath := c.Code == shotd.CodeNotFound || c.Code == shotd.CodeMethodNotAllowed
		if listed[strconv.Itoa(c.Status)+" "+string(c.Code)] == anyPath {
			t.Errorf("%d %s: listed by an operation: %v", c.Status, c.Code, !anyPath)
		}
	}
	// Webhooks are sent by the service: no access key authenticates them (ogen generates a
	// client that does not build otherwise).
	var hooks struct {
		Webhooks map[string]map[string]struct {
			Security *[]any `json:"security"`
		} `json:"webhooks"`
	}
	if err := json.Unmarshal(served, &hooks); err != nil {
		t.Fatal(err)
	}
	for name, item := range hooks.Webhooks {
		for method, op := range item {
			if op.Security == nil || len(*op.Security) != 0 {
				t.Errorf("webhook %s %s: security %v, want []", name, method, op.Security)
			}
		}
	}
	// A parameter is listed once per operation (code generators refuse a second).
	var params struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Ref  string `json:"$ref"`
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(served, &params); err != nil {
		t.Fatal(err)
	}
	for path, item := range params.Paths {
		for method, op := range item {
			seen := map[string]bool{}
			for _, p := range op.Parameters {
				key := p.In + " " + p.Name
				if p.Ref != "" {
					key = "query " + strings.TrimPrefix(p.Ref, "#/components/parameters/")
				}
				if seen[key] {
					t.Errorf("%s %s lists the parameter %s twice", method, path, key)
				}
				seen[key] = true
			}
		}
	}
	for _, p := range []string{"/api/v1/screenshot", "/api/v1/take", "/api/v1/usage", "/api/v1/jobs/{id}", "/api/v1/batches/{id}", "/api/v1/files/{id}", "/api/v1/bulk"} {
		if doc.Paths[p] == nil {
			t.Errorf("path %s is missing", p)
		}
	}
}

// TestOpenAPIMatchesAnswers sends real requests and has libopenapi check each request and its
// answer against the document: what it says is what the service does.
func TestOpenAPIMatchesAnswers(t *testing.T) {
	v, _ := openAPIValidator(t)
	a := newAccount(t, "default", true)
	var jobID string
	tests := []struct {
		name   string
		method string
		path   string
		query  url.Values
		body   string
		status int
		// invalid: the request breaks the document on purpose; only the answer is checked.
		invalid bool
	}{
		{"png", "GET", "/api/v1/screenshot", a.q("url", page("/"), "viewport_width", "400", "viewport_height", "300"), "", 200, false},
		{"json result", "GET", "/api/v1/take", a.q("url", page("/"), "response_type", "json", "hide_selectors", "h1,p"), "", 200, false},
		{"post json result", "POST", "/api/v1/screenshot", a.q(), `{"html":"<h1>x</h1>","response_type":"json","format":"jpeg"}`, 200, false},
		{"async", "GET", "/api/v1/screenshot", a.q("url", page("/"), "async", "true"), "", 202, false},
		{"invalid options", "GET", "/api/v1/screenshot", a.q("url", page("/"), "viewport_width", "5"), "", 400, true},
		{"no key", "GET", "/api/v1/screenshot", url.Values{"url": {page("/")}}, "", 401, true},
		{"usage", "GET", "/api/v1/usage", a.q(), "", 200, false},
		{"job", "GET", "/api/v1/jobs/", a.q(), "", 200, false},
		{"no such job", "GET", "/api/v1/jobs/nope", a.q(), "", 404, false},
		{"bulk", "POST", "/api/v1/bulk", a.q(), `{"requests":[{"html":"<p>1</p>"}],"defaults":{"format":"png"}}`, 202, false},
		{"healthz", "GET", "/healthz", nil, "", 200, false},
		{"readyz", "GET", "/readyz", nil, "", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if strings.HasSuffix(path, "/jobs/") {
				path += jobID
			}
			u := env.base + path
			if tt.query != nil {
				u += "?" + tt.query.Encode()
			}
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequest(tt.method, u, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%d, want %d: %.300s", resp.StatusCode, tt.status, b)
			}
			if tt.name == "async" {
				var acc struct {
					JobID string `json:"job_id"`
				}
				_ = json.Unmarshal(b, &acc)
				jobID = acc.JobID
			}
			// The validator reads both bodies again.
			req, _ = http.NewRequest(tt.method, u, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			check := v.ValidateHttpRequestResponse
			if tt.invalid {
				check = v.ValidateHttpResponse
			}
			if ok, errs := check(req, resp); !ok {
				for _, e := range errs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
					}
				}
			}
		})
	}
}

// TestOpenAPIExamples: every operation of the document, and the webhook, shows an example of a
// request body or of an answer (through the shared responses it refers to); /api/v1/animate,
// /pressure and /docs are described, and /docs is served.
func TestOpenAPIExamples(t *testing.T) {
	_, served := openAPIValidator(t)
	var doc map[string]any
	if err := json.Unmarshal(served, &doc); err != nil {
		t.Fatal(err)
	}
	shared := doc["components"].(map[string]any)["responses"].(map[string]any)
	hasExample := func(content any) bool {
		c, _ := content.(map[string]any)
		for _, m := range c {
			if mm, ok := m.(map[string]any); ok && mm["example"] != nil {
				return true
			}
		}
		return false
	}
	check := func(where string, op map[string]any) {
		if rb, ok := op["requestBody"].(map[string]any); ok && hasExample(rb["content"]) {
			return
		}
		for status, r := range op["responses"].(map[string]any) {
			if !strings.HasPrefix(status, "2") {
				continue
			}
			rm := r.(map[string]any)
			if ref, ok := rm["$ref"].(string); ok {
				rm, _ = shared[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
			}
			if hasExample(rm["content"]) {
				return
			}
		}
		t.Errorf("%s has no example", where)
	}
	ops := 0
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			ops++
			check(method+" "+path, op.(map[string]any))
		}
	}
	for name, item := range doc["webhooks"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			check("webhook "+name+" "+method, op.(map[string]any))
		}
	}
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/api/v1/animate", "/pressure", "/docs"} {
		if paths[p] == nil {
			t.Errorf("path %s is missing", p)
		}
	}
	if ops < 16 {
		t.Errorf("%d operations", ops)
	}
	r := do(t, "GET", env.base+"/docs", nil, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `href="/openapi.json"`) || !strings.Contains(string(r.body), `href="/docs/errors"`) {
		t.Errorf("/docs: %d %s", r.status, r.body)
	}
}

// TestOpenAPIMatchesNewAnswers has libopenapi check real answers of /api/v1/animate, /pressure
// and a job's progress against the document.
func TestOpenAPIMatchesNewAnswers(t *testing.T) {
	v, _ := openAPIValidator(t)
	a := newAccount(t, "default", true)
	for _, tt := range []struct {
		name, method, path string
		query              url.Values
		body               string
		status             int
	}{
		{"pressure", "GET", "/pressure", nil, "", 200},
		{"animate", "GET", "/api/v1/animate", a.q("html", "<p>video</p>", "duration", "1", "width", "320", "height", "200", "response_type", "json"), "", 200},
		{"animate post", "POST", "/api/v1/animate", a.q(), `{"html":"<p>video</p>","duration":1,"format":"webm","response_type":"json"}`, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := env.base + tt.path
			if tt.query != nil {
				u += "?" + tt.query.Encode()
			}
			req, _ := http.NewRequest(tt.method, u, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("%d, want %d: %.300s", resp.StatusCode, tt.status, b)
			}
			req, _ = http.NewRequest(tt.method, u, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			if ok, errs := v.ValidateHttpRequestResponse(req, resp); !ok {
				for _, e := range errs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
					}
				}
			}
		})
	}
	// animate answers are counted under their own route, not "other".
	if n := scrape(t, env.admin)[`shotd_requests_total{route="/api/v1/animate",status="200"}`]; n < 2 {
		t.Errorf("animate answers counted: %v, want at least 2", n)
	}
}
