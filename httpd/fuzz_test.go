package httpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// fuzzTarget is the url every fuzzed request carries. 127.0.0.3 is loopback but not allow-listed
// in this package's guard, so the literal is refused before anything is resolved or dialled: no
// input renders, reaches DNS or opens a connection, which keeps the fuzzer cheap and its traffic
// on this host. A fuzzed url, html or markdown conflicts with it and is refused by the parser.
const fuzzTarget = "http://127.0.0.3:9/"

// FuzzScreenshotRequest sends random query strings (GET) and random JSON bodies (POST) to the
// public screenshot endpoint, authenticated with the key of an account on plan basic (no
// features). Every answer must come back, with a status below 500, in the JSON error shape with
// the status the catalogue gives its code, or be a successful render.
func FuzzScreenshotRequest(f *testing.F) {
	acc, err := env.st.CreateAccount(fmt.Sprintf("fuzz-%x@example.test", rand.Uint64()), "basic", true)
	if err != nil {
		f.Fatal(err)
	}
	key, err := env.st.CreateKey(acc.ID, "fuzz", false)
	if err != nil {
		f.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	f.Cleanup(client.CloseIdleConnections)

	f.Fuzz(func(t *testing.T, post bool, query string, body []byte) {
		req, err := http.NewRequest(http.MethodGet, env.base+"/api/v1/screenshot", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = requestTarget(query) + "url=" + url.QueryEscape(fuzzTarget)
		req.Header.Set("X-Access-Key", key.AccessKey)
		// No keep-alive: a fuzz worker gets one second to exit once fuzzing stops, and an idle
		// connection holds up the server's Shutdown in TestMain past it; the worker is then
		// killed before it removes its store and Chrome directories.
		req.Close = true
		if post {
			req.Method = http.MethodPost
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("post=%v, %d-byte query, %d-byte body: no answer: %v", post, len(query), len(body), err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("answer %d cut short after %d bytes: %v", resp.StatusCode, len(b), err)
		}
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d (%s, %d bytes) for post=%v query %q", resp.StatusCode, ct, len(b), post, clipped(query))
		}
		if resp.Header.Get("X-Reference-Id") == "" {
			t.Fatalf("status %d without X-Reference-Id", resp.StatusCode)
		}
		if resp.StatusCode == http.StatusOK {
			if !strings.HasPrefix(ct, "image/") && !strings.HasPrefix(ct, "application/json") || len(b) == 0 {
				t.Fatalf("200 with %s, %d bytes", ct, len(b))
			}
			return
		}
		var e errorBody
		if !strings.HasPrefix(ct, "application/json") || json.Unmarshal(b, &e) != nil {
			t.Fatalf("status %d is not a JSON error (%s, %d bytes)", resp.StatusCode, ct, len(b))
		}
		code := shotd.Code(e.ErrorCode)
		if info := shotd.Info(code); info.Code != code || info.Status != resp.StatusCode {
			t.Fatalf("status %d with code %q, which the catalogue gives %d", resp.StatusCode, e.ErrorCode, info.Status)
		}
		if e.ErrorMessage == "" || e.DocumentationURL != "http://shotd.test/docs/errors#"+e.ErrorCode {
			t.Fatalf("incomplete error body for %s", e.ErrorCode)
		}
		if code == shotd.CodeInvalidOptions && len(e.Errors) == 0 {
			t.Fatal("invalid_options without errors")
		}
	})
}

// requestTarget makes a fuzzed query sendable: bytes an HTTP request line cannot carry (controls,
// space, non-ASCII) and '#' are percent-escaped; everything else, stray '%' and '&' included, goes
// as it is. The result ends in '&' when not empty, ready for the url parameter.
func requestTarget(q string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	if b.Len() > 0 {
		b.WriteByte('&')
	}
	return b.String()
}

// clipped shortens a query quoted in a failure message.
func clipped(q string) string {
	if len(q) > 200 {
		return q[:200] + "…"
	}
	return q
}
