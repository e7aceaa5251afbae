package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

func TestCheckURL(t *testing.T) {
	dns := newFakeDNS(map[string]string{
		"public.test":  "8.8.4.4,2606:4700::1",
		"private.test": "10.0.0.7",
		"mixed.test":   "8.8.8.8,127.0.0.1",
		"mapped.test":  "::ffff:127.0.0.1",
		"meta.test":    "169.254.169.254",
		"nat64.test":   "64:ff9b::a9fe:a9fe",
		"loop.test":    "127.0.0.1",
	})
	plain := NewGuard(NewPolicy(nil), dns)
	loop := NewGuard(NewPolicy(prefixes("127.0.0.1/32")), dns)
	loop.DenyPort(netip.MustParseAddrPort("127.0.0.1:9222"))

	// invalid: not http:// or https:// (invalid_options); malformed: an http(s) address that is
	// not a valid full one (invalid_url), as option.ParseOptions tells them apart.
	const ok, invalid, malformed, refused, unresolved = "", shotd.CodeInvalidOptions, shotd.CodeInvalidURL, shotd.CodeHostNotAllowed, shotd.CodeNavigationFailed
	tests := []struct {
		name  string
		guard *Guard
		url   string
		want  shotd.Code
	}{
		{name: "public literal", url: "http://8.8.8.8/", want: ok},
		{name: "public v6 literal", url: "https://[2606:4700::1]:8443/x?y=1", want: ok},
		{name: "public name", url: "http://public.test/", want: ok},
		{name: "public name upper case", url: "HTTPS://PUBLIC.TEST/", want: ok},
		{name: "ftp", url: "ftp://8.8.8.8/", want: invalid},
		{name: "file", url: "file:///etc/passwd", want: invalid},
		{name: "javascript", url: "javascript:alert(1)", want: invalid},
		{name: "data", url: "data:text/html,hi", want: invalid},
		{name: "chrome", url: "chrome://settings", want: invalid},
		{name: "view-source", url: "view-source:http://8.8.8.8/", want: invalid},
		{name: "ws", url: "ws://8.8.8.8/", want: invalid},
		{name: "no scheme", url: "8.8.8.8/", want: invalid},
		{name: "opaque http", url: "http:127.0.0.1", want: invalid},
		{name: "one slash", url: "http:/8.8.8.8/", want: invalid},
		{name: "leading space", url: " http://8.8.8.8/", want: invalid},
		{name: "empty host", url: "http:///127.0.0.1", want: malformed},
		{name: "port zero", url: "http://8.8.8.8:0/", want: malformed},
		{name: "port too big", url: "http://8.8.8.8:99999/", want: malformed},
		{name: "port not a number", url: "http://8.8.8.8:8a/", want: malformed},
		{name: "five-part ipv4", url: "http://1.2.3.4.5/", want: malformed},
		{name: "octet over 255", url: "http://256.0.0.1/", want: malformed},
		{name: "first octet 999", url: "http://999.1.1.1/", want: malformed},
		{name: "last part too big", url: "http://1.2.3.256/", want: malformed},
		{name: "integer over 32 bits", url: "http://4294967296/", want: malformed},
		{name: "name ending in a number", url: "http://a.123/", want: malformed},
		{name: "name ending in a number, trailing dot", url: "https://www.example.123./", want: malformed},
		{name: "name ending in hex", url: "http://a.0x1f/", want: malformed},
		{name: "name ending in bad octal", url: "http://a.09/", want: malformed},
		{name: "ideographic dot before a number", url: "http://a\u3002123/", want: malformed},
		{name: "v6 zone with a forbidden byte", url: "http://[fe80::1%25e$th0]/", want: malformed},
		{name: "unclosed bracket", url: "http://[::1/", want: malformed},
		{name: "bracketed non-address", url: "http://[zz]/", want: malformed},
		{name: "upper-case scheme, bad host", url: "HTTPS://999.1.1.1/", want: malformed},
		{name: "loopback", url: "http://127.0.0.1/", want: refused},
		{name: "loopback upper scheme", url: "HTTP://127.0.0.1/", want: refused},
		{name: "loopback trailing dot", url: "http://127.0.0.1./", want: refused},
		{name: "loopback integer", url: "http://2130706433/", want: refused},
		{name: "loopback hex", url: "http://0x7f.1/", want: refused},
		{name: "loopback hex whole", url: "https://0x7f000001/", want: refused},
		{name: "loopback octal", url: "http://0177.0.0.1/", want: refused},
		{name: "loopback short", url: "http://127.1/", want: refused},
		{name: "loopback short three", url: "http://127.0.1:8080/", want: refused},
		{name: "zero", url: "http://0/", want: refused},
		{name: "v6 loopback", url: "http://[::1]/", want: refused},
		{name: "v6 mapped", url: "http://[::ffff:127.0.0.1]/", want: refused},
		{name: "v6 mapped hex", url: "http://[::ffff:7f00:1]/", want: refused},
		{name: "v6 zone", url: "http://[fe80::1%25eth0]/", want: refused},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data/", want: refused},
		{name: "metadata integer", url: "http://2852039166/", want: refused},
		{name: "metadata nat64", url: "http://[64:ff9b::a9fe:a9fe]/", want: refused},
		{name: "metadata 6to4", url: "http://[2002:a9fe:a9fe::]/", want: refused},
		{name: "userinfo", url: "http://user:pw@10.0.0.1/", want: refused},
		{name: "localhost", url: "http://localhost/", want: refused},
		{name: "localhost subdomain", url: "http://a.b.localhost:8080/", want: refused},
		{name: "name to private", url: "http://private.test/", want: refused},
		{name: "name to a mix", url: "http://mixed.test/", want: refused},
		{name: "name to mapped loopback", url: "http://mapped.test/", want: refused},
		{name: "name to metadata", url: "http://meta.test/", want: refused},
		{name: "name to nat64 metadata", url: "http://nat64.test/", want: refused},
		{name: "unknown name", url: "http://nx.test/", want: unresolved},
		{name: "allowed loopback", guard: loop, url: "http://127.0.0.1:8080/", want: ok},
		{name: "allowed loopback integer", guard: loop, url: "http://2130706433:8080/", want: ok},
		{name: "allowed loopback by name", guard: loop, url: "http://loop.test:8080/", want: ok},
		{name: "allowed, other loopback", guard: loop, url: "http://127.0.0.3/", want: refused},
		{name: "allowed, localhost has ::1", guard: loop, url: "http://localhost:8080/", want: refused},
		{name: "allowed, devtools port", guard: loop, url: "http://127.0.0.1:9222/json/version", want: refused},
		{name: "allowed, devtools port by name", guard: loop, url: "http://loop.test:9222/", want: refused},
		{name: "allowed, devtools port mapped", guard: loop, url: "http://[::ffff:127.0.0.1]:9222/", want: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.guard
			if g == nil {
				g = plain
			}
			err := g.CheckURL(context.Background(), tt.url)
			if tt.want == ok {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			var se *shotd.Error
			if !errors.As(err, &se) {
				t.Fatalf("CheckURL(%q) = %v, want a *shotd.Error %s", tt.url, err, tt.want)
			}
			if se.Code != tt.want {
				t.Fatalf("CheckURL(%q) code %s (%v), want %s", tt.url, se.Code, err, tt.want)
			}
			if (tt.want == invalid || tt.want == malformed) && (len(se.Fields) != 1 || se.Fields[0].Field != "url") {
				t.Fatalf("CheckURL(%q) fields %+v, want one for url", tt.url, se.Fields)
			}
		})
	}
	if n := dns.callsFor("localhost") + dns.callsFor("a.b.localhost"); n != 0 {
		t.Errorf("localhost names went to the resolver %d times", n)
	}
}

