package httpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
)

type answer struct {
	status int
	header http.Header
	body   []byte
}

type errorBody struct {
	ErrorCode        string             `json:"error_code"`
	ErrorMessage     string             `json:"error_message"`
	DocumentationURL string             `json:"documentation_url"`
	Errors           []shotd.FieldError `json:"errors"`
}

func do(t *testing.T, method, rawURL string, body []byte, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("X-Reference-Id") == "" {
		t.Fatalf("%s %s: answer without X-Reference-Id", method, rawURL)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func get(t *testing.T, path string, q url.Values) answer {
	t.Helper()
	u := env.base + path
	if q != nil {
		u += "?" + q.Encode()
	}
	return do(t, http.MethodGet, u, nil, nil)
}

// wantError checks the error shape, status and code of an answer.
func wantError(t *testing.T, a answer, status int, code shotd.Code) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatalf("status %d %s, body is not JSON (%d bytes)", a.status, a.header.Get("Content-Type"), len(a.body))
	}
	if a.status != status || e.ErrorCode != string(code) {
		t.Fatalf("got %d %s (%s), want %d %s", a.status, e.ErrorCode, e.ErrorMessage, status, code)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q", ct)
	}
	if e.ErrorMessage == "" || e.DocumentationURL != "http://shotd.test/docs/errors#"+string(code) {
		t.Fatalf("error body incomplete: %+v", e)
	}
	if code == shotd.CodeInvalidOptions && len(e.Errors) == 0 {
		t.Fatalf("invalid_options without errors: %s", a.body)
	}
	return e
}

type account struct {
	acc shotd.Account
	key shotd.Key
}

func newAccount(t *testing.T, plan string, verified bool) account {
	t.Helper()
	acc, err := env.st.CreateAccount(strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))+"@example.test", plan, verified)
	if err != nil {
		t.Fatal(err)
	}
	key, err := env.st.CreateKey(acc.ID, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	return account{acc, key}
}

func (a account) q(kv ...string) url.Values {
	v := url.Values{"access_key": {a.key.AccessKey}}
	for i := 0; i < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func page(path string) string { return env.pages.URL + path }

func TestFormats(t *testing.T) {
	a := newAccount(t, "default", true)
	cases := []struct {
		name, format, ctype string
		scale               string
		w, h                int
	}{
		{"png", "png", "image/png", "1", 800, 600},
		{"jpeg", "jpeg", "image/jpeg", "1", 800, 600},
		{"webp", "webp", "image/webp", "1", 800, 600},
		{"png at scale 2", "png", "image/png", "2", 1600, 1200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, "/api/v1/screenshot", a.q("url", page("/"), "format", c.format, "viewport_width", "800",
				"viewport_height", "600", "device_scale_factor", c.scale))
			if r.status != 200 || r.header.Get("Content-Type") != c.ctype {
				t.Fatalf("got %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			if r.header.Get("X-Cache") != "MISS" || r.header.Get("X-Render-Ms") == "" {
				t.Fatalf("missing render headers: %v", r.header)
			}
			w, h := imageSize(t, c.format, r.body)
			if w != c.w || h != c.h {
				t.Fatalf("size %dx%d, want %dx%d", w, h, c.w, c.h)
			}
		})
	}
}

// imageSize checks the magic bytes of format and returns its pixel size.
func imageSize(t *testing.T, format string, b []byte) (int, int) {
	t.Helper()
	var cfg image.Config
	var err error
	switch format {
	case "png":
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("not a png: % x", b[:min(8, len(b))])
		}
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case "jpeg":
		if !bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) {
			t.Fatalf("not a jpeg")
		}
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case "webp":
		if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
			t.Fatalf("not a webp")
		}
		return webpSize(t, b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Width, cfg.Height
}

func webpSize(t *testing.T, b []byte) (int, int) {
	switch string(b[12:16]) {
	case "VP8 ":
		return int(b[26]) | int(b[27]&0x3f)<<8, int(b[28]) | int(b[29]&0x3f)<<8
	case "VP8L":
		bits := uint32(b[21]) | uint32(b[22])<<8 | uint32(b[23])<<16 | uint32(b[24])<<24
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1
	case "VP8X":
		return 1 + (int(b[24]) | int(b[25])<<8 | int(b[26])<<16), 1 + (int(b[27]) | int(b[28])<<8 | int(b[29])<<16)
	}
	t.Fatalf("unknown webp chunk %q", b[12:16])
	return 0, 0
}

