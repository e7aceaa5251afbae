package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/media"
	"github.com/shotd/shotd/sign"
)

// s1Query builds a query the way ScreenshotOne's SDKs do: parameters in the order given, form
// encoded (a space as +), access_key last, then &signature= over the text before it.
func s1Query(secret, accessKey string, kv ...string) string {
	var parts []string
	for i := 0; i < len(kv); i += 2 {
		parts = append(parts, url.QueryEscape(kv[i])+"="+url.QueryEscape(kv[i+1]))
	}
	parts = append(parts, "access_key="+url.QueryEscape(accessKey))
	q := strings.Join(parts, "&")
	return q + "&signature=" + sign.SignQueryS1(secret, q)
}

func TestScreenshotOneSignedRequests(t *testing.T) {
	a := newAccount(t, "default", true)
	b := newAccount(t, "default", true)
	strict, err := env.st.CreateKey(a.acc.ID, "strict", true)
	if err != nil {
		t.Fatal(err)
	}
	shot := []string{"url", page("/"), "viewport_width", "300", "viewport_height", "200", "styles", "body { color: red }"}
	good := s1Query(a.key.SecretKey, a.key.AccessKey, shot...)
	// shotd's form binds the path: a take (screenshot) link does not work on animate.
	v := url.Values{"access_key": {a.key.AccessKey}}
	for i := 0; i < len(shot); i += 2 {
		v.Set(shot[i], shot[i+1])
	}
	takeLink := signed(a.key.SecretKey, "/api/v1/take", v).Encode()
	cases := []struct {
		name   string
		method string
		path   string
		query  string
		status int
		code   shotd.Code
	}{
		{"take", "GET", "/api/v1/take", good, 200, ""},
		// shotd's own path takes shotd's form alone, which binds the path.
		{"screenshot", "GET", "/api/v1/screenshot", good, 403, shotd.CodeSignatureInvalid},
		{"shotd form on take", "GET", "/api/v1/take", takeLink, 200, ""},
		{"shotd form of take on animate", "GET", "/api/v1/animate", takeLink, 403, shotd.CodeSignatureInvalid},
		{"key requiring signatures", "GET", "/api/v1/take", s1Query(strict.SecretKey, strict.AccessKey, shot...), 200, ""},
		{"edited", "GET", "/api/v1/take", strings.Replace(good, "300", "301", 1), 403, shotd.CodeSignatureInvalid},
		{"added parameter", "GET", "/api/v1/take", good + "&delay=1", 403, shotd.CodeSignatureInvalid},
		{"secret of another key", "GET", "/api/v1/take", s1Query(b.key.SecretKey, a.key.AccessKey, shot...), 403, shotd.CodeSignatureInvalid},
		// The api-v1 form alone elsewhere: a status endpoint does not take this one.
		{"usage", "GET", "/api/v1/usage", s1Query(a.key.SecretKey, a.key.AccessKey), 403, shotd.CodeSignatureInvalid},
		{"expired", "GET", "/api/v1/take", s1Query(a.key.SecretKey, a.key.AccessKey, append(shot, "expires", "1000")...), 403, shotd.CodeRequestExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, env.base+c.path+"?"+c.query, nil, nil)
			if c.code == "" {
				if r.status != c.status {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				return
			}
			wantError(t, r, c.status, c.code)
		})
	}

	t.Run("POST body is not covered", func(t *testing.T) {
		q := s1Query(a.key.SecretKey, a.key.AccessKey)
		r := do(t, http.MethodPost, env.base+"/api/v1/take?"+q, []byte(`{"url":"`+page("/")+`"}`),
			map[string]string{"Content-Type": "application/json"})
		wantError(t, r, 403, shotd.CodeSignatureInvalid)
	})
}