func TestResolve(t *testing.T) {
	dns := newFakeDNS(map[string]string{
		"public.test": "8.8.8.8,::ffff:8.8.8.8,2606:4700::1",
		"empty.test":  "",
	})
	g := NewGuard(nil, dns)
	tests := []struct {
		name      string
		host      string
		want      []string
		wantCode  shotd.Code
		wantCalls int
	}{
		{name: "name resolved once, mapped folded", host: "public.test", want: []string{"8.8.8.8", "2606:4700::1"}, wantCalls: 1},
		{name: "literal without dns", host: "8.8.4.4", want: []string{"8.8.4.4"}},
		{name: "mapped literal unmapped", host: "[::ffff:8.8.4.4]", want: []string{"8.8.4.4"}},
		{name: "refused literal", host: "0x7f.1", wantCode: shotd.CodeHostNotAllowed},
		{name: "malformed host", host: "1.2.3.4.5", wantCode: shotd.CodeHostNotAllowed},
		{name: "no addresses", host: "empty.test", wantCode: shotd.CodeNavigationFailed, wantCalls: 1},
		{name: "unknown", host: "nx.test", wantCode: shotd.CodeNavigationFailed, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := dns.callsFor(tt.host)
			got, err := g.Resolve(context.Background(), tt.host)
			if calls := dns.callsFor(tt.host) - before; calls != tt.wantCalls {
				t.Errorf("resolver called %d times, want %d", calls, tt.wantCalls)
			}
			if tt.wantCode != "" {
				if shotd.AsError(err).Code != tt.wantCode {
					t.Fatalf("Resolve(%q) = %v, %v; want %s", tt.host, got, err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.host, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("Resolve(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

// newBackend starts an httptest server on 127.0.0.1 that answers "hello" and counts connections.
func newBackend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s %s", r.Method, body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func serverPort(t *testing.T, srv *httptest.Server) int {
	t.Helper()
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// TestDialContext uses the guard as a webhook sender would: as the DialContext of an
// http.Transport.
func TestDialContext(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	backend, _ := newBackend(t)
	port := serverPort(t, backend)
	// The canary listens on the backend's port on another loopback address, so that a dial that
	// slipped to the wrong address would land on it.
	can := testkit.NewCanary(t, "127.0.0.3:"+strconv.Itoa(port))
	dns := newFakeDNS(map[string]string{
		"backend.test": "127.0.0.1",
		"canary.test":  "127.0.0.3",
		"mixed.test":   "127.0.0.1,127.0.0.3",
		"rebind.test":  "127.0.0.1|127.0.0.3",
	})
	g := NewGuard(NewPolicy(prefixes("127.0.0.1/32")), dns)
	tr := &http.Transport{DialContext: g.DialContext, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	p := strconv.Itoa(port)

	tests := []struct {
		name    string
		host    string // host:port goes into http://host/
		refused bool
	}{
		{name: "allowed literal", host: "127.0.0.1:" + p},
		{name: "allowed integer literal", host: "2130706433:" + p},
		{name: "allowed mapped literal", host: "[::ffff:127.0.0.1]:" + p},
		{name: "allowed name", host: "backend.test:" + p},
		{name: "canary direct", host: "127.0.0.3:" + p, refused: true},
		{name: "canary integer", host: "2130706435:" + p, refused: true},
		{name: "canary hex", host: "0x7f.0.0.3:" + p, refused: true},
		{name: "canary short", host: "127.3:" + p, refused: true},
		{name: "canary octal", host: "0177.0.0.03:" + p, refused: true},
		{name: "canary mapped", host: "[::ffff:127.0.0.3]:" + p, refused: true},
		{name: "canary by name", host: "canary.test:" + p, refused: true},
		{name: "canary in a mix", host: "mixed.test:" + p, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Post("http://"+tt.host+"/hook", "text/plain", strings.NewReader("payload"))
			if tt.refused {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("POST to %s succeeded, want a refusal", tt.host)
				}
				var se *shotd.Error
				if !IsRefused(err) || !errors.As(err, &se) {
					t.Fatalf("POST to %s: %v, want a host_not_allowed *shotd.Error", tt.host, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST to %s: %v", tt.host, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "hello POST payload" {
				t.Fatalf("POST to %s answered %q", tt.host, body)
			}
		})
	}

	t.Run("dns rebinding after the pre-check", func(t *testing.T) {
		// The pre-check sees 127.0.0.1; the delivery resolves again and sees 127.0.0.3.
		if err := g.CheckURL(context.Background(), "http://rebind.test:"+p+"/"); err != nil {
			t.Fatalf("CheckURL: %v", err)
		}
		resp, err := client.Get("http://rebind.test:" + p + "/")
		if err == nil {
			resp.Body.Close()
			t.Fatal("the rebound name was dialled")
		}
		if !IsRefused(err) {
			t.Fatalf("rebound name: %v, want a refusal", err)
		}
	})

	dialTests := []struct {
		name    string
		network string
		addr    string
		refused bool
	}{
		{name: "udp", network: "udp", addr: "127.0.0.1:" + p},
		{name: "unix", network: "unix", addr: "/tmp/x"},
		{name: "tcp6 of a v4 host", network: "tcp6", addr: "127.0.0.1:" + p},
		{name: "no port", network: "tcp", addr: "127.0.0.1", refused: true},
		{name: "port zero", network: "tcp", addr: "127.0.0.1:0", refused: true},
		{name: "named port", network: "tcp", addr: "127.0.0.1:http", refused: true},
		{name: "tcp4 to canary", network: "tcp4", addr: "127.0.0.3:" + p, refused: true},
	}
	for _, tt := range dialTests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := g.DialContext(context.Background(), tt.network, tt.addr)
			if err == nil {
				conn.Close()
				t.Fatalf("DialContext(%s, %s) succeeded", tt.network, tt.addr)
			}
			if IsRefused(err) != tt.refused {
				t.Fatalf("DialContext(%s, %s) = %v, want refused=%v", tt.network, tt.addr, err, tt.refused)
			}
		})
	}
	can.CheckUntouched(t)
}

func TestDenyPort(t *testing.T) {
	testkit.CheckGoroutines(t, 5*time.Second)
	devtools, conns := newBackend(t)
	other, _ := newBackend(t)
	dport := strconv.Itoa(serverPort(t, devtools))
	// 0.0.0.0 and ::1 are allow-listed here only to show that the port denial alone stops them.
	g := NewGuard(NewPolicy(prefixes("127.0.0.1/32", "0.0.0.0/32", "::1/128")), newFakeDNS(nil))
	g.DenyPort(netip.MustParseAddrPort(devtools.Listener.Addr().String()))

	tests := []struct {
		name string
		addr string
	}{
		{name: "the devtools address", addr: "127.0.0.1:" + dport},
		{name: "integer spelling", addr: "2130706433:" + dport},
		{name: "mapped", addr: "[::ffff:127.0.0.1]:" + dport},
		{name: "unspecified reaches loopback on linux", addr: "0.0.0.0:" + dport},
		{name: "v6 loopback", addr: "[::1]:" + dport},
		{name: "localhost", addr: "localhost:" + dport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := g.DialContext(context.Background(), "tcp", tt.addr)
			if err == nil {
				conn.Close()
				t.Fatalf("DialContext(%s) succeeded", tt.addr)
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Reason != "denied port" {
				t.Fatalf("DialContext(%s) = %v, want a denied port", tt.addr, err)
			}
		})
	}
	// Another port on the same address stays reachable.
	conn, err := g.DialContext(context.Background(), "tcp", other.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial to an allowed port: %v", err)
	}
	conn.Close()
	if n := conns.Load(); n != 0 {
		t.Fatalf("the devtools listener accepted %d connections", n)
	}
}

func TestIsRefused(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil},
		{name: "plain", err: errors.New("x")},
		{name: "other code", err: shotd.Errorf(shotd.CodeTimeout, "x")},
		{name: "refusal", err: refused(&RefusedError{Reason: "x"}), want: true},
		{name: "wrapped refusal", err: fmt.Errorf("deliver: %w", refused(&RefusedError{Reason: "x"})), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsRefused(tt.err); got != tt.want {
				t.Fatalf("IsRefused(%v) = %v", tt.err, got)
			}
		})
	}
}

// TestCheckURLLiteral: without DNS, names pass (they are checked when dialed) and everything the
// guard can tell from the URL alone is decided as CheckURL decides it.
func TestCheckURLLiteral(t *testing.T) {
	noDNS := ResolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
		t.Errorf("CheckURLLiteral resolved %q", host)
		return nil, errors.New("no DNS here")
	})
	g := NewGuard(NewPolicy(prefixes("127.0.0.1/32")), noDNS)
	g.DenyPort(netip.MustParseAddrPort("127.0.0.1:9222"))
	const ok, invalid, malformed, refused = "", shotd.CodeInvalidOptions, shotd.CodeInvalidURL, shotd.CodeHostNotAllowed
	tests := []struct {
		url  string
		want shotd.Code
	}{
		{"http://private.test/", ok},
		{"https://does-not-resolve.test:8443/x", ok},
		{"http://8.8.8.8/", ok},
		{"http://127.0.0.1/", ok},
		{"http://10.0.0.7/", refused},
		{"http://2130706433/", ok},  // 127.0.0.1, allowed here
		{"http://0x0a.1/", refused}, // 10.0.0.1
		{"http://[::ffff:169.254.169.254]/", refused},
		{"http://127.0.0.1:9222/json", refused},
		{"http://localhost:9222/", refused},
		{"http://db.localhost/", refused}, // 127.0.0.1 and ::1, which is not allowed
		{"ftp://8.8.8.8/", invalid},
		{"http://[::1/", malformed},
		{"http://999.1.1.1/", malformed},
		{"http://a.123/", malformed},
		{"http://8.8.8.8:0/", malformed},
	}
	for _, tt := range tests {
		err := g.CheckURLLiteral(tt.url)
		if got := codeOrEmpty(err); got != tt.want {
			t.Errorf("CheckURLLiteral(%q) = %v, want %q", tt.url, err, tt.want)
		}
	}
}

