package httpd_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
	"github.com/valyala/fasthttp"
)

// oneKey is a key store with one verified key, ak_good, of plan "p".
type oneKey struct{}

func (oneKey) Lookup(ak string) (shotd.Key, shotd.Account, error) {
	if ak != "ak_good" && ak != "ak_other" {
		return shotd.Key{}, shotd.Account{}, shotd.ErrNotFound
	}
	return shotd.Key{AccessKey: ak, SecretKey: "secret", AccountID: "acc"},
		shotd.Account{ID: "acc", Plan: "p", EmailVerified: true}, nil
}

// serveFake answers one request on h as if it came from addr; nothing touches the network.
func serveFake(h fasthttp.RequestHandler, addr, method, uri string, header map[string]string) *fasthttp.Response {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(uri)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	var ctx fasthttp.RequestCtx
	ap := net.TCPAddrFromAddrPort(netipMust(addr))
	ctx.Init(&req, ap, nil)
	h(&ctx)
	var resp fasthttp.Response
	ctx.Response.CopyTo(&resp)
	return &resp
}

func errorCodeOf(r *fasthttp.Response) string {
	var e struct {
		ErrorCode string `json:"error_code"`
	}
	_ = json.Unmarshal(r.Body(), &e)
	return e.ErrorCode
}

// TestRefusalAllowance: requests refused before any account limit (unknown keys, invalid
// options, bad signatures) are counted per address and per key; past the allowance they are
// 429 rate_limited with Retry-After, valid ones included.
func TestRefusalAllowance(t *testing.T) {
	const badKey = "/api/v1/screenshot?access_key=nope&url=http://pages.shotd.test/"
	const badOption = "/api/v1/screenshot?access_key=ak_good&url=http://pages.shotd.test/&viewport_widht=100"
	const badSig = "/api/v1/screenshot?access_key=ak_good&url=http://pages.shotd.test/&signature=00"
	type req struct {
		addr, uri  string
		status     int
		code       string
		retryAfter bool
	}
	tests := []struct {
		name string
		reqs []req
	}{
		{"unknown keys from one address", []req{
			{"198.51.100.1:1000", badKey, 401, "access_key_invalid", false},
			{"198.51.100.1:1001", "/api/v1/usage?access_key=nope", 401, "access_key_invalid", false},
			{"198.51.100.1:1002", "/api/v1/nothing", 404, "not_found", false},
			{"198.51.100.1:1003", badKey, 429, "rate_limited", true},
			// A key that verifies is judged by its own allowance, not its address's.
			{"198.51.100.1:1004", badOption, 400, "invalid_options", false},
			{"198.51.100.1:1005", "/api/v1/screenshot?url=http://pages.shotd.test/", 429, "rate_limited", true},
			{"198.51.100.1:1006", "/healthz", 200, "", false},
			{"198.51.100.2:1000", badKey, 401, "access_key_invalid", false},
		}},
		{"invalid options of one key from many addresses", []req{
			{"198.51.100.1:1000", badOption, 400, "invalid_options", false},
			{"198.51.100.2:1000", badOption, 400, "invalid_options", false},
			{"198.51.100.3:1000", badOption, 429, "rate_limited", true},
			{"198.51.100.3:1001", "/api/v1/screenshot?access_key=ak_other&url=http://pages.shotd.test/&x=1", 400, "invalid_options", false},
		}},
		{"bad signatures count against the address, not the key", []req{
			{"198.51.100.1:1000", badSig, 403, "signature_invalid", false},
			{"198.51.100.1:1001", badSig, 403, "signature_invalid", false},
			{"198.51.100.1:1002", badSig, 403, "signature_invalid", false},
			{"198.51.100.1:1003", badSig, 429, "rate_limited", true},
			{"198.51.100.2:1000", badOption, 400, "invalid_options", false}, // the key was not shut out
		}},
		{"an IPv6 client is its /64", []req{
			{"[2001:db8::1]:1000", badKey, 401, "access_key_invalid", false},
			{"[2001:db8::2]:1000", badKey, 401, "access_key_invalid", false},
			{"[2001:db8::3]:1000", badKey, 401, "access_key_invalid", false},
			{"[2001:db8::ffff]:1000", badKey, 429, "rate_limited", true},
			{"[2001:db8:0:1::1]:1000", badKey, 401, "access_key_invalid", false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httpd.New(httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 1 << 10,
				RefusedPerAddressPerMinute: 3, RefusedPerKeyPerMinute: 2},
				httpd.Deps{Keys: oneKey{}, Plans: map[string]shotd.Plan{"p": {Name: "p"}}, Log: zerolog.Nop()})
			h := srv.Handler()
			for i, r := range tt.reqs {
				resp := serveFake(h, r.addr, "GET", r.uri, nil)
				if resp.StatusCode() != r.status || (r.code != "" && errorCodeOf(resp) != r.code) {
					t.Fatalf("request %d (%s from %s): %d %s, want %d %s", i, r.uri, r.addr, resp.StatusCode(), resp.Body(), r.status, r.code)
				}
				if ra := string(resp.Header.Peek("Retry-After")); r.retryAfter {
					if n, err := strconv.Atoi(ra); err != nil || n < 1 || n > 60 {
						t.Fatalf("request %d: Retry-After %q, want 1..60", i, ra)
					}
				}
			}
		})
	}
}

