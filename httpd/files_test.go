package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/option"
)

// fileResult is the JSON render result (response_type=json), as a client reads it.
type fileResult struct {
	FileID      string    `json:"file_id"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expires_at"`
	Format      string    `json:"format"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	RenderMs    *int64    `json:"render_ms"`
	Cache       string    `json:"cache"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
}

func jsonResult(t *testing.T, r answer) fileResult {
	t.Helper()
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("got %d %s %s, want a JSON result", r.status, r.header.Get("Content-Type"), codeOf(r))
	}
	var fields map[string]any
	if err := json.Unmarshal(r.body, &fields); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"file_id", "url", "expires_at", "format", "content_type", "size_bytes", "render_ms", "cache", "width", "height"} {
		if _, ok := fields[f]; !ok {
			t.Fatalf("result without %s: %v", f, fields)
		}
	}
	var res fileResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// fileURL turns a result's public url into the address of the test server.
func fileURL(t *testing.T, res fileResult) string {
	t.Helper()
	const public = "http://shotd.test/api/v1/files/"
	if res.URL != public+res.FileID {
		t.Fatalf("url %q, want %s%s", res.URL, public, res.FileID)
	}
	return "/api/v1/files/" + res.FileID
}

func TestJSONResultAndFiles(t *testing.T) {
	a := newAccount(t, "default", true)
	other := newAccount(t, "default", true)
	began := time.Now()
	r := get(t, "/api/v1/screenshot", a.q("url", page("/"), "viewport_width", "320", "viewport_height", "240", "response_type", "json"))
	res := jsonResult(t, r)
	if r.header.Get("X-Cache") != "MISS" || r.header.Get("X-Quota-Remaining") == "" {
		t.Fatalf("render headers missing: X-Cache %q, X-Quota-Remaining %q", r.header.Get("X-Cache"), r.header.Get("X-Quota-Remaining"))
	}
	switch {
	case !strings.HasPrefix(res.FileID, "f_") || len(res.FileID) < 20:
		t.Fatalf("file_id %q is not an unguessable id", res.FileID)
	case res.Format != "png" || res.ContentType != "image/png" || res.Cache != "MISS":
		t.Fatalf("result %+v", res)
	case res.Width != 320 || res.Height != 240 || res.SizeBytes <= 0 || res.RenderMs == nil || *res.RenderMs < 0:
		t.Fatalf("result %+v", res)
	case res.ExpiresAt.Before(began.Add(59*time.Minute)) || res.ExpiresAt.After(time.Now().Add(61*time.Minute)):
		t.Fatalf("expires_at %v, want an hour (the harness's file_ttl) from now", res.ExpiresAt)
	}
	path := fileURL(t, res)

	f := get(t, path, a.q())
	if f.status != 200 || f.header.Get("Content-Type") != "image/png" || int64(len(f.body)) != res.SizeBytes {
		t.Fatalf("file: %d %s, %d bytes; want image/png of %d bytes", f.status, f.header.Get("Content-Type"), len(f.body), res.SizeBytes)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(f.body)); err != nil || cfg.Width != 320 || cfg.Height != 240 {
		t.Fatalf("file is not the 320x240 png: %v %+v", err, cfg)
	}
	wantRateHeaders(t, f, env.plans["default"].StatusRequestsPerMinute, env.plans["default"].StatusRequestsPerMinute-1)

	altered := []byte(res.FileID)
	altered[len(altered)-1] ^= 1 // another url-safe character
	cases := []struct {
		name string
		path string
		q    url.Values
	}{
		{"another account", path, other.q()},
		{"altered id", "/api/v1/files/" + string(altered), a.q()},
		{"truncated id", "/api/v1/files/" + res.FileID[:len(res.FileID)-1], a.q()},
		{"not an id", "/api/v1/files/" + url.PathEscape("../shotd.db"), a.q()},
		{"upper-cased id", "/api/v1/files/" + strings.ToUpper(res.FileID), a.q()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, get(t, c.path, c.q), 404, shotd.CodeFileNotFound)
		})
	}
	t.Run("without a key", func(t *testing.T) {
		wantError(t, get(t, path, nil), 401, shotd.CodeAccessKeyRequired)
	})
	if u := usageNow(t, a); u.Quota.Used != 1 {
		t.Fatalf("used %d: reading a file is not a render", u.Quota.Used)
	}
}