func TestAnimate(t *testing.T) {
	a := newAccount(t, "default", true)
	tall := `<body style="margin:0"><div style="height:2000px;background:linear-gradient(red,blue)"></div></body>`
	small := []string{"html", tall, "viewport_width", "320", "viewport_height", "240", "duration", "1"}
	cases := []struct {
		name   string
		method string
		query  string
		body   string
		ct     string
		width  int
		field  string // an invalid_options answer names this option
	}{
		{name: "signed, defaults", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, small...), ct: "video/mp4", width: 320},
		{name: "scroll gif at a width", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey,
			append(small, "format", "gif", "scenario", "scroll", "scroll_easing", "ease_in_out_quint", "scroll_back", "true", "width", "160")...),
			ct: "image/gif", width: 160},
		{name: "POST webm", method: "POST", query: "access_key=" + a.key.AccessKey,
			body: `{"html":"<h1>hi</h1>","viewport_width":320,"viewport_height":240,"duration":1,"format":"webm","scenario":"scroll"}`, ct: "video/webm", width: 320},
		{name: "mov", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "format", "mov")...), ct: "video/quicktime", width: 320},
		{name: "avi", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "format", "avi")...), ct: "video/x-msvideo", width: 320},
		{name: "an image format", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "format", "png")...), field: "format"},
		{name: "step timing", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "scroll_delay", "500")...), field: "scroll_delay"},
		{name: "one-sided easing", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "scroll_easing", "ease_in_quad")...), field: "scroll_easing"},
		{name: "duration twice over", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "video_duration", "2")...), field: "duration"},
		{name: "bad scenario", method: "GET", query: s1Query(a.key.SecretKey, a.key.AccessKey, append(small, "scenario", "zoom")...), field: "scenario"},
		{name: "duration bound", method: "GET", query: "access_key=" + a.key.AccessKey + "&html=x&duration=31", field: "video_duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr map[string]string
			var body []byte
			if c.body != "" {
				hdr, body = map[string]string{"Content-Type": "application/json"}, []byte(c.body)
			}
			r := do(t, c.method, env.base+"/api/v1/animate?"+c.query, body, hdr)
			if c.field != "" {
				e := wantError(t, r, 400, shotd.CodeInvalidOptions)
				if e.Errors[0].Field != c.field {
					t.Fatalf("error on %q (%s), want %q", e.Errors[0].Field, e.Errors[0].Message, c.field)
				}
				return
			}
			if r.status != 200 || r.header.Get("Content-Type") != c.ct {
				t.Fatalf("status %d %s: %.300s", r.status, r.header.Get("Content-Type"), r.body)
			}
			info, err := media.Probe(context.Background(), r.body)
			if err != nil {
				t.Fatal(err)
			}
			if info.Width != c.width {
				t.Fatalf("video %dx%d, want width %d", info.Width, info.Height, c.width)
			}
		})
	}
}

