package httpd_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
)

// plainDeps are the package's store, accounts and renderer, for a second server.
func plainDeps() httpd.Deps {
	return httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: env.renderer, Ready: env.renderer.Ready, Gate: env.accounts,
		Files: env.st, Records: env.st, Log: zerolog.Nop()}
}

// rawPost sends a POST of body on a fresh connection and returns the status and error code of
// the answer, allocating next to nothing itself, so that a test can count the server's
// allocations.
func rawPost(t *testing.T, base, target string, header string, body []byte) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: shotd.test\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n",
		target, header, len(body))
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	code := ""
	if i := strings.Index(b.String(), `"error_code":"`); i >= 0 {
		code, _, _ = strings.Cut(b.String()[i+len(`"error_code":"`):], `"`)
	}
	return resp.StatusCode, code
}

// TestLargeBodyCost: a 16 MiB body (the default limit: 3 x max_source_bytes + 1 MiB) costs the
// server less than 50 MB of allocations, with or without a key (read whole, a body of one-letter
// hide_selectors items without a key cost 2.1 GB). Without a key nothing of it is parsed.
func TestLargeBodyCost(t *testing.T) {
	a := newAccount(t, "default", true)
	base := startServer(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 5 << 20}, plainDeps())
	const size = 16 << 20
	items := []byte(`{"url":"http://x.test/","hide_selectors":["a"` + strings.Repeat(`,"a"`, (size-60)/4) + `]}`)
	var names bytes.Buffer
	names.WriteString(`{"url":"http://x.test/"`)
	for i := 0; names.Len() < size-20; i++ {
		fmt.Fprintf(&names, `,"xx%d":1`, i)
	}
	names.WriteString("}")
	cases := []struct {
		name   string
		target string
		header string
		body   []byte
		status int
		code   shotd.Code
	}{
		{"items without key", "/api/v1/screenshot", "", items, 401, shotd.CodeAccessKeyRequired},
		{"items with a wrong key", "/api/v1/screenshot", "X-Access-Key: nope\r\n", items, 401, shotd.CodeAccessKeyInvalid},
		{"items with a key", "/api/v1/screenshot", "X-Access-Key: " + a.key.AccessKey + "\r\n", items, 400, shotd.CodeInvalidOptions},
		{"unknown names with a key", "/api/v1/screenshot", "X-Access-Key: " + a.key.AccessKey + "\r\n", names.Bytes(), 400, shotd.CodeInvalidOptions},
		{"items in bulk", "/api/v1/bulk", "X-Access-Key: " + a.key.AccessKey + "\r\n",
			[]byte(`{"requests":[` + string(items[:len(items)-102]) + `]}]}`), 400, shotd.CodeInvalidOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			status, code := rawPost(t, base, c.target, c.header, c.body)
			runtime.ReadMemStats(&after)
			if status != c.status || code != string(c.code) {
				t.Fatalf("answer %d %s, want %d %s", status, code, c.status, c.code)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 50e6 {
				t.Fatalf("a %d MiB body cost %d MB of allocations", len(c.body)>>20, n/1e6)
			} else {
				t.Logf("%d MB allocated", n/1e6)
			}
		})
	}
}

// TestKeyInBody: the key of a POST is found in the query, the headers or the JSON body; sent in
// more than one place, the query form wins (the query string's, else the body's) over the
// headers'. A valid key of the query or headers is checked before a byte of the body is read.
func TestKeyInBody(t *testing.T) {
	a := newAccount(t, "default", true)
	other := newAccount(t, "default", true)
	unverified := newAccount(t, "default", false) // its key, once used, answers email_not_verified
	cases := []struct {
		name   string
		target string
		header string
		body   string
		status int
		code   shotd.Code
	}{
		{"body key", "/api/v1/screenshot", "", `{"fromat":"png","access_key":"` + a.key.AccessKey + `"}`, 400, shotd.CodeInvalidOptions},
		{"body key over an unknown header key", "/api/v1/screenshot", "X-Access-Key: nope\r\n", `{"access_key":"` + a.key.AccessKey + `","fromat":"png"}`, 400, shotd.CodeInvalidOptions},
		{"body key over a valid header key", "/api/v1/screenshot", "X-Access-Key: " + a.key.AccessKey + "\r\n", `{"access_key":"` + unverified.key.AccessKey + `"}`, 403, shotd.CodeEmailNotVerified},
		{"body key and the same in the header", "/api/v1/screenshot", "X-Access-Key: " + a.key.AccessKey + "\r\n", `{"access_key":"` + a.key.AccessKey + `","fromat":"png"}`, 400, shotd.CodeInvalidOptions},
		{"query key over body", "/api/v1/screenshot?access_key=nope", "", `{"access_key":"` + a.key.AccessKey + `"}`, 401, shotd.CodeAccessKeyInvalid},
		{"query key over another in the body", "/api/v1/screenshot?access_key=" + unverified.key.AccessKey, "", `{"access_key":"` + a.key.AccessKey + `"}`, 403, shotd.CodeEmailNotVerified},
		{"query key and the same in the body", "/api/v1/screenshot?access_key=" + a.key.AccessKey, "", `{"access_key":"` + a.key.AccessKey + `","html":"<p>x</p>"}`, 200, ""},
		{"wrong body key", "/api/v1/screenshot", "X-Access-Key: " + a.key.AccessKey + "\r\n", `{"access_key":"nope"}`, 401, shotd.CodeAccessKeyInvalid},
		{"escaped body key, another in the header", "/api/v1/screenshot", "X-Access-Key: " + other.key.AccessKey + "\r\n",
			`{"access\u005fkey":"` + unverified.key.AccessKey + `"}`, 403, shotd.CodeEmailNotVerified},
		{"unknown header key, no body key", "/api/v1/screenshot", "X-Access-Key: nope\r\n", `{"html":"<p>x</p>"}`, 401, shotd.CodeAccessKeyInvalid},
		{"no key, invalid body", "/api/v1/screenshot", "", `{"url":`, 401, shotd.CodeAccessKeyRequired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, code := rawPost(t, env.base, c.target, c.header, []byte(c.body))
			if status != c.status || code != string(c.code) {
				t.Fatalf("answer %d %s, want %d %s", status, code, c.status, c.code)
			}
		})
	}
}

// TestMarkdownRefusedBeforeSlot: a markdown source past the converter's limits is refused with
// content_too_large before it takes a browser slot or a queue place (converted in the slot, 32 KB
// of nested ">" took 0.6 s of it, 5 MiB would take hours).
func TestMarkdownRefusedBeforeSlot(t *testing.T) {
	a := newAccount(t, "default", true)
	md := `{"markdown":"` + strings.Repeat(">", 32<<10) + ` x"`
	ak := "X-Access-Key: " + a.key.AccessKey + "\r\n"
	cases := []struct{ name, target, body string }{
		{"sync", "/api/v1/screenshot", md + `}`},
		{"async", "/api/v1/screenshot", md + `,"async":true}`},
		{"bulk", "/api/v1/bulk", `{"requests":[` + md + `}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, code := rawPost(t, env.base, c.target, ak, []byte(c.body))
			if status != 413 || code != string(shotd.CodeContentTooLarge) {
				t.Fatalf("answer %d %s, want 413 content_too_large", status, code)
			}
		})
	}
}
