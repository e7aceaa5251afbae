package httpd_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
)

func init() {
	testPlans["onepm"] = shotd.Plan{MonthlyQuota: 100,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1, StatusRequestsPerMinute: 100, Concurrency: 1,
			QueueLimit: 5, FailuresPerMinute: 100},
		Features: []string{}}
	testPlans["queue1"] = shotd.Plan{MonthlyQuota: 100,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 100, StatusRequestsPerMinute: 100,
			Concurrency: 1, QueueLimit: 1, FailuresPerMinute: 100},
		Features: []string{shotd.FeatureAsync, shotd.FeatureBulk}}
}

// startRaw serves a fresh public API on loopback and returns it with its address.
func startRaw(t *testing.T, set httpd.Settings) (*httpd.Server, string) {
	t.Helper()
	srv := httpd.New(set, plainDeps())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	})
	return srv, ln.Addr().String()
}

// openBody opens a connection and sends the head of a JSON POST declaring a body of declared
// bytes, then the first sent bytes of it.
func openBody(t *testing.T, addr, header string, declared, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/v1/screenshot HTTP/1.1\r\nHost: shotd.test\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n", header, declared)
	if sent > 0 {
		if _, err := c.Write([]byte(`{"html":"` + strings.Repeat("x", sent-9))); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func heapNow() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestBodiesBeforeKeyMemory: 64 connections without a key that send the head of a POST declaring
// a large body, and 16 KiB of it, grow the server's heap by less than 50 MB. Read whole before any
// handler ran, such bodies of 22 MB grew the service by 2 GB. Bodies over the limit are
// refused at once; bodies under it are read as they arrive, charged to the body budget.
func TestBodiesBeforeKeyMemory(t *testing.T) {
	const conns = 64
	srv, addr := startRaw(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 5 << 20})
	limit := 3*(5<<20) + 1<<20
	for _, c := range []struct {
		name     string
		declared int
	}{{"22 MB, over the limit", 22_000_000}, {"at the limit", limit}} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GC()
			base := heapNow()
			answered := make(chan string, conns)
			var cs []net.Conn
			for range conns {
				// fasthttp reads up to 8 KiB of a body before the handler runs.
				conn := openBody(t, addr, "", c.declared, 16<<10)
				cs = append(cs, conn)
				go func() {
					conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
					resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
					if err != nil {
						answered <- "no answer: " + err.Error()
						return
					}
					resp.Body.Close()
					answered <- resp.Status
				}()
			}
			// Wait for the state the server settles in, watching its heap meanwhile: all refused
			// (over the limit), or every connection's handler reading its body.
			n, peak := 0, uint64(0)
			for {
				if h := heapNow(); h > base && h-base > peak {
					peak = h - base
				}
				if peak > 50e6 {
					t.Fatalf("the heap grew by %d MB", peak/1e6)
				}
				select {
				case st := <-answered:
					if c.declared <= limit || !strings.HasPrefix(st, "413") {
						t.Fatalf("answer %q", st)
					}
					n++
				default:
				}
				if (c.declared > limit && n == conns) || (c.declared <= limit && srv.BodyBytesInFlight() >= conns*64<<10) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("heap grew by at most %d MB; %d body bytes in flight", peak/1e6, srv.BodyBytesInFlight())
			for _, conn := range cs {
				conn.Close()
			}
			for srv.BodyBytesInFlight() != 0 { // given back once the handlers end
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestBodyBudget: bodies read before their key is known draw from a share of the budget of
// about one body at the limit; past it they are 503 service_unavailable, while a request whose
// key was checked first still gets its body read.
func TestBodyBudget(t *testing.T) {
	a := newAccount(t, "default", true)
	srv, addr := startRaw(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 1 << 20})
	limit := 3*(1<<20) + 1<<20
	first := openBody(t, addr, "", limit, 3<<20)
	for srv.BodyBytesInFlight() < 3<<20 {
		time.Sleep(5 * time.Millisecond)
	}
	status, code := rawPost(t, "http://"+addr, "/api/v1/screenshot", "", []byte(`{"html":"`+strings.Repeat("y", 2<<20)+`"}`))
	if status != 503 || code != string(shotd.CodeServiceUnavailable) {
		t.Fatalf("a second keyless body: %d %s, want 503 service_unavailable", status, code)
	}
	status, code = rawPost(t, "http://"+addr, "/api/v1/screenshot", "X-Access-Key: "+a.key.AccessKey+"\r\n",
		[]byte(`{"html":"`+strings.Repeat("y", 900<<10)+`","fromat":"png"}`))
	if status != 400 || code != string(shotd.CodeInvalidOptions) {
		t.Fatalf("a body with its key in a header: %d %s, want 400 invalid_options", status, code)
	}
	first.Close()
}

// TestMultipartRefusedUnread: a multipart body is refused as not JSON, never parsed.
func TestMultipartRefusedUnread(t *testing.T) {
	a := newAccount(t, "default", true)
	c, err := net.Dial("tcp", strings.TrimPrefix(env.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	// Declares 1 MB and sends 16 KiB of it (fasthttp reads 8 KiB before the handler runs): an
	// answer proves nothing waited for the rest of the parts.
	fmt.Fprintf(c, "POST /api/v1/screenshot HTTP/1.1\r\nHost: shotd.test\r\nX-Access-Key: %s\r\n"+
		"Content-Type: multipart/form-data; boundary=xx\r\nContent-Length: 1000000\r\n\r\n--xx\r\n%s", a.key.AccessKey, strings.Repeat("z", 16<<10))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("multipart: %s, want 400 invalid_request", resp.Status)
	}
}

// TestStoredHTMLHeaders: a stored file a page's content made (text/html) is served as a download
// that cannot be sniffed or run scripts on the API's origin; an image keeps inline with the
// same nosniff and sandbox.
func TestStoredHTMLHeaders(t *testing.T) {
	a := newAccount(t, "default", true)
	for _, c := range []struct {
		ct         string
		attachment bool
	}{{"text/html; charset=utf-8", true}, {"image/svg+xml", true}, {"application/json", true}, {"image/png", false}, {"application/pdf", false}} {
		rec, err := env.st.PutFile(a.acc.ID, &shotd.Output{Data: []byte("<script>alert(1)</script>"), Format: "html", ContentType: c.ct}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := get(t, "/api/v1/files/"+rec.FileID, url.Values{"access_key": {a.key.AccessKey}})
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.ct, r.status, r.body)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Security-Policy") != "sandbox" {
			t.Fatalf("%s: headers %v, want nosniff and CSP sandbox", c.ct, r.header)
		}
		if got := strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment"); got != c.attachment {
			t.Fatalf("%s: Content-Disposition %q, attachment %v wanted", c.ct, r.header.Get("Content-Disposition"), c.attachment)
		}
	}
}

// TestAdmitBeforeConverting: a key past its rate is refused 429 before its markdown is converted
// (converted first, it held the shared conversion slots and answered the converter's error).
func TestAdmitBeforeConverting(t *testing.T) {
	a := newAccount(t, "onepm", true)
	body := []byte(`{"markdown":"` + strings.Repeat(">", 32<<10) + ` x"}`)
	hdr := "X-Access-Key: " + a.key.AccessKey + "\r\n"
	if status, code := rawPost(t, env.base, "/api/v1/screenshot", hdr, body); status != 413 || code != string(shotd.CodeContentTooLarge) {
		t.Fatalf("first: %d %s, want 413 content_too_large", status, code)
	}
	if status, code := rawPost(t, env.base, "/api/v1/screenshot", hdr, body); status != 429 || code != string(shotd.CodeRateLimited) {
		t.Fatalf("second, past the rate: %d %s, want 429 rate_limited", status, code)
	}
}

// refusingGate refuses every admission 429 rate_limited, counting them.
type refusingGate struct{ admits atomic.Int32 }

func (g *refusingGate) Admit(shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error) {
	g.admits.Add(1)
	e := shotd.Errorf(shotd.CodeRateLimited, "too many requests in the last minute")
	e.RetryAfter = 30
	return nil, shotd.LimitsSnapshot{RateLimit: 1, RateReset: time.Now().Add(30 * time.Second)}, e
}
func (g *refusingGate) Settle(string, uint64, shotd.Outcome) (shotd.LimitsSnapshot, error) {
	return shotd.LimitsSnapshot{}, nil
}
func (g *refusingGate) Usage(shotd.Account, shotd.Plan) (*shotd.UsageReport, error) { return nil, nil }
func (g *refusingGate) ReleaseJobs(string, int)                                     {}

// TestAccountRefusalsCounted: the account's own refusals (429 past its rate) count against the
// key's allowance of refusals, so a client that keeps sending past its limits is refused before
// the account is asked again.
func TestAccountRefusalsCounted(t *testing.T) {
	g := &refusingGate{}
	srv := httpd.New(httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 1 << 10, RefusedPerKeyPerMinute: 2},
		httpd.Deps{Keys: oneKey{}, Plans: map[string]shotd.Plan{"p": {Name: "p"}}, Gate: g, Log: zerolog.Nop()})
	h := srv.Handler()
	for i := range 5 {
		r := serveFake(h, "198.51.100.1:1000", "GET", "/api/v1/usage?access_key=ak_good", nil)
		if r.StatusCode() != 429 {
			t.Fatalf("request %d: %d %s, want 429", i, r.StatusCode(), r.Body())
		}
	}
	if n := g.admits.Load(); n != 2 {
		t.Fatalf("the account was asked %d times, want 2 (then the key's allowance refuses)", n)
	}
}

// TestRefusedJobGivesPlacesBack: a job admitted and then refused by its markdown gives its queue
// place and quota reservation back: with a queue of one, the next is admitted again.
func TestRefusedJobGivesPlacesBack(t *testing.T) {
	a := newAccount(t, "queue1", true)
	md := `{"markdown":"` + strings.Repeat(">", 32<<10) + ` x"`
	hdr := "X-Access-Key: " + a.key.AccessKey + "\r\n"
	for i, c := range []struct{ target, body string }{
		{"/api/v1/screenshot", md + `,"async":true}`},
		{"/api/v1/screenshot", md + `,"async":true}`},
		{"/api/v1/bulk", `{"requests":[` + md + `}]}`},
		{"/api/v1/bulk", `{"requests":[` + md + `}]}`},
	} {
		if status, code := rawPost(t, env.base, c.target, hdr, []byte(c.body)); status != 413 || code != string(shotd.CodeContentTooLarge) {
			t.Fatalf("request %d: %d %s, want 413 content_too_large", i, status, code)
		}
	}
	u := usageNow(t, a)
	if u.Jobs.Waiting != 0 || u.Quota.Remaining != 100 {
		t.Fatalf("usage after refused jobs: %+v", u)
	}
}

// TestChunkedBodyLimit: a chunked body, which declares no length, is refused 413
// content_too_large once it passes the limit while streamed.
func TestChunkedBodyLimit(t *testing.T) {
	a := newAccount(t, "default", true)
	c, err := net.Dial("tcp", strings.TrimPrefix(env.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "POST /api/v1/screenshot HTTP/1.1\r\nHost: shotd.test\r\nX-Access-Key: %s\r\n"+
		"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", a.key.AccessKey)
	go func() {
		chunk := strings.Repeat("x", 64<<10)
		for range 64 { // 4 MiB, over the limit of 3 x 64 KiB + 1 MiB
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return
			}
		}
		fmt.Fprint(c, "0\r\n\r\n")
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked body over the limit: %s, want 413", resp.Status)
	}
}