// TestFileExpiry: a file past its expiry answers file_not_found before the sweeper runs, and the
// sweeper then removes it.
func TestFileExpiry(t *testing.T) {
	a := newAccount(t, "default", true)
	out := &shotd.Output{Data: []byte("\x89PNG\r\n\x1a\nnot really"), Format: "png", ContentType: "image/png", Width: 1, Height: 1}
	short, err := env.st.PutFile(a.acc.ID, out, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	long, err := env.st.PutFile(a.acc.ID, out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r := get(t, "/api/v1/files/"+short.FileID, a.q()); r.status != 200 || !bytes.Equal(r.body, out.Data) {
		t.Fatalf("fresh file: %d, %d bytes", r.status, len(r.body))
	}
	time.Sleep(time.Until(short.ExpiresAt) + 50*time.Millisecond)
	wantError(t, get(t, "/api/v1/files/"+short.FileID, a.q()), 404, shotd.CodeFileNotFound)

	if _, err := env.st.SweepNow(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.st.OpenFile(short); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("swept file still on disk: %v", err)
	}
	wantError(t, get(t, "/api/v1/files/"+short.FileID, a.q()), 404, shotd.CodeFileNotFound)
	if r := get(t, "/api/v1/files/"+long.FileID, a.q()); r.status != 200 {
		t.Fatalf("unexpired file after the sweep: %d %s", r.status, codeOf(r))
	}
}

func TestResponseCache(t *testing.T) {
	a := newAccount(t, "default", true)
	other := newAccount(t, "default", true)
	q := func(acc account, kv ...string) url.Values {
		v := acc.q("url", page("/"), "viewport_width", "200", "viewport_height", "150", "cache", "true")
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	miss := getMiss(t, q(a))
	hit := get(t, "/api/v1/screenshot", q(a))
	if hit.status != 200 || hit.header.Get("X-Cache") != "HIT" || hit.header.Get("Content-Type") != "image/png" {
		t.Fatalf("second: %d %s X-Cache %q", hit.status, hit.header.Get("Content-Type"), hit.header.Get("X-Cache"))
	}
	if !bytes.Equal(hit.body, miss.body) {
		t.Fatalf("hit of %d bytes is not the %d bytes rendered", len(hit.body), len(miss.body))
	}
	if hit.header.Get("X-Quota-Remaining") != miss.header.Get("X-Quota-Remaining") {
		t.Fatalf("X-Quota-Remaining %s after the hit, %s after the miss: the hit was billed",
			hit.header.Get("X-Quota-Remaining"), miss.header.Get("X-Quota-Remaining"))
	}
	u := usageNow(t, a)
	if u.Quota.Used != 1 || u.Renders.CacheHits != 1 || u.Renders.Succeeded != 1 {
		t.Fatalf("usage %+v %+v: want 1 billed and 1 cache hit", u.Quota, u.Renders)
	}

	j := jsonResult(t, get(t, "/api/v1/screenshot", q(a, "response_type", "json")))
	if j.Cache != "HIT" || j.SizeBytes != int64(len(miss.body)) {
		t.Fatalf("json hit: %+v", j)
	}
	if f := get(t, fileURL(t, j), a.q()); f.status != 200 || !bytes.Equal(f.body, miss.body) {
		t.Fatalf("file of the hit: %d, %d bytes", f.status, len(f.body))
	}

	cases := []struct {
		name string
		q    url.Values
		want string
	}{
		{"same options again", q(a), "HIT"},
		{"options in another order", a.q("cache", "true", "viewport_height", "150", "viewport_width", "200", "url", page("/")), "HIT"},
		{"a default given explicitly", q(a, "format", "png"), "HIT"},
		{"webhook and response type left out", q(a, "response_type", "by_format"), "HIT"},
		{"cache_key changed", q(a, "cache_key", "v2"), "MISS"},
		{"cache_key again", q(a, "cache_key", "v2"), "HIT"},
		{"another option", q(a, "viewport_width", "210"), "MISS"},
		{"another account", q(other), "MISS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, "/api/v1/screenshot", c.q)
			if r.status != 200 || r.header.Get("X-Cache") != c.want {
				t.Fatalf("%d %s X-Cache %q, want %s", r.status, codeOf(r), r.header.Get("X-Cache"), c.want)
			}
		})
	}
	u = usageNow(t, a)
	if u.Quota.Used != 3 || u.Renders.CacheHits != 7 {
		t.Fatalf("usage %+v %+v: want 3 billed (miss, cache_key, option) and 7 hits", u.Quota, u.Renders)
	}
}

// TestCacheTTL: an entry serves until its cache_ttl and not after. cache_ttl is at least a
// minute, so the entry is planted through the store with a short TTL under the key the server
// computes.
func TestCacheTTL(t *testing.T) {
	a := newAccount(t, "default", true)
	q := a.q("url", page("/"), "viewport_width", "200", "viewport_height", "150", "cache", "true", "cache_ttl", "60")
	planted := []byte("\x89PNG\r\n\x1a\nplanted")
	plantCache(t, a, q, planted, 400*time.Millisecond)
	r := get(t, "/api/v1/screenshot", q)
	if r.header.Get("X-Cache") != "HIT" || !bytes.Equal(r.body, planted) {
		t.Fatalf("before the ttl: %d X-Cache %q, %d bytes; want the planted entry", r.status, r.header.Get("X-Cache"), len(r.body))
	}
	time.Sleep(500 * time.Millisecond)
	r = get(t, "/api/v1/screenshot", q)
	if r.status != 200 || r.header.Get("X-Cache") != "MISS" || bytes.Equal(r.body, planted) {
		t.Fatalf("after the ttl: %d X-Cache %q; want a fresh render", r.status, r.header.Get("X-Cache"))
	}
	if r := get(t, "/api/v1/screenshot", q); r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("the fresh render was not cached: X-Cache %q", r.header.Get("X-Cache"))
	}
}

// TestCacheTTLOfTheRequest: a cached copy answers a request only when it is younger than that
// request's own cache_ttl, whatever cache_ttl stored it. An older copy is a miss, rendered and
// billed, and the fresh result replaces the entry. Both the sync and the job path. Instead of
// waiting a minute the copies are made older with ageFile.
func TestCacheTTLOfTheRequest(t *testing.T) {
	a := newAccount(t, "jobs", true)
	q := func(ttl string) url.Values {
		return a.q("url", page("/"), "viewport_width", "200", "viewport_height", "150", "cache", "true",
			"cache_ttl", ttl, "response_type", "json")
	}
	call := func(ttl, want string) fileResult {
		t.Helper()
		r := get(t, "/api/v1/screenshot", q(ttl))
		res := jsonResult(t, r)
		if r.header.Get("X-Cache") != want || res.Cache != want {
			t.Fatalf("cache_ttl=%s: X-Cache %q, cache %q; want %s", ttl, r.header.Get("X-Cache"), res.Cache, want)
		}
		return res
	}
	old := call("3600", "MISS")
	ageFile(t, old.FileID, 2*time.Minute)

	hit := call("3600", "HIT") // two minutes old, younger than an hour
	rec, err := env.st.File(a.acc.ID, old.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if hit.FileID != old.FileID || !hit.ExpiresAt.Equal(rec.ExpiresAt) {
		t.Fatalf("hit %s expiring %v, want %s expiring %v (the file's own expiry)", hit.FileID, hit.ExpiresAt, old.FileID, rec.ExpiresAt)
	}
	fresh := call("60", "MISS") // two minutes old, older than a minute
	if fresh.FileID == old.FileID {
		t.Fatalf("cache_ttl=60 was answered the two-minute-old file %s", old.FileID)
	}
	if again := call("60", "HIT"); again.FileID != fresh.FileID {
		t.Fatalf("cache_ttl=60 again: file %s, want the fresh render %s that replaced the entry", again.FileID, fresh.FileID)
	}
	if u := usageNow(t, a); u.Quota.Used != 2 || u.Renders.CacheHits != 2 {
		t.Fatalf("usage %+v %+v: want 2 billed (the first render, the stale miss) and 2 hits", u.Quota, u.Renders)
	}

	// The job path decides the same way.
	ageFile(t, fresh.FileID, 2*time.Minute)
	job := func(ttl int, want string) *renderResult {
		t.Helper()
		id := submit(t, a.key.AccessKey, map[string]any{"url": page("/"), "viewport_width": 200, "viewport_height": 150,
			"cache": true, "cache_ttl": ttl})
		j := waitFinal(t, a.key.AccessKey, id)
		if j.Status != "succeeded" || j.Result == nil || j.Result.Cache != want {
			t.Fatalf("job with cache_ttl=%d: %s %s, result %+v; want cache %s", ttl, j.Status, j.ErrorCode, j.Result, want)
		}
		return j.Result
	}
	if r := job(3600, "HIT"); r.FileID != fresh.FileID {
		t.Fatalf("job hit file %s, want %s", r.FileID, fresh.FileID)
	}
	if r := job(60, "MISS"); r.FileID == fresh.FileID {
		t.Fatalf("job with cache_ttl=60 was answered the two-minute-old file %s", fresh.FileID)
	}
	waitUsage(t, a, "3 billed", func(u usageRecord) bool { return u.Quota.Used == 3 })
}

// ageFile makes a stored file look made d earlier, as if its cache entry were that much older:
// it moves created_at back in its record, behind the store's API.
func ageFile(t *testing.T, fileID string, d time.Duration) {
	t.Helper()
	err := env.st.DB().Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("files")) // store's bucket of file records
		var rec shotd.FileRecord
		v := b.Get([]byte(fileID))
		if v == nil {
			return fmt.Errorf("no record of %s", fileID)
		}
		if err := json.Unmarshal(v, &rec); err != nil {
			return err
		}
		rec.CreatedAt = rec.CreatedAt.Add(-d)
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(fileID), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestContentTooLarge(t *testing.T) {
	a := newAccount(t, "default", true)
	big := strings.Repeat("x", 65<<10) // over the harness's max_source_bytes of 64 KiB
	jsonCT := map[string]string{"Content-Type": "application/json"}
	body := func(kv ...any) []byte {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	cases := []struct {
		name string
		body []byte
	}{
		{"html", body("html", big)},
		{"markdown", body("markdown", big)},
		{"styles", body("url", page("/"), "styles", big)},
		{"scripts", body("url", page("/"), "scripts", big)},
		{"bulk item", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/api/v1/screenshot"
			if c.body == nil {
				path, c.body = "/api/v1/bulk", []byte(`{"requests":[{"url":"`+page("/")+`","styles":"`+big+`"}]}`)
			}
			r := do(t, http.MethodPost, env.base+path+"?access_key="+a.key.AccessKey, c.body, jsonCT)
			wantError(t, r, 413, shotd.CodeContentTooLarge)
		})
	}
	t.Run("request body over the server's limit", func(t *testing.T) {
		// The harness's server takes 4×64 KiB + 1 MiB. A body far larger than the socket buffers
		// is still being sent when the server answers: the answer must reach the client anyway.
		huge := body("html", strings.Repeat("x", 16<<20))
		for i := range 3 {
			r, err := fetch(http.MethodPost, env.base+"/api/v1/screenshot?access_key="+a.key.AccessKey, huge, jsonCT)
			if err != nil {
				t.Fatalf("try %d: no 413 but %v: the server closed the connection with the body unread", i+1, err)
			}
			wantError(t, r, 413, shotd.CodeContentTooLarge)
		}
	})
	if u := usageNow(t, a); u.Quota.Used != 0 || u.Renders.Failed != 0 {
		t.Fatalf("usage %+v %+v: refused sources are free", u.Quota, u.Renders)
	}
}

// TestOutputTooLarge runs a second server on the same store, actors and browser with tiny
// output and body limits.
func TestOutputTooLarge(t *testing.T) {
	base := startServer(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, MaxOutputBytes: 200,
		MaxBodyBytes: 4 << 10, FileTTL: time.Hour},
		httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: env.renderer, Ready: env.renderer.Ready, Gate: env.accounts, Files: env.st,
			Records: env.st})
	a := newAccount(t, "default", true)

	cases := []struct {
		name   string
		method string
		q      url.Values
		body   []byte
		status int
		code   shotd.Code
	}{
		{"output over the limit", "GET", a.q("url", page("/"), "viewport_width", "400", "viewport_height", "300"), nil, 413, shotd.CodeContentTooLarge},
		{"json result over the limit", "GET", a.q("url", page("/"), "viewport_width", "400", "viewport_height", "300", "response_type", "json"), nil, 413, shotd.CodeContentTooLarge},
		{"body over the limit", "POST", a.q(), []byte(`{"html":"` + strings.Repeat("x", 8<<10) + `"}`), 413, shotd.CodeContentTooLarge},
		{"body at the limit is read", "POST", a.q(), bodyOf(4<<10, `{"html":"`, `","fromat":1}`), 400, shotd.CodeInvalidOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, base+"/api/v1/screenshot?"+c.q.Encode(), c.body, map[string]string{"Content-Type": "application/json"})
			wantError(t, r, c.status, c.code)
		})
	}
	t.Run("chunked body over the limit", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, base+"/api/v1/screenshot?"+a.q().Encode(),
			struct{ *bytes.Reader }{bytes.NewReader([]byte(`{"html":"` + strings.Repeat("x", 8<<10) + `"}`))}) // no length: chunked
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("connection reset instead of an answer: %v", err)
		}
		defer resp.Body.Close()
		var e errorBody
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 413 || e.ErrorCode != string(shotd.CodeContentTooLarge) {
			t.Fatalf("got %d %q (%v), want 413 content_too_large", resp.StatusCode, e.ErrorCode, err)
		}
	})
	u := usageNow(t, a)
	if u.Quota.Used != 0 || u.Renders.Succeeded != 0 {
		t.Fatalf("usage %+v %+v: an output over the limit is not billed", u.Quota, u.Renders)
	}
}

