package httpd_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd/media"
)

// s1Error is ScreenshotOne's error body.
type s1Error struct {
	IsSuccessful       *bool  `json:"is_successful"`
	ErrorCode          string `json:"error_code"`
	ErrorMessage       string `json:"error_message"`
	DocumentationURL   string `json:"documentation_url"`
	ReturnedStatusCode int    `json:"returned_status_code"`
	ErrorDetails       []struct {
		Field string `json:"field"`
	} `json:"error_details"`
}

// wantS1Error checks ScreenshotOne's error body, status and code.
func wantS1Error(t *testing.T, a answer, status int, code string) s1Error {
	t.Helper()
	var e s1Error
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("status %d, body is not JSON: %.200s", a.status, a.body)
	}
	if a.status != status || e.ErrorCode != code {
		t.Fatalf("got %d %s (%s), want %d %s", a.status, e.ErrorCode, e.ErrorMessage, status, code)
	}
	if e.IsSuccessful == nil || *e.IsSuccessful || e.ErrorMessage == "" || !strings.HasPrefix(e.DocumentationURL, "http://shotd.test/docs/errors#") {
		t.Fatalf("error body incomplete: %s", a.body)
	}
	return e
}

// TestScreenshotOneRootErrors: each refusal on their paths comes back with their code, status
// and body.
func TestScreenshotOneRootErrors(t *testing.T) {
	a := newAccount(t, "jobs", true)
	strict, err := env.st.CreateKey(a.acc.ID, "strict", true)
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusForbidden)
		}
		fmt.Fprint(w, `<body><p id=x>x</p></body>`)
	}))
	defer site.Close()
	small := []string{"viewport_width", "200", "viewport_height", "200"}
	q := func(kv ...string) string { return a.q(append(small, kv...)...).Encode() }
	cases := []struct {
		name, path, query string
		status            int
		code              string
		field             string
	}{
		{"no key", "/take", "url=" + url.QueryEscape(site.URL), 400, "access_key_required", ""},
		{"unknown key", "/take", "access_key=nope&url=" + url.QueryEscape(site.URL), 400, "access_key_invalid", ""},
		{"signature required", "/take", "access_key=" + strict.AccessKey + "&url=" + url.QueryEscape(site.URL), 400, "signature_is_required", ""},
		{"signature invalid", "/take", q("url", site.URL, "signature", "00"), 400, "signature_is_not_valid", ""},
		{"invalid option", "/take", q("url", site.URL, "device_scale_factor", "6"), 400, "request_not_valid", "device_scale_factor"},
		{"their rule", "/take", q("url", site.URL, "omit_background", "true"), 400, "request_not_valid", "omit_background"},
		{"cloud only", "/take", q("url", site.URL, "openai_api_key", "sk"), 400, "request_not_valid", "openai_api_key"},
		{"animate option", "/animate", q("url", site.URL, "aspect_ratio", "1:1"), 400, "request_not_valid", "aspect_ratio"},
		{"host error", "/take", q("url", site.URL+"/gone"), 500, "host_returned_error", ""},
		{"selector", "/take", q("url", site.URL, "selector", "#nope", "error_on_selector_not_found", "true", "timeout", "2"), 400, "selector_not_found", ""},
		{"name not resolved", "/take", q("url", "http://"+nowhere+"/"), 400, "name_not_resolved", ""},
		{"network", "/take", q("url", "http://127.0.0.1:"+closedPort(t)+"/"), 500, "network_error", ""},
		{"content missing", "/take", q("url", site.URL, "fail_if_content_missing", "welcome"), 500, "content_missing_specified_string", ""},
		{"not a path", "/takes", q(), 404, "request_not_valid", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A path of theirs answers in their shape; /takes is not one: shotd's.
			r := do(t, http.MethodGet, env.base+c.path+"?"+c.query, nil, nil)
			if c.path == "/takes" {
				wantError(t, r, 404, "not_found")
				return
			}
			e := wantS1Error(t, r, c.status, c.code)
			if c.field != "" && (len(e.ErrorDetails) == 0 || e.ErrorDetails[0].Field != c.field) {
				t.Errorf("error_details %+v, want %s", e.ErrorDetails, c.field)
			}
			if c.code == "host_returned_error" && e.ReturnedStatusCode != 403 {
				t.Errorf("returned_status_code %d, want 403", e.ReturnedStatusCode)
			}
		})
	}
	// The quota: their screenshots_limit_reached.
	b := newAccount(t, "cache_quota1", true)
	if r := get(t, "/take", b.q("url", site.URL, "viewport_width", "200", "viewport_height", "200")); r.status != 200 {
		t.Fatalf("first take: %d %s", r.status, r.body)
	}
	wantS1Error(t, get(t, "/take", b.q("url", site.URL, "viewport_width", "200", "viewport_height", "200")), 400, "screenshots_limit_reached")
}