// TestScreenshotOneTakeOptions renders ScreenshotOne's take options with real Chromium. The
// fail_if_content_missing check doubles as the probe of what the page saw.
func TestScreenshotOneTakeOptions(t *testing.T) {
	a := newAccount(t, "default", true)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/geo":
			fmt.Fprint(w, `<body><script>navigator.geolocation.getCurrentPosition(
				p => document.body.innerHTML = '<p id=ok>lat=' + p.coords.latitude + ' lon=' + p.coords.longitude + '</p>',
				e => document.body.innerHTML = '<p id=ok>denied ' + e.code + '</p>');</script></body>`)
		case "/csp":
			fmt.Fprint(w, `<head><meta http-equiv="Content-Security-Policy" content="script-src 'none'"></head><body><p id=p>blocked</p><script>document.getElementById('p').textContent = 'inline' + '-ran'</script></body>`)
		case "/touch":
			fmt.Fprint(w, `<body><script>document.write('touch=' + (navigator.maxTouchPoints > 0 ? 'yes' : 'no'))</script></body>`)
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<body>gone</body>`)
		}
	}))
	defer site.Close()
	green, red := color.RGBA{0, 255, 0, 255}, color.RGBA{255, 0, 0, 255}
	hoverHTML := `<style>body{margin:0} #b{width:100vw;height:100vh;background:red} #b:hover{background:lime}</style><div id=b></div>`
	scrollHTML := `<style>body{margin:0}</style><div style="height:3000px;background:red"></div><div id=g style="height:400px;background:lime"></div>`
	small := []string{"viewport_width", "200", "viewport_height", "200"}
	cases := []struct {
		name   string
		kv     []string
		status int
		code   shotd.Code
		corner *color.RGBA // the top-left pixel of the image
		header [2]string
	}{
		{name: "hover", kv: []string{"html", hoverHTML, "hover", "#b"}, status: 200, corner: &green},
		{name: "scroll_into_view", kv: []string{"html", scrollHTML, "scroll_into_view", "#g"}, status: 200, corner: &green},
		{name: "scroll_into_view_adjust_top", kv: []string{"html", scrollHTML, "scroll_into_view", "#g", "scroll_into_view_adjust_top", "-100"}, status: 200},
		{name: "scroll_into_view missing", kv: []string{"html", scrollHTML, "scroll_into_view", "#nope", "timeout", "2"}, status: 422, code: shotd.CodeSelectorNotFound},
		{name: "hover missing", kv: []string{"html", hoverHTML, "hover", "#nope", "timeout", "2"}, status: 422, code: shotd.CodeSelectorNotFound},
		{name: "content contains", kv: []string{"html", "<p>Access Denied</p>", "fail_if_content_contains", "access denied"}, status: 422, code: shotd.CodeContentCheckFailed},
		{name: "content missing", kv: []string{"html", "<p>hello</p>", "fail_if_content_missing", "welcome"}, status: 422, code: shotd.CodeContentCheckFailed},
		{name: "content checks pass", kv: []string{"html", "<p>hello</p>", "fail_if_content_missing", "HELLO", "fail_if_content_contains", "denied"}, status: 200},
		{name: "geolocation", kv: []string{"url", site.URL + "/geo", "geolocation_latitude", "48.5", "geolocation_longitude", "2.25",
			"geolocation_accuracy", "10", "wait_for_selector", "#ok", "fail_if_content_missing", "lat=48.5 lon=2.25"}, status: 200},
		{name: "no geolocation", kv: []string{"url", site.URL + "/geo", "wait_for_selector", "#ok", "fail_if_content_contains", "lat="}, status: 200},
		{name: "bypass_csp", kv: []string{"url", site.URL + "/csp", "bypass_csp", "true", "fail_if_content_missing", "inline-ran"}, status: 200},
		{name: "csp kept without it", kv: []string{"url", site.URL + "/csp", "fail_if_content_missing", "inline-ran"}, status: 422, code: shotd.CodeContentCheckFailed},
		{name: "viewport_has_touch", kv: []string{"url", site.URL + "/touch", "viewport_has_touch", "true", "fail_if_content_missing", "touch=yes"}, status: 200},
		{name: "no touch", kv: []string{"url", site.URL + "/touch", "fail_if_content_missing", "touch=no"}, status: 200},
		{name: "attachment_name", kv: []string{"html", "<p>x</p>", "attachment_name", "shot.png"}, status: 200,
			header: [2]string{"Content-Disposition", `attachment; filename="shot.png"`}},
		{name: "attachment_name with a quote", kv: []string{"html", "<p>x</p>", "attachment_name", `a"b.png`}, status: 400, code: shotd.CodeInvalidOptions},
		// ScreenshotOne's values the spec does not contradict: accepted here too.
		{name: "error_on_selector_not_found false", kv: []string{"html", hoverHTML, "selector", "#nope", "timeout", "2", "error_on_selector_not_found", "false"}, status: 200, corner: &red},
		{name: "error_on_hover_selector_not_found false", kv: []string{"html", hoverHTML, "hover", "#nope", "timeout", "2", "error_on_hover_selector_not_found", "false"}, status: 200, corner: &red},
		{name: "host error rendered by default", kv: []string{"url", site.URL + "/gone"}, status: 200},
		{name: "ignore_host_errors false", kv: []string{"url", site.URL + "/gone", "ignore_host_errors", "false"}, status: 422, code: shotd.CodeHostReturnedError},
		{name: "wait_until networkidle0", kv: []string{"html", "<p>x</p>", "wait_until", "networkidle0"}, status: 200},
		{name: "refused option", kv: []string{"html", "<p>x</p>", "request_gpu_rendering", "true"}, status: 400, code: shotd.CodeInvalidOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, "/api/v1/take", a.q(append(small, c.kv...)...))
			if c.code != "" {
				e := wantError(t, r, c.status, c.code)
				if c.code == shotd.CodeInvalidOptions && strings.Contains(e.Errors[0].Message, "unknown") {
					t.Fatalf("refused as unknown: %s", e.Errors[0].Message)
				}
				return
			}
			if r.status != c.status {
				t.Fatalf("status %d: %.300s", r.status, r.body)
			}
			if c.header[0] != "" && r.header.Get(c.header[0]) != c.header[1] {
				t.Fatalf("%s: %q", c.header[0], r.header.Get(c.header[0]))
			}
			if c.corner != nil {
				got, ok := cornerColour(r.body)
				if !ok || !near(got, *c.corner) {
					t.Fatalf("top-left pixel %v, want %v", got, *c.corner)
				}
			}
		})
	}
}