// bodyOf is prefix, x's and suffix, n bytes in all.
func bodyOf(n int, prefix, suffix string) []byte {
	return []byte(prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix)
}

// BenchmarkCacheHitHTTP measures a cache hit through the whole public path on loopback: parse,
// key lookup, cache lookup, one Admit and the file streamed back. A hit should take under a
// millisecond; the client's round trip bounds the server's time from above.
func BenchmarkCacheHitHTTP(b *testing.B) {
	acc, err := env.st.CreateAccount("bench-cache@example.test", "lim_bench", true)
	if err != nil {
		b.Fatal(err)
	}
	key, err := env.st.CreateKey(acc.ID, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	q := url.Values{"access_key": {key.AccessKey}, "url": {page("/")}, "viewport_width": {"200"}, "viewport_height": {"150"}, "cache": {"true"}}
	u := env.base + "/api/v1/screenshot?" + q.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	get := func(want string) {
		resp, err := client.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want || n == 0 {
			b.Fatalf("%d X-Cache %q, %d bytes; want 200 %s", resp.StatusCode, resp.Header.Get("X-Cache"), n, want)
		}
	}
	get("MISS")
	get("HIT")
	d := make([]time.Duration, 0, 1<<14)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		get("HIT")
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[min(len(d)*99/100, len(d)-1)].Nanoseconds())/1e3, "p99-µs")
}