func TestDevicePresetRender(t *testing.T) {
	a := newAccount(t, "default", true)
	for _, name := range []string{"iphone_15_pro", "pixel_8", "ipad_mini", "desktop_hd"} {
		t.Run(name, func(t *testing.T) {
			d, _ := option.LookupDevice(name)
			r := get(t, "/api/v1/screenshot", a.q("url", page("/"), "viewport_device", name))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			w, h := imageSize(t, "png", r.body)
			ww, wh := int(float64(d.Width)*d.ScaleFactor+0.5), int(float64(d.Height)*d.ScaleFactor+0.5)
			if abs(w-ww) > 1 || abs(h-wh) > 1 {
				t.Fatalf("size %dx%d, want %dx%d", w, h, ww, wh)
			}
		})
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestHTMLSourceAndPost(t *testing.T) {
	a := newAccount(t, "default", true)
	body, _ := json.Marshal(map[string]any{"html": "<h1>Hi</h1>", "format": "jpeg", "viewport_width": 400, "viewport_height": 300, "image_quality": 50})
	r := do(t, http.MethodPost, env.base+"/api/v1/take?access_key="+a.key.AccessKey, body, map[string]string{"Content-Type": "application/json"})
	if r.status != 200 || r.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("got %d: %s", r.status, r.body)
	}
	if w, h := imageSize(t, "jpeg", r.body); w != 400 || h != 300 {
		t.Fatalf("size %dx%d", w, h)
	}
}

func TestAuthentication(t *testing.T) {
	a := newAccount(t, "default", true)
	other := newAccount(t, "default", true)
	unverified := newAccount(t, "default", false)
	revoked := newAccount(t, "default", true)
	if err := env.st.RevokeKey(revoked.key.AccessKey); err != nil {
		t.Fatal(err)
	}
	usage := env.base + "/api/v1/usage"
	cases := []struct {
		name   string
		url    string
		header map[string]string
		status int
		code   shotd.Code
	}{
		{"no key", usage, nil, 401, shotd.CodeAccessKeyRequired},
		{"unknown key", usage + "?access_key=nope", nil, 401, shotd.CodeAccessKeyInvalid},
		{"revoked key", usage + "?access_key=" + revoked.key.AccessKey, nil, 401, shotd.CodeAccessKeyInvalid},
		{"unverified email", usage + "?access_key=" + unverified.key.AccessKey, nil, 403, shotd.CodeEmailNotVerified},
		{"query", usage + "?access_key=" + a.key.AccessKey, nil, 200, ""},
		{"x-access-key", usage, map[string]string{"X-Access-Key": a.key.AccessKey}, 200, ""},
		{"bearer", usage, map[string]string{"Authorization": "Bearer " + a.key.AccessKey}, 200, ""},
		{"bad bearer", usage, map[string]string{"Authorization": "Bearer nope"}, 401, shotd.CodeAccessKeyInvalid},
		{"query wins over header", usage + "?access_key=nope", map[string]string{"X-Access-Key": a.key.AccessKey}, 401, shotd.CodeAccessKeyInvalid},
		{"query wins, valid", usage + "?access_key=" + a.key.AccessKey, map[string]string{"Authorization": "Bearer nope"}, 200, ""},
		{"other key works too", usage, map[string]string{"X-Access-Key": other.key.AccessKey}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, http.MethodGet, c.url, nil, c.header)
			if c.code == "" {
				if r.status != c.status {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				return
			}
			wantError(t, r, c.status, c.code)
		})
	}
}

// signed returns the query with signature for path, computed as an outside client would.
func signed(secret, path string, v url.Values) url.Values {
	var ps option.Params
	for k, vs := range v {
		ps = append(ps, option.Param{Name: k, Values: vs})
	}
	out := url.Values{}
	for k, vs := range v {
		out[k] = vs
	}
	out.Set("signature", sign.Sign(secret, path, ps))
	return out
}