func codeOrEmpty(err error) shotd.Code {
	if err == nil {
		return ""
	}
	return shotd.CodeOf(err)
}

// TestDenyPortUnspecified: a port denied on the unspecified address (a listener on 0.0.0.0) is
// refused on the host's own addresses too, even when allow_private lets them through: the
// listener answers there as well. Checked without dialling.
func TestDenyPortUnspecified(t *testing.T) {
	host := netip.MustParseAddr("192.0.2.10") // stands for the host's own address
	p := NewPolicy(prefixes("192.0.2.0/24")).WithHostAddrs(func() []netip.Addr { return []netip.Addr{host} })
	g := NewGuard(p, newFakeDNS(nil))
	g.DenyPort(netip.MustParseAddrPort("0.0.0.0:8081"))
	tests := []struct {
		name    string
		url     string
		refused bool
	}{
		{name: "host address, denied port", url: "http://192.0.2.10:8081/metrics", refused: true},
		{name: "host address, other port", url: "http://192.0.2.10:8082/"},
		{name: "other allowed address, denied port", url: "http://192.0.2.11:8081/"},
	}
	// A NAT64 prefix the operator allowed reaches the host's own address it carries.
	own := netip.MustParseAddr("8.8.4.4")
	nat64 := NewGuard(NewPolicy(prefixes("8.8.4.0/24", "64:ff9b::/96")).WithHostAddrs(func() []netip.Addr { return []netip.Addr{own} }), newFakeDNS(nil))
	nat64.DenyPort(netip.MustParseAddrPort("0.0.0.0:8081"))
	if err := nat64.CheckURLLiteral("http://[64:ff9b::808:404]:8081/"); shotd.CodeOf(err) != shotd.CodeHostNotAllowed {
		t.Errorf("the host's own address through NAT64, denied port: %v, want host_not_allowed", err)
	}
	if err := nat64.CheckURLLiteral("http://[64:ff9b::808:404]:8082/"); err != nil {
		t.Errorf("the host's own address through NAT64, another port: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURLLiteral(tt.url)
			if tt.refused != (shotd.CodeOf(err) == shotd.CodeHostNotAllowed) || !tt.refused && err != nil {
				t.Fatalf("CheckURLLiteral(%s) = %v, refused %v wanted", tt.url, err, tt.refused)
			}
		})
	}
}