func init() {
	testPlans["cache_quota1"] = shotd.Plan{MonthlyQuota: 1,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
			Concurrency: 4, QueueLimit: 100, FailuresPerMinute: 1000},
		Features: shotd.AllFeatures}
}

// plantCache stores data as the cached answer of q for ttl, under the key the server computes.
func plantCache(t *testing.T, a account, q url.Values, data []byte, ttl time.Duration) {
	t.Helper()
	var ps option.Params
	for k, vs := range q {
		ps = append(ps, option.Param{Name: k, Values: vs})
	}
	o, err := option.ParseOptions(ps, option.Limits{MaxSourceBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	out := &shotd.Output{Data: data, Format: "png", ContentType: "image/png", Width: 120, Height: 100}
	if _, err := env.st.PutCachedFile(a.acc.ID, out, time.Hour, o.ResponseCacheKey(a.acc.ID), ttl); err != nil {
		t.Fatal(err)
	}
}

// getMiss renders q, which must be a cache miss.
func getMiss(t *testing.T, q url.Values) answer {
	t.Helper()
	miss := get(t, "/api/v1/screenshot", q)
	if miss.status != 200 || miss.header.Get("X-Cache") != "MISS" {
		t.Fatalf("first: %d %s X-Cache %q", miss.status, codeOf(miss), miss.header.Get("X-Cache"))
	}
	return miss
}

func wantHit(t *testing.T, r answer, body []byte) {
	t.Helper()
	if r.status != 200 || r.header.Get("X-Cache") != "HIT" || !bytes.Equal(r.body, body) {
		t.Fatalf("got %d %s X-Cache %q, %d bytes; want the cached %d bytes", r.status, codeOf(r), r.header.Get("X-Cache"), len(r.body), len(body))
	}
}

// TestCacheHitBeyondLimits: a hit renders nothing, so an account at its quota or at its
// concurrency limit still gets it, unbilled. It is a request all the same: features and rate
// apply.
func TestCacheHitBeyondLimits(t *testing.T) {
	t.Run("at the quota", func(t *testing.T) {
		a := newAccount(t, "cache_quota1", true)
		q := tiny(a, "cache", "true")
		miss := getMiss(t, q)
		hit := get(t, "/api/v1/screenshot", q)
		wantHit(t, hit, miss.body)
		if headerInt(t, hit, "X-Quota-Remaining") != 0 {
			t.Fatalf("X-Quota-Remaining %s on the hit, want 0", hit.header.Get("X-Quota-Remaining"))
		}
		wantError(t, get(t, "/api/v1/screenshot", tiny(a)), 402, shotd.CodeQuotaExceeded)
		if u := usageNow(t, a); u.Quota.Used != 1 || u.Renders.CacheHits != 1 || u.Renders.Succeeded != 1 {
			t.Fatalf("usage %+v %+v: want 1 billed and 1 cache hit", u.Quota, u.Renders)
		}
	})
	t.Run("at the concurrency limit", func(t *testing.T) {
		a := newAccount(t, "lim_conc", true)
		q := tiny(a, "cache", "true")
		miss := getMiss(t, q)
		hp := newHoldPage(t)
		held := make(chan answer, 1)
		go func() {
			r, err := fetch(http.MethodGet, env.base+"/api/v1/screenshot?"+a.q("url", hp.URL("/slow"), "viewport_width", "120", "viewport_height", "100").Encode(), nil, nil)
			if err != nil {
				r.status = -1
			}
			held <- r
		}()
		hp.WaitSlow(t, 1, 20*time.Second) // the only slot is taken
		hit := get(t, "/api/v1/screenshot", q)
		wantHit(t, hit, miss.body)
		if headerInt(t, hit, "X-Concurrency-Remaining") != 0 {
			t.Fatalf("X-Concurrency-Remaining %s on the hit, want 0", hit.header.Get("X-Concurrency-Remaining"))
		}
		wantError(t, get(t, "/api/v1/screenshot", tiny(a)), 429, shotd.CodeConcurrencyLimit)
		hp.Release()
		if r := <-held; r.status != 200 {
			t.Fatalf("held render: %d %s", r.status, codeOf(r))
		}
		if u := usageNow(t, a); u.Quota.Used != 2 || u.Renders.CacheHits != 1 {
			t.Fatalf("usage %+v %+v: want 2 billed and 1 cache hit", u.Quota, u.Renders)
		}
	})
	t.Run("rate applies", func(t *testing.T) {
		a := newAccount(t, "lim_rate", true) // 3 a minute
		q := tiny(a, "cache", "true")
		miss := get(t, "/api/v1/screenshot", q)
		wantHit(t, get(t, "/api/v1/screenshot", q), miss.body)
		hit := get(t, "/api/v1/screenshot", q)
		wantHit(t, hit, miss.body)
		wantRateHeaders(t, hit, 3, 0)
		r := get(t, "/api/v1/screenshot", q)
		wantError(t, r, 429, shotd.CodeRateLimited)
		wantRetryAfter(t, r)
		if u := usageNow(t, a); u.Quota.Used != 1 || u.Renders.CacheHits != 2 {
			t.Fatalf("usage %+v %+v: want 1 billed and 2 cache hits", u.Quota, u.Renders)
		}
	})
	t.Run("features apply", func(t *testing.T) {
		a := newAccount(t, "lim_nothing", true)
		q := tiny(a, "cache", "true")
		plantCache(t, a, q, []byte("\x89PNG\r\n\x1a\nplanted"), time.Hour)
		e := wantError(t, get(t, "/api/v1/screenshot", q), 403, shotd.CodeFeatureNotAvailable)
		if !strings.Contains(e.ErrorMessage, "cache") {
			t.Fatalf("message %q does not name the cache", e.ErrorMessage)
		}
		if u := usageNow(t, a); u.Renders.CacheHits != 0 {
			t.Fatalf("usage %+v: a refused hit was counted", u.Renders)
		}
	})
}

// vanishingFiles are the files with the sweeper's race made certain: the file of every cache hit
// is removed from disk between the lookup and the open, as at the instant of its expiry.
type vanishingFiles struct{ httpd.Files }

func (v vanishingFiles) CacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error) {
	rec, ok, err := v.Files.CacheGet(key, maxAge)
	if ok {
		if f, err := v.Files.OpenFile(rec); err == nil {
			name := f.Name()
			f.Close()
			os.Remove(name)
		}
	}
	return rec, ok, err
}

// startServer runs a second public API on loopback over the package's store, actors and
// browser; it stops with the test.
func startServer(t *testing.T, set httpd.Settings, d httpd.Deps) string {
	t.Helper()
	srv := httpd.New(set, d)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
	})
	return "http://" + ln.Addr().String()
}