func TestSignedRequests(t *testing.T) {
	a := newAccount(t, "default", true)
	b := newAccount(t, "default", true)
	strict, err := env.st.CreateKey(a.acc.ID, "strict", true)
	if err != nil {
		t.Fatal(err)
	}
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	usageQ := url.Values{"access_key": {a.key.AccessKey}, "expires": {future}}
	tampered := signed(a.key.SecretKey, "/api/v1/usage", usageQ)
	tampered.Set("expires", strconv.FormatInt(time.Now().Add(2*time.Hour).Unix(), 10))
	shotQ := url.Values{"access_key": {a.key.AccessKey}, "url": {page("/")}, "viewport_width": {"300"}, "viewport_height": {"200"}}
	cases := []struct {
		name   string
		path   string
		q      url.Values
		status int
		code   shotd.Code
	}{
		{"valid usage", "/api/v1/usage", signed(a.key.SecretKey, "/api/v1/usage", usageQ), 200, ""},
		{"valid screenshot", "/api/v1/screenshot", signed(a.key.SecretKey, "/api/v1/screenshot", shotQ), 200, ""},
		{"screenshot link on take", "/api/v1/take", signed(a.key.SecretKey, "/api/v1/screenshot", shotQ), 200, ""},
		{"screenshot link on usage", "/api/v1/usage", signed(a.key.SecretKey, "/api/v1/screenshot", usageQ), 403, shotd.CodeSignatureInvalid},
		{"edited parameter", "/api/v1/usage", tampered, 403, shotd.CodeSignatureInvalid},
		{"secret of another key", "/api/v1/usage", signed(b.key.SecretKey, "/api/v1/usage", usageQ), 403, shotd.CodeSignatureInvalid},
		{"garbage signature", "/api/v1/usage", url.Values{"access_key": {a.key.AccessKey}, "signature": {"zz"}}, 403, shotd.CodeSignatureInvalid},
		{"expired", "/api/v1/usage", signed(a.key.SecretKey, "/api/v1/usage", url.Values{"access_key": {a.key.AccessKey}, "expires": {past}}), 403, shotd.CodeRequestExpired},
		{"expires not whole seconds", "/api/v1/usage", url.Values{"access_key": {a.key.AccessKey}, "expires": {"12.5"}}, 400, shotd.CodeInvalidOptions},
		{"expires in milliseconds", "/api/v1/usage", url.Values{"access_key": {a.key.AccessKey}, "expires": {"1763774400000"}}, 400, shotd.CodeInvalidOptions},
		// The router goes by the path as sent: a signature must cover that path, not the one it
		// decodes to.
		{"jobs link on a files path that decodes to it", "/api/v1/files/..%2fjobs%2fjob_abc",
			signed(a.key.SecretKey, "/api/v1/jobs/job_abc", url.Values{"access_key": {a.key.AccessKey}}), 403, shotd.CodeSignatureInvalid},
		{"require signature, none", "/api/v1/usage", url.Values{"access_key": {strict.AccessKey}}, 403, shotd.CodeSignatureRequired},
		{"require signature, signed", "/api/v1/usage", signed(strict.SecretKey, "/api/v1/usage", url.Values{"access_key": {strict.AccessKey}}), 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, c.path, c.q)
			if c.code == "" {
				if r.status != c.status {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				return
			}
			e := wantError(t, r, c.status, c.code)
			if c.code == shotd.CodeInvalidOptions && e.Errors[0].Field != "expires" {
				t.Fatalf("error on %q, want expires", e.Errors[0].Field)
			}
		})
	}

	t.Run("signed POST", func(t *testing.T) {
		body := []byte(`{"url":"` + page("/") + `","viewport_width":300,"viewport_height":200,"full_page":false}`)
		ps, _ := option.ParamsFromJSON(body)
		ps = append(ps, option.Param{Name: "access_key", Values: []string{strict.AccessKey}})
		sig := sign.Sign(strict.SecretKey, "/api/v1/screenshot", ps)
		r := do(t, http.MethodPost, env.base+"/api/v1/screenshot?access_key="+strict.AccessKey+"&signature="+sig, body,
			map[string]string{"Content-Type": "application/json"})
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		r = do(t, http.MethodPost, env.base+"/api/v1/screenshot?access_key="+strict.AccessKey+"&signature="+sig,
			bytes.Replace(body, []byte("300"), []byte("301"), 1), map[string]string{"Content-Type": "application/json"})
		wantError(t, r, 403, shotd.CodeSignatureInvalid)
	})

	t.Run("revoked key stops signed links at once", func(t *testing.T) {
		k, _ := env.st.CreateKey(a.acc.ID, "short-lived", false)
		link := signed(k.SecretKey, "/api/v1/usage", url.Values{"access_key": {k.AccessKey}})
		if r := get(t, "/api/v1/usage", link); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		rr := do(t, http.MethodDelete, env.admin+"/admin/v1/keys/"+k.AccessKey, nil, map[string]string{"Authorization": "Bearer " + adminToken})
		if rr.status != 204 {
			t.Fatalf("revoke: %d %s", rr.status, rr.body)
		}
		wantError(t, get(t, "/api/v1/usage", link), 401, shotd.CodeAccessKeyInvalid)
	})
}

