package httpd

import (
	"hash/maphash"
	"net"
	"net/netip"
	"sync"
	"time"
)

// allowance counts events (refused requests, failed admin tokens) per client over a minute that
// starts with the client's first event. Clients are kept as hashes, so that a long key sent as
// an identity costs 8 bytes, and the table is bounded: when it is full of live entries a new
// client is not counted (the table cannot be grown without end by naming new clients).
type allowance struct {
	limit int
	now   func() time.Time
	seed  maphash.Seed

	mu sync.Mutex
	m  map[uint64]allowanceEntry
}

type allowanceEntry struct {
	n     int
	reset time.Time
}

const (
	allowanceSpan = time.Minute
	// allowanceMax bounds each table: 64 K entries of 32 bytes or so.
	allowanceMax = 1 << 16
)

// newAllowance returns an allowance of limit events a minute, or nil (no bound) for limit <= 0.
func newAllowance(limit int, now func() time.Time) *allowance {
	if limit <= 0 {
		return nil
	}
	return &allowance{limit: limit, now: now, seed: maphash.MakeSeed(), m: map[uint64]allowanceEntry{}}
}

// wait is 0 when id may go on, else the whole seconds until its minute ends.
func (a *allowance) wait(id string) int {
	if a == nil || id == "" {
		return 0
	}
	h := maphash.String(a.seed, id)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[h]
	if !ok || !now.Before(e.reset) || e.n < a.limit {
		return 0
	}
	return max(int((e.reset.Sub(now)+time.Second-1)/time.Second), 1)
}

// add counts one event of id.
func (a *allowance) add(id string) {
	if a == nil || id == "" {
		return
	}
	h := maphash.String(a.seed, id)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[h]
	if !ok || !now.Before(e.reset) {
		if !ok && len(a.m) >= allowanceMax && !a.prune(now) {
			return
		}
		e = allowanceEntry{reset: now.Add(allowanceSpan)}
	}
	e.n++
	a.m[h] = e
}

// prune drops the entries whose minute ended and reports whether there is room now.
func (a *allowance) prune(now time.Time) bool {
	for h, e := range a.m {
		if !now.Before(e.reset) {
			delete(a.m, h)
		}
	}
	return len(a.m) < allowanceMax
}

// clientID names the client at addr for the per-address counts: its IP address, IPv6 by its
// /64, which one host or customer usually has whole (counting single IPv6 addresses would let
// a client pick a fresh one per request).
func clientID(addr net.Addr) string {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return addr.String()
		}
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