// TestCachedFileVanished: a hit whose file is gone by the time it is opened renders again.
func TestCachedFileVanished(t *testing.T) {
	base := startServer(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, FileTTL: time.Hour},
		httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: env.renderer, Ready: env.renderer.Ready, Gate: env.accounts,
			Files: vanishingFiles{env.st}, Records: env.st})
	a := newAccount(t, "default", true)
	q := tiny(a, "cache", "true")
	getMiss(t, q)
	r := do(t, http.MethodGet, base+"/api/v1/screenshot?"+q.Encode(), nil, nil)
	if r.status != 200 || r.header.Get("X-Cache") != "MISS" || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("file gone after the lookup: %d %s X-Cache %q; want a fresh render", r.status, codeOf(r), r.header.Get("X-Cache"))
	}
	if w, h := imageSize(t, "png", r.body); w != 120 || h != 100 {
		t.Fatalf("render of %dx%d, want 120x100", w, h)
	}
	q.Set("response_type", "json")
	res := jsonResult(t, do(t, http.MethodGet, base+"/api/v1/screenshot?"+q.Encode(), nil, nil))
	if res.Cache != "MISS" {
		t.Fatalf("json result %+v: want a fresh render", res)
	}
	if f := get(t, fileURL(t, res), a.q()); f.status != 200 || int64(len(f.body)) != res.SizeBytes {
		t.Fatalf("the file of the json result: %d %s, %d bytes", f.status, codeOf(f), len(f.body))
	}
	if u := usageNow(t, a); u.Quota.Used != 3 || u.Renders.CacheHits != 0 {
		t.Fatalf("usage %+v %+v: want 3 billed renders and no hit", u.Quota, u.Renders)
	}
}

