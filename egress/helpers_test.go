package egress

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// canary is a listener on a loopback address that is not allow-listed. Every test that aims at it
// must leave accepted at zero.
type canary struct {
	ln       net.Listener
	accepted atomic.Int64
	done     chan struct{}
}

// newCanary listens on 127.0.0.3:port (0 = any free port).
func newCanary(t *testing.T, port int) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.3", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("canary listen: %v", err)
	}
	c := &canary{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-c.done
	})
	return c
}

func (c *canary) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

func (c *canary) assertUntouched(t *testing.T) {
	t.Helper()
	if n := c.accepted.Load(); n != 0 {
		t.Fatalf("the canary on %s accepted %d connections, want 0", c.ln.Addr(), n)
	}
}

// fakeDNS stands in for DNS, which tests must never use. Each name answers its list of answers in
// turn and then repeats the last one; an unknown name is "no such host".
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

// newFakeDNS takes, per name, answers like "a,b|c": {a, b} first, then {c} from then on.
func newFakeDNS(answers map[string]string) *fakeDNS {
	f := &fakeDNS{answers: make(map[string][][]netip.Addr), calls: make(map[string]int)}
	for name, list := range answers {
		for _, answer := range strings.Split(list, "|") {
			var addrs []netip.Addr
			for _, s := range strings.Split(answer, ",") {
				if s = strings.TrimSpace(s); s != "" {
					addrs = append(addrs, netip.MustParseAddr(s))
				}
			}
			f.answers[name] = append(f.answers[name], addrs)
		}
	}
	return f
}

func (f *fakeDNS) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	n := f.calls[name]
	f.calls[name]++
	list, ok := f.answers[name]
	if !ok || network != "ip" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if n >= len(list) {
		n = len(list) - 1
	}
	return append([]netip.Addr(nil), list[n]...), nil
}

func (f *fakeDNS) callsFor(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// checkGoroutines fails the test if it ends with more goroutines than it started with. Register it
// first so that its cleanup runs last.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}
