package egress

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
)

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