// TestScreenshotOneRootAnswers: their defaults and their answers on the root paths; the spec's
// paths keep theirs.
func TestScreenshotOneRootAnswers(t *testing.T) {
	a := newAccount(t, "jobs", true)
	small := []string{"url", page("/"), "viewport_width", "200", "viewport_height", "150"}
	// GET signed their way, as their SDKs do, with only the host changed.
	s1 := s1Query(a.key.SecretKey, a.key.AccessKey, small...)
	r := do(t, http.MethodGet, env.base+"/take?"+s1, nil, nil)
	if r.status != 200 || r.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("/take without format: %d %s, want their default jpeg", r.status, r.header.Get("Content-Type"))
	}
	if w, h := imageSize(t, "jpeg", r.body); w != 200 || h != 150 {
		t.Errorf("%dx%d", w, h)
	}
	// The spec's path keeps png as its default.
	if r := get(t, "/api/v1/take", a.q(small...)); r.header.Get("Content-Type") != "image/png" {
		t.Errorf("/api/v1/take without format: %s, want png", r.header.Get("Content-Type"))
	}
	// POST with a JSON body, response_type=json: their field names.
	body, _ := json.Marshal(map[string]any{"access_key": a.key.AccessKey, "url": page("/"), "viewport_width": 200,
		"viewport_height": 150, "response_type": "json", "metadata_page_title": true, "wait_until": []string{"load", "networkidle0"}})
	r = do(t, http.MethodPost, env.base+"/take", body, map[string]string{"Content-Type": "application/json"})
	var res struct {
		ScreenshotURL string `json:"screenshot_url"`
		Metadata      struct {
			PageTitle string `json:"page_title"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 {
		t.Fatalf("json: %d %s", r.status, r.body)
	}
	if !strings.HasPrefix(res.ScreenshotURL, "http://shotd.test/api/v1/files/") || res.Metadata.PageTitle != "fixture" {
		t.Errorf("json answer %s", r.body)
	}
	// response_type=empty: 200, no body.
	r = get(t, "/take", a.q(append(small, "response_type", "empty")...))
	if r.status != 200 || len(r.body) != 0 {
		t.Errorf("empty: %d, %d bytes", r.status, len(r.body))
	}
	// Their usage answer.
	r = get(t, "/usage", a.q())
	var u struct {
		Total, Available, Used *int
		Concurrency            struct{ Limit, Remaining *int }
	}
	if err := json.Unmarshal(r.body, &u); err != nil || r.status != 200 || u.Total == nil || u.Available == nil || u.Used == nil || u.Concurrency.Limit == nil {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	if *u.Total != 1000 || *u.Used < 2 || *u.Available != *u.Total-*u.Used || *u.Concurrency.Limit != 4 {
		t.Errorf("usage %s", r.body)
	}
	// The signature form of theirs on their animate too.
	if r := do(t, http.MethodGet, env.base+"/animate?"+s1Query(a.key.SecretKey, a.key.AccessKey, "url", page("/"),
		"viewport_width", "200", "duration", "1", "scroll_delay", "100", "scroll_by", "50", "aspect_ratio", "16:9"), nil, nil); r.status != 200 || r.header.Get("Content-Type") != "video/mp4" {
		t.Errorf("animate: %d %s %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
	// Their avi, probed: MPEG-4 Part 2 in an AVI container.
	r = do(t, http.MethodGet, env.base+"/animate?"+s1Query(a.key.SecretKey, a.key.AccessKey, "url", page("/"),
		"viewport_width", "200", "duration", "1", "format", "avi"), nil, nil)
	if r.status != 200 || r.header.Get("Content-Type") != "video/x-msvideo" {
		t.Fatalf("animate avi: %d %s %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if info, err := media.Probe(context.Background(), r.body); err != nil || !info.HasFormat("avi") || info.Codec != "mpeg4" || info.Width != 200 {
		t.Errorf("animate avi: %+v %v", info, err)
	}
}

// TestScreenshotOneSchemaSample renders a sample of the requests built from their schema's
// table (option/testdata/s1schema.json) end to end on their /take and /animate, with real
// Chrome: every 9th of take's, every 20th of animate's, aimed at the fixture page.
func TestScreenshotOneSchemaSample(t *testing.T) {
	b, err := os.ReadFile("../option/testdata/s1schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Take, Animate []struct {
			Option     string         `json:"option"`
			Values     []any          `json:"values"`
			Companions map[string]any `json:"companions"`
		}
		Refused []struct {
			Path    string         `json:"path"`
			Request map[string]any `json:"request"`
			Why     string         `json:"why"`
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	// Every sample of what they refuse comes back as their request_not_valid, naming an option.
	b0 := newAccount(t, "jobs", true)
	for _, r := range s.Refused {
		t.Run("refused "+r.Path+" "+r.Why, func(t *testing.T) {
			req := map[string]any{"access_key": b0.key.AccessKey, "url": page("/")}
			for k, v := range r.Request {
				if v == nil {
					delete(req, k)
				} else {
					req[k] = v
				}
			}
			body, _ := json.Marshal(req)
			got := do(t, http.MethodPost, env.base+"/"+r.Path, body, map[string]string{"Content-Type": "application/json"})
			if e := wantS1Error(t, got, 400, "request_not_valid"); len(e.ErrorDetails) == 0 {
				t.Errorf("no error_details: %s", got.body)
			}
		})
	}
	// What reaches beyond loopback or needs what a test has not: left to the validation test.
	skip := map[string]bool{"proxy": true, "webhook_url": true, "store": true, "storage_acl": true, "storage_class": true,
		"async": true, "delay": true, "timeout": true, "full_page_slices": true}
	a := newAccount(t, "jobs", true)
	for _, path := range []string{"take", "animate"} {
		rows, every := s.Take, 9
		if path == "animate" {
			rows, every = s.Animate, 20
		}
		n := 0
		for _, row := range rows {
			for _, v := range row.Values {
				n++
				if n%every != 0 || skip[row.Option] {
					continue
				}
				vals := url.Values{"access_key": {a.key.AccessKey}, "url": {page("/")}, "viewport_width": {"200"}, "viewport_height": {"150"}}
				if path == "animate" {
					vals.Set("duration", "1")
				}
				set := func(k string, x any) {
					if x == nil {
						vals.Del(k)
						return
					}
					vals.Del(k)
					if xs, ok := x.([]any); ok {
						for _, it := range xs {
							vals.Add(k, scalarOf(it))
						}
						return
					}
					vals.Set(k, scalarOf(x))
				}
				keys := make([]string, 0, len(row.Companions))
				for k := range row.Companions {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					set(k, row.Companions[k])
				}
				set(row.Option, v)
				name := fmt.Sprintf("%s %s=%v", path, row.Option, v)
				t.Run(name, func(t *testing.T) {
					r := get(t, "/"+path, vals)
					if r.status != 200 {
						t.Fatalf("%d %.300s", r.status, r.body)
					}
				})
			}
		}
	}
}

// scalarOf is a JSON scalar of the table as query text: strings as they are, numbers and
// booleans as JSON writes them.
func scalarOf(v any) string {
	if x, ok := v.(string); ok {
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// s1Receiver is a webhook receiver written from ScreenshotOne's webhook documentation: it
// verifies X-ScreenshotOne-Signature, the hex HMAC-SHA256 of the raw body with the secret key,
// and keeps the bodies that verify.
type s1Receiver struct {
	srv    *httptest.Server
	bodies chan []byte
}

func newS1Receiver(t *testing.T, secret string) *s1Receiver {
	rc := &s1Receiver{bodies: make(chan []byte, 8)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(raw)
		want := hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-ScreenshotOne-Signature"))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		rc.bodies <- raw
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// next waits for a verified delivery.
func (rc *s1Receiver) next(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-rc.bodies:
		return b
	case <-time.After(30 * time.Second):
		t.Fatal("no verified webhook delivery")
		return nil
	}
}

// TestScreenshotOneWebhooks: a job made on their paths sends their webhook body, signed their
// way, which their documented check verifies; a failed one their error body.
func TestScreenshotOneWebhooks(t *testing.T) {
	a := newAccount(t, "jobs", true)
	rc := newS1Receiver(t, a.key.SecretKey)
	r := get(t, "/take", a.q("url", page("/"), "viewport_width", "200", "viewport_height", "150", "async", "true",
		"webhook_url", rc.srv.URL+"/hook", "external_identifier", "order42", "metadata_page_title", "true"))
	if r.status != 200 || !strings.Contains(string(r.body), `"is_successful":true`) {
		t.Fatalf("async take: %d %s", r.status, r.body)
	}
	var ok struct {
		IsSuccessful       bool   `json:"is_successful"`
		ScreenshotURL      string `json:"screenshot_url"`
		ExternalIdentifier string `json:"external_identifier"`
		Metadata           struct {
			PageTitle string `json:"page_title"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(rc.next(t), &ok); err != nil {
		t.Fatal(err)
	}
	if !ok.IsSuccessful || !strings.HasPrefix(ok.ScreenshotURL, "http://shotd.test/api/v1/files/") ||
		ok.ExternalIdentifier != "order42" || ok.Metadata.PageTitle != "fixture" {
		t.Errorf("webhook %+v", ok)
	}
	// A failed job, with webhook_errors=true: their error body.
	get(t, "/take", a.q("url", "http://"+nowhere+"/", "async", "true", "webhook_url", rc.srv.URL+"/hook", "webhook_errors", "true"))
	var bad struct {
		IsSuccessful *bool  `json:"is_successful"`
		ErrorCode    string `json:"error_code"`
		ErrorMessage string `json:"error_message"`
	}
	if err := json.Unmarshal(rc.next(t), &bad); err != nil {
		t.Fatal(err)
	}
	if bad.IsSuccessful == nil || *bad.IsSuccessful || bad.ErrorCode != "name_not_resolved" {
		t.Errorf("failed job's webhook %s %+v", bad.ErrorMessage, bad)
	}
}

// TestScreenshotOneBulk: their bulk answers signed links to /take that work, executes when
// asked, and refuses past their item limit.
func TestScreenshotOneBulk(t *testing.T) {
	a := newAccount(t, "jobs", true)
	post := func(v any) answer {
		b, _ := json.Marshal(v)
		return do(t, http.MethodPost, env.base+"/bulk", b, map[string]string{"Content-Type": "application/json"})
	}
	body := map[string]any{"access_key": a.key.AccessKey, "optimize": true,
		"options":  map[string]any{"url": page("/"), "viewport_width": 200, "viewport_height": 150, "format": "png"},
		"requests": []any{map[string]any{"viewport_width": 120}, map[string]any{"html": "<p>x</p>", "block_ads": true}}}
	r := post(body)
	var links struct {
		Responses []struct {
			URL      string          `json:"url"`
			Response json.RawMessage `json:"response"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(r.body, &links); err != nil || r.status != 200 || len(links.Responses) != 2 {
		t.Fatalf("bulk: %d %s", r.status, r.body)
	}
	for i, l := range links.Responses {
		if !strings.HasPrefix(l.URL, "http://shotd.test/take?") || len(l.Response) != 0 {
			t.Fatalf("item %d: %+v", i, l)
		}
		// The link works on this server, signature and all.
		got := do(t, http.MethodGet, env.base+strings.TrimPrefix(l.URL, "http://shotd.test"), nil, nil)
		if got.status != 200 || got.header.Get("Content-Type") != "image/png" {
			t.Fatalf("item %d's link: %d %.200s", i, got.status, got.body)
		}
		if i == 0 {
			if w, _ := imageSize(t, "png", got.body); w != 120 {
				t.Errorf("item 0 is %d wide, want its own 120", w)
			}
		}
	}
	// execute: each rendered, their answer beside its link.
	body["execute"] = true
	body["requests"] = []any{map[string]any{"viewport_width": 120}, map[string]any{"url": "http://" + nowhere + "/"}}
	r = post(body)
	var done struct {
		Responses []struct {
			URL      string `json:"url"`
			Response struct {
				IsSuccessful  bool   `json:"is_successful"`
				ScreenshotURL string `json:"screenshot_url"`
				ErrorCode     string `json:"error_code"`
			} `json:"response"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(r.body, &done); err != nil || r.status != 200 || len(done.Responses) != 2 {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	if x := done.Responses[0].Response; !x.IsSuccessful || !strings.HasPrefix(x.ScreenshotURL, "http://shotd.test/api/v1/files/") {
		t.Errorf("executed item 0: %+v", x)
	}
	if x := done.Responses[1].Response; x.IsSuccessful || x.ErrorCode != "name_not_resolved" {
		t.Errorf("executed item 1: %+v", x)
	}
	// Their refusals: an invalid item names its index; too many items; no key.
	body["execute"] = false
	body["requests"] = []any{map[string]any{}, map[string]any{"device_scale_factor": 9}}
	e := wantS1Error(t, post(body), 400, "request_not_valid")
	if len(e.ErrorDetails) == 0 || e.ErrorDetails[0].Field != "device_scale_factor" {
		t.Errorf("error_details %+v", e.ErrorDetails)
	}
	many := make([]any, 6) // the test server's bulk_max_items is 5, below their 20
	for i := range many {
		many[i] = map[string]any{}
	}
	body["requests"] = many
	wantS1Error(t, post(body), 400, "request_not_valid")
	delete(body, "access_key")
	body["requests"] = []any{map[string]any{}}
	wantS1Error(t, post(body), 400, "access_key_required")
}

// TestScreenshotOneAcceptLanguage: an Accept-Language header sets the page's locale as their
// localization guide describes (navigator.language(s), Intl), and the next render of the tab is
// back to the browser's own.
func TestScreenshotOneAcceptLanguage(t *testing.T) {
	a := newAccount(t, "jobs", true)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<body><p>header=%s</p><script>document.write('lang=' + navigator.language +
' langs=' + navigator.languages.join('+') + ' intl=' + Intl.DateTimeFormat().resolvedOptions().locale)</script></body>`,
			r.Header.Get("Accept-Language"))
	}))
	defer site.Close()
	small := []string{"url", site.URL, "viewport_width", "200", "viewport_height", "150", "format", "png"}
	r := get(t, "/take", a.q(append(small, "headers", "Accept-Language: de-DE,de;q=0.9",
		"fail_if_content_missing", "lang=de-DE langs=de-DE+de intl=de-DE")...))
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for i := 0; i < 2; i++ { // the pool's tabs: neither keeps the locale
		r = get(t, "/take", a.q(append(small, "fail_if_content_contains", "de-DE")...))
		if r.status != 200 {
			t.Fatalf("a render after: %d %s", r.status, r.body)
		}
	}
}

// TestScreenshotOneSyncWebhook: a sync /take with webhook_url answers the image itself and, as
// their service does, also sends their webhook body signed their way, with a link to the same
// image; a failed sync render with webhook_errors=true sends their error body.
func TestScreenshotOneSyncWebhook(t *testing.T) {
	a := newAccount(t, "jobs", true)
	rc := newS1Receiver(t, a.key.SecretKey)
	r := get(t, "/take", a.q("url", page("/"), "viewport_width", "200", "viewport_height", "150", "format", "png",
		"webhook_url", rc.srv.URL+"/hook", "external_identifier", "sync7"))
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("sync take: %d %s %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var ok struct {
		IsSuccessful       bool   `json:"is_successful"`
		ScreenshotURL      string `json:"screenshot_url"`
		ExternalIdentifier string `json:"external_identifier"`
		JobID              string `json:"job_id"`
	}
	if err := json.Unmarshal(rc.next(t), &ok); err != nil {
		t.Fatal(err)
	}
	if !ok.IsSuccessful || ok.ExternalIdentifier != "sync7" || !strings.HasPrefix(ok.ScreenshotURL, "http://shotd.test/api/v1/files/") {
		t.Fatalf("sync webhook %+v", ok)
	}
	file := get(t, strings.TrimPrefix(ok.ScreenshotURL, "http://shotd.test"), a.q())
	if file.status != 200 || !bytes.Equal(file.body, r.body) {
		t.Errorf("the webhook's screenshot_url: %d, %d bytes; want the answer's %d", file.status, len(file.body), len(r.body))
	}
	j, err := env.st.JobByID(ok.JobID)
	if err != nil || j.Status != "succeeded" || j.Webhook == nil {
		t.Fatalf("the sync render's job: %+v, %v", j, err)
	}
	// A failed sync render: their error answer, and with webhook_errors=true their error body.
	r = get(t, "/take", a.q("url", "http://"+nowhere+"/", "webhook_url", rc.srv.URL+"/hook", "webhook_errors", "true"))
	if r.status == 200 {
		t.Fatalf("a failed sync take answered 200: %s", r.body)
	}
	var bad struct {
		IsSuccessful *bool  `json:"is_successful"`
		ErrorCode    string `json:"error_code"`
	}
	if err := json.Unmarshal(rc.next(t), &bad); err != nil {
		t.Fatal(err)
	}
	if bad.IsSuccessful == nil || *bad.IsSuccessful || bad.ErrorCode != "name_not_resolved" {
		t.Errorf("failed sync render's webhook %+v", bad)
	}
}