// TestCacheExpiresAt: expires_at of a json result is the file's real expiry: a cache entry that
// outlives the file's own TTL (an hour here) keeps the file as long; a shorter one does not
// shorten it.
func TestCacheExpiresAt(t *testing.T) {
	cases := []struct {
		name     string
		cacheTTL string
		want     time.Duration
	}{
		{"entry outlives the file's ttl", "86400", 24 * time.Hour},
		{"entry shorter than the file's ttl", "60", time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAccount(t, "default", true)
			q := tiny(a, "cache", "true", "cache_ttl", c.cacheTTL, "response_type", "json")
			began := time.Now()
			miss := jsonResult(t, get(t, "/api/v1/screenshot", q))
			if miss.Cache != "MISS" {
				t.Fatalf("first: %+v", miss)
			}
			if miss.ExpiresAt.Before(began.Add(c.want-time.Minute)) || miss.ExpiresAt.After(time.Now().Add(c.want+time.Minute)) {
				t.Fatalf("expires_at %v is %v away, want about %v", miss.ExpiresAt, time.Until(miss.ExpiresAt).Round(time.Minute), c.want)
			}
			hit := jsonResult(t, get(t, "/api/v1/screenshot", q))
			if hit.Cache != "HIT" || hit.FileID != miss.FileID || !hit.ExpiresAt.Equal(miss.ExpiresAt) {
				t.Fatalf("hit %+v, miss %+v: want the same file and expiry", hit, miss)
			}
		})
	}
}