func TestRequestErrors(t *testing.T) {
	a := newAccount(t, "default", true)
	basic := newAccount(t, "basic", true)
	ak := "?access_key=" + a.key.AccessKey
	jsonCT := map[string]string{"Content-Type": "application/json"}
	cases := []struct {
		name   string
		method string
		url    string
		body   string
		header map[string]string
		status int
		code   shotd.Code
		field  string
	}{
		{"unknown api path", "GET", "/api/v1/nope" + ak, "", nil, 404, shotd.CodeNotFound, ""},
		{"unknown api path without key", "GET", "/api/v1/screenshots", "", nil, 404, shotd.CodeNotFound, ""},
		{"wrong method", "DELETE", "/api/v1/screenshot" + ak, "", nil, 405, shotd.CodeMethodNotAllowed, ""},
		{"post on usage", "POST", "/api/v1/usage" + ak, "", nil, 405, shotd.CodeMethodNotAllowed, ""},
		{"the whole server's path", "GET", "/*", "", nil, 404, shotd.CodeNotFound, ""},
		{"post without json type", "POST", "/api/v1/screenshot" + ak, `{"url":"http://x.test"}`, map[string]string{"Content-Type": "text/plain"}, 400, shotd.CodeInvalidRequest, ""},
		{"post invalid json", "POST", "/api/v1/screenshot" + ak, `{"url":`, jsonCT, 400, shotd.CodeInvalidRequest, ""},
		{"post json array", "POST", "/api/v1/screenshot" + ak, `["url"]`, jsonCT, 400, shotd.CodeInvalidRequest, ""},
		{"unknown option", "GET", "/api/v1/screenshot" + ak + "&url=http://x.test&fromat=png", "", nil, 400, shotd.CodeInvalidOptions, "fromat"},
		{"url without scheme", "GET", "/api/v1/screenshot" + ak + "&url=example.com", "", nil, 400, shotd.CodeInvalidOptions, "url"},
		{"url without host", "GET", "/api/v1/screenshot" + ak + "&url=http:///x", "", nil, 400, shotd.CodeInvalidURL, ""},
		{"bad bound", "GET", "/api/v1/screenshot" + ak + "&url=http://x.test&viewport_width=99", "", nil, 400, shotd.CodeInvalidOptions, "viewport_width"},
		{"conflict", "GET", "/api/v1/screenshot" + ak + "&url=http://x.test&selector=h1&clip_width=5&clip_height=5", "", nil, 400, shotd.CodeInvalidOptions, "selector"},
		{"html too large", "POST", "/api/v1/screenshot" + ak, `{"html":"` + strings.Repeat("x", 65<<10) + `"}`, jsonCT, 413, shotd.CodeContentTooLarge, ""},
		{"pdf not in plan", "GET", "/api/v1/screenshot?access_key=" + basic.key.AccessKey + "&format=pdf&url=" + url.QueryEscape(page("/")), "", nil, 403, shotd.CodeFeatureNotAvailable, ""},
		{"job not found", "GET", "/api/v1/jobs/job_nope" + ak, "", nil, 404, shotd.CodeJobNotFound, ""},
		{"batch not found", "GET", "/api/v1/batches/bat_nope" + ak, "", nil, 404, shotd.CodeJobNotFound, ""},
		{"file not found", "GET", "/api/v1/files/f_nope" + ak, "", nil, 404, shotd.CodeFileNotFound, ""},
		{"status endpoint extra param", "GET", "/api/v1/usage" + ak + "&url=x", "", nil, 400, shotd.CodeInvalidOptions, "url"},
		{"auth before validation", "GET", "/api/v1/screenshot?fromat=png", "", nil, 401, shotd.CodeAccessKeyRequired, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, env.base+c.url, []byte(c.body), c.header)
			e := wantError(t, r, c.status, c.code)
			if c.code == shotd.CodeInvalidOptions && (len(e.Errors) == 0 || e.Errors[0].Field != c.field) {
				t.Fatalf("errors %+v, want field %s", e.Errors, c.field)
			}
			if c.status == 405 {
				if allow := r.header.Get("Allow"); allow == "" || strings.Contains(allow, "OPTIONS") || strings.Contains(allow, c.method) {
					t.Fatalf("Allow header %q", allow)
				}
			}
		})
	}
}