// TestScreenshotOneResults: metadata and slices in the JSON answer, each further file behind its
// link; external_identifier in the job record and its webhook; webhook_errors=false.
func TestScreenshotOneResults(t *testing.T) {
	a := newAccount(t, "jobs", true)
	tall := `<!doctype html><title>Tall page</title><style>body{margin:0}</style><h1>Heading</h1><div style="height:900px"></div>`
	r := get(t, "/api/v1/take", a.q("html", tall, "viewport_width", "300", "viewport_height", "200", "full_page", "true",
		"full_page_slices", "true", "full_page_slice_height", "400", "response_type", "json",
		"metadata_page_title", "true", "metadata_content", "true", "metadata_content_format", "markdown", "metadata_image_size", "true"))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	type link struct {
		FileID string `json:"file_id"`
		URL    string `json:"url"`
	}
	var res struct {
		Height   int `json:"height"`
		Metadata struct {
			PageTitle string                      `json:"page_title"`
			ImageSize struct{ Width, Height int } `json:"image_size"`
			Content   link                        `json:"content"`
		} `json:"metadata"`
		Slices []struct {
			link
			OffsetY int `json:"offset_y"`
			Height  int `json:"height"`
		} `json:"slices"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	m := res.Metadata
	if m.PageTitle != "Tall page" || m.ImageSize.Width != 300 || m.ImageSize.Height != res.Height || res.Height < 900 {
		t.Fatalf("metadata %+v, height %d", m, res.Height)
	}
	fetch := func(l link, ct string) []byte {
		t.Helper()
		if l.FileID == "" || l.URL != "http://shotd.test/api/v1/files/"+l.FileID {
			t.Fatalf("link %+v", l)
		}
		f := get(t, "/api/v1/files/"+l.FileID, url.Values{"access_key": {a.key.AccessKey}})
		if f.status != http.StatusOK || !strings.HasPrefix(f.header.Get("Content-Type"), ct) {
			t.Fatalf("%s: status %d, %s", l.FileID, f.status, f.header.Get("Content-Type"))
		}
		return f.body
	}
	if md := string(fetch(m.Content, "text/markdown")); !strings.Contains(md, "# Heading") {
		t.Errorf("content %q", md)
	}
	if len(res.Slices) != (res.Height+399)/400 {
		t.Fatalf("%d slices of a %d px image", len(res.Slices), res.Height)
	}
	for i, s := range res.Slices {
		if s.OffsetY != 400*i {
			t.Errorf("slice %d at %d", i, s.OffsetY)
		}
		if w, h := imageSize(t, "png", fetch(s.link, "image/png")); w != 300 || h != s.Height {
			t.Errorf("slice %d is %dx%d, want 300x%d", i, w, h, s.Height)
		}
	}

	rc := newReceiver(t, a.key.SecretKey, 0)
	id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>x</p>", "viewport_width": 300, "viewport_height": 200,
		"webhook_url": rc.URL(), "external_identifier": "order-42"})
	waitDelivered(t, a.key.AccessKey, id)
	rec := get(t, "/api/v1/jobs/"+id, url.Values{"access_key": {a.key.AccessKey}})
	if !strings.Contains(string(rec.body), `"external_identifier":"order-42"`) {
		t.Errorf("job record %s", rec.body)
	}
	if ds := rc.Deliveries(); len(ds) != 1 || !strings.Contains(string(ds[0].Body), `"external_identifier":"order-42"`) {
		t.Errorf("deliveries %d, first %.300s", len(ds), ds[0].Body)
	}

	// A failed job with webhook_errors=false sends nothing; its record shows no webhook.
	for _, errs := range []bool{true, false} {
		rc := newReceiver(t, a.key.SecretKey, 0)
		id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>x</p>", "wait_for_selector": "#nope", "timeout": 1,
			"webhook_url": rc.URL(), "webhook_errors": errs})
		j := waitFinal(t, a.key.AccessKey, id)
		if j.Status != "failed" || (j.Webhook != nil) != errs {
			t.Fatalf("webhook_errors=%v: job %s, webhook %+v", errs, j.Status, j.Webhook)
		}
		if errs {
			waitDelivered(t, a.key.AccessKey, id)
			if len(rc.Deliveries()) != 1 {
				t.Errorf("webhook_errors=true: %d deliveries", len(rc.Deliveries()))
			}
		}
	}
}

// TestScreenshotOneProxy: a signed take with proxy renders its page through the user's proxy,
// with the credentials; a proxy on an address the egress guard refuses is host_not_allowed; a
// proxy with credentials is refused for a background job; format=jpg answers a jpeg.
func TestScreenshotOneProxy(t *testing.T) {
	a := newAccount(t, "default", true)
	up := testkit.NewUpstreamProxy(t, "127.0.0.1", "api-user", "api-pass")
	shot := []string{"url", page("/"), "viewport_width", "300", "viewport_height", "200"}
	take := func(kv ...string) answer {
		return do(t, "GET", env.base+"/api/v1/take?"+s1Query(a.key.SecretKey, a.key.AccessKey, append(shot, kv...)...), nil, nil)
	}

	r := take("proxy", up.URL("api-user", "api-pass"), "proxy_bypass_hosts", "bypass.example")
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("through the proxy: %d %s: %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var asked bool
	for _, req := range up.Requests() {
		asked = asked || (req.Method == "GET" && req.Target == page("/") && req.Authorized)
	}
	if !asked {
		t.Errorf("the proxy was not asked for the page with its credentials: %+v", up.Requests())
	}

	wantError(t, take("proxy", "http://u:p@127.0.0.3:"+strings.TrimPrefix(up.Addr(), "127.0.0.1:")), 403, shotd.CodeHostNotAllowed)

	// In the background the credentials wait in the job record, sealed, and still reach the proxy.
	r = take("proxy", up.URL("api-user", "api-pass"), "async", "true")
	var accepted struct {
		JobID string `json:"job_id"`
	}
	if r.status != 202 || json.Unmarshal(r.body, &accepted) != nil || accepted.JobID == "" {
		t.Fatalf("async through the proxy: %d %.200s", r.status, r.body)
	}
	rec, err := env.st.Job(a.acc.ID, accepted.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rec.Options, []byte("api-pass")) || bytes.Contains(rec.Options, []byte("api-user")) {
		t.Errorf("the job record holds the proxy's credentials in clear: %s", rec.Options)
	}
	before := len(up.Requests())
	if j := waitFinal(t, a.key.AccessKey, accepted.JobID); j.Status != "succeeded" {
		t.Fatalf("async through the proxy: %s %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	asked = false
	for _, req := range up.Requests()[before:] {
		asked = asked || (req.Method == "GET" && req.Target == page("/") && req.Authorized)
	}
	if !asked {
		t.Errorf("the job's render did not ask the proxy with its credentials: %+v", up.Requests()[before:])
	}

	r = take("format", "jpg")
	if r.status != 200 || r.header.Get("Content-Type") != "image/jpeg" || len(r.body) < 2 || r.body[0] != 0xFF || r.body[1] != 0xD8 {
		t.Errorf("format=jpg: %d %s", r.status, r.header.Get("Content-Type"))
	}
}