// TestAdminTokenThrottle: failed admin tokens are counted per address; past the allowance a
// wrong or missing token is 429 rate_limited, but the right token still passes from that
// address: behind a reverse proxy every client shares it, and anyone could lock the admins out.
func TestAdminTokenThrottle(t *testing.T) {
	adm := httpd.NewAdmin(adminToken, "http://shotd.test", env.st, env.plans, nil, nil, zerolog.Nop())
	h := adm.Handler()
	right := map[string]string{"Authorization": "Bearer " + adminToken}
	for i := range httpd.AdminFailuresPerMinute {
		hdr := map[string]string{"Authorization": "Bearer wrong"}
		if i%2 == 0 {
			hdr = nil
		}
		if r := serveFake(h, "198.51.100.7:1000", "GET", "/admin/v1/accounts", hdr); r.StatusCode() != 401 {
			t.Fatalf("attempt %d: %d, want 401", i, r.StatusCode())
		}
	}
	r := serveFake(h, "198.51.100.7:1001", "GET", "/admin/v1/accounts", map[string]string{"Authorization": "Bearer wrong"})
	if r.StatusCode() != 429 || errorCodeOf(r) != "rate_limited" || len(r.Header.Peek("Retry-After")) == 0 {
		t.Fatalf("after %d failures: %d %s, want 429 rate_limited with Retry-After", httpd.AdminFailuresPerMinute, r.StatusCode(), r.Body())
	}
	if r := serveFake(h, "198.51.100.7:1002", "GET", "/admin/v1/accounts", right); r.StatusCode() != 200 {
		t.Fatalf("the right token from the throttled address: %d %s, want 200", r.StatusCode(), r.Body())
	}
	if r := serveFake(h, "198.51.100.8:1000", "GET", "/admin/v1/accounts", right); r.StatusCode() != 200 {
		t.Fatalf("another address with the right token: %d %s", r.StatusCode(), r.Body())
	}
}

// TestAdminHost: the admin listener answers only a Host of its own address, localhost, an IP
// literal or public_url's name: a page whose name was rebound to the listener (DNS rebinding)
// sends its own name and cannot read /metrics or the admin API through an operator's browser.
func TestAdminHost(t *testing.T) {
	adm := httpd.NewAdmin(adminToken, "https://shots.example.test", env.st, env.plans, nil, prometheus.NewRegistry(), zerolog.Nop())
	adm.SetMetricsToken(false)
	adm.AllowHost("admin.internal.test")
	h := adm.Handler()
	for _, c := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:9090", 200},
		{"[::1]:9090", 200},
		{"localhost:9090", 200},
		{"shots.example.test", 200},
		{"ADMIN.internal.test:9090", 200},
		{"rebind.attacker.test:9090", 404},
		{"shots.example.test.attacker.test", 404},
	} {
		r := serveFake(h, "127.0.0.1:1000", "GET", "/metrics", map[string]string{"Host": c.host})
		if r.StatusCode() != c.status {
			t.Fatalf("Host %s: %d %s, want %d", c.host, r.StatusCode(), r.Body(), c.status)
		}
	}
}

// TestMetricsToken: /metrics asks for the admin token when told to, and by default unless the
// admin listener is on loopback (TestMetrics scrapes the loopback one without it).
func TestMetricsToken(t *testing.T) {
	tests := []struct {
		name   string
		set    func(a *httpd.Admin)
		header map[string]string
		status int
	}{
		{"token asked, none sent", func(a *httpd.Admin) { a.SetMetricsToken(true) }, nil, 401},
		{"token asked, wrong one", func(a *httpd.Admin) { a.SetMetricsToken(true) }, map[string]string{"Authorization": "Bearer x"}, 401},
		{"token asked and sent", func(a *httpd.Admin) { a.SetMetricsToken(true) }, map[string]string{"Authorization": "Bearer " + adminToken}, 200},
		{"open", func(a *httpd.Admin) { a.SetMetricsToken(false) }, nil, 200},
		{"not decided: no listener seen", func(*httpd.Admin) {}, nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adm := httpd.NewAdmin(adminToken, "http://shotd.test", env.st, env.plans, nil, prometheus.NewRegistry(), zerolog.Nop())
			tt.set(adm)
			if r := serveFake(adm.Handler(), "198.51.100.9:1000", "GET", "/metrics", tt.header); r.StatusCode() != tt.status {
				t.Fatalf("/metrics: %d %s, want %d", r.StatusCode(), r.Body(), tt.status)
			}
		})
	}
}

// TestConnectionCap: one address holds at most max_conns_per_address connections; the next
// one is answered 429 rate_limited in the error shape, and a closed one frees its place.
func TestConnectionCap(t *testing.T) {
	srv := httpd.New(httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 1 << 10, MaxConnsPerAddress: 2},
		httpd.Deps{Keys: oneKey{}, Log: zerolog.Nop()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(t.Context())
	healthz := func(c net.Conn) *http.Response {
		t.Helper()
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: shotd.test\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if r := healthz(c); r.StatusCode != 200 {
			t.Fatalf("within the cap: %d", r.StatusCode)
		}
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := healthz(c)
	c.Close()
	if r.StatusCode != 429 || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Retry-After") == "" || r.Header.Get("X-Reference-Id") == "" {
		t.Fatalf("over the cap: %d %v", r.StatusCode, r.Header)
	}
	held[0].Close()
	held = held[1:]
	// The server sees the close when its read returns: try until it has (a bound, not a timing).
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		st := healthz(c).StatusCode
		c.Close()
		if st == 200 {
			break
		}
		if i == 100 {
			t.Fatalf("a closed connection never freed its place: %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func netipMust(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