func TestRenderFailures(t *testing.T) {
	a := newAccount(t, "default", true)
	closed := closedPort(t)
	cases := []struct {
		name   string
		q      url.Values
		status int
		code   shotd.Code
	}{
		{"timeout", a.q("url", page("/slow"), "timeout", "1"), 504, shotd.CodeTimeout},
		// delay comes after a ready page; it gives a slow one no more time.
		{"timeout with delay", a.q("url", page("/slow"), "timeout", "1", "delay", "20"), 504, shotd.CodeTimeout},
		{"connection refused", a.q("url", "http://127.0.0.1:"+closed+"/"), 502, shotd.CodeNavigationFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, get(t, "/api/v1/screenshot", c.q), c.status, c.code)
		})
	}
}

// TestBudgetBeyondTimeout: timeout bounds the loading only. A delay longer than the timeout, and a
// video longer than it, still succeed.
func TestBudgetBeyondTimeout(t *testing.T) {
	a := newAccount(t, "default", true)
	r := get(t, "/api/v1/screenshot", a.q("html", "<h1>late</h1>", "timeout", "3", "delay", "3.5"))
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("delay 3.5 s, timeout 3 s: %d %s", r.status, codeOf(r))
	}
	if ms := headerInt(t, r, "X-Render-Ms"); ms < 3500 {
		t.Errorf("X-Render-Ms %d, shorter than the delay", ms)
	}
	r = get(t, "/api/v1/screenshot", a.q("html", "<h1>video</h1>", "timeout", "3", "format", "mp4",
		"video_duration", "4", "viewport_width", "320", "viewport_height", "240"))
	if r.status != 200 || r.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("4 s video, timeout 3 s: %d %s", r.status, codeOf(r))
	}
}

// TestLongRequestHead: a GET link longer than fasthttp's default 4 KiB read buffer is served; a
// request head over the server's limit answers 413 content_too_large in the error shape.
func TestLongRequestHead(t *testing.T) {
	a := newAccount(t, "default", true)
	long := "<p>" + strings.Repeat("long link ", 1200) + "</p>" // 12 KB in the query
	cases := []struct {
		name   string
		q      url.Values
		header map[string]string
		status int
	}{
		{"long url", a.q("html", long, "styles", "p{color:#333}", "viewport_width", "120", "viewport_height", "100"), nil, 200},
		{"long header", tiny(a), map[string]string{"Cookie": "c=" + strings.Repeat("x", 12<<10)}, 200},
		{"url over the limit", a.q("html", strings.Repeat("x", 70<<10)), nil, 413},
		{"headers over the limit", tiny(a), map[string]string{"Cookie": "c=" + strings.Repeat("x", 70<<10)}, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Three times: the answer must arrive every time, not a reset connection.
			for i := range 3 {
				r, err := fetch(http.MethodGet, env.base+"/api/v1/screenshot?"+c.q.Encode(), nil, c.header)
				if err != nil {
					t.Fatalf("try %d: no answer: %v", i+1, err)
				}
				if c.status == 200 {
					if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
						t.Fatalf("got %d %s, want the png", r.status, codeOf(r))
					}
					continue
				}
				e := wantError(t, r, 413, shotd.CodeContentTooLarge)
				if !strings.Contains(e.ErrorMessage, "65536 bytes") || !strings.Contains(e.ErrorMessage, "POST") {
					t.Fatalf("message %q names neither the limit nor the way out", e.ErrorMessage)
				}
				if r.header.Get("X-Reference-Id") == "" {
					t.Fatal("413 without X-Reference-Id")
				}
			}
		})
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return fmt.Sprint(port)
}

func TestDocsAndHealth(t *testing.T) {
	r := do(t, http.MethodGet, env.base+"/docs/errors", nil, nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("docs: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, c := range shotd.Catalogue {
		if !bytes.Contains(r.body, []byte(`id="`+string(c.Code)+`"`)) {
			t.Fatalf("docs page lacks an anchor for %s", c.Code)
		}
	}
	if r := do(t, http.MethodGet, env.base+"/healthz", nil, nil); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := do(t, http.MethodGet, env.base+"/readyz", nil, nil); r.status != 200 {
		t.Fatalf("readyz %d", r.status)
	}
}
