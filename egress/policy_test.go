package egress

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// The "allowed" public addresses below are only classified, never contacted.
func TestPolicyCheck(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		refused bool
		reason  string // substring of the reason, when refused
	}{
		// IPv4 refused
		{name: "this network", addr: "0.0.0.0", refused: true, reason: "this network"},
		{name: "this network high", addr: "0.255.255.255", refused: true, reason: "this network"},
		{name: "private 10", addr: "10.0.0.1", refused: true, reason: "private"},
		{name: "private 10 top", addr: "10.255.255.255", refused: true, reason: "private"},
		{name: "cgnat low", addr: "100.64.0.0", refused: true, reason: "cgnat"},
		{name: "cgnat high", addr: "100.127.255.255", refused: true, reason: "cgnat"},
		{name: "loopback", addr: "127.0.0.1", refused: true, reason: "loopback"},
		{name: "loopback other", addr: "127.0.0.3", refused: true, reason: "loopback"},
		{name: "loopback top", addr: "127.255.255.254", refused: true, reason: "loopback"},
		{name: "link-local", addr: "169.254.1.1", refused: true, reason: "link-local"},
		{name: "metadata", addr: "169.254.169.254", refused: true, reason: "link-local"},
		{name: "private 172.16", addr: "172.16.0.1", refused: true, reason: "private"},
		{name: "private 172.31", addr: "172.31.255.255", refused: true, reason: "private"},
		{name: "ietf protocol assignments", addr: "192.0.0.8", refused: true, reason: "ietf"},
		{name: "test-net-1", addr: "192.0.2.1", refused: true, reason: "documentation"},
		{name: "6to4 relay anycast", addr: "192.88.99.1", refused: true, reason: "reserved"},
		{name: "private 192.168", addr: "192.168.1.1", refused: true, reason: "private"},
		{name: "benchmarking", addr: "198.18.0.1", refused: true, reason: "benchmarking"},
		{name: "benchmarking high", addr: "198.19.255.255", refused: true, reason: "benchmarking"},
		{name: "test-net-2", addr: "198.51.100.7", refused: true, reason: "documentation"},
		{name: "test-net-3", addr: "203.0.113.9", refused: true, reason: "documentation"},
		{name: "multicast", addr: "224.0.0.1", refused: true, reason: "multicast"},
		{name: "multicast high", addr: "239.255.255.250", refused: true, reason: "multicast"},
		{name: "reserved 240", addr: "240.0.0.1", refused: true, reason: "reserved"},
		{name: "broadcast", addr: "255.255.255.255", refused: true, reason: "broadcast"},
		// Cloud metadata and platform addresses: the WireServer and IBM's service network are
		// in no private range, so the policy lists each of its own.
		{name: "azure wireserver", addr: "168.63.129.16", refused: true, reason: "azure wireserver"},
		{name: "azure wireserver mapped", addr: "::ffff:168.63.129.16", refused: true, reason: "azure wireserver"},
		{name: "azure wireserver nat64", addr: "64:ff9b::a83f:8110", refused: true, reason: "azure wireserver"},
		{name: "ibm service network", addr: "161.26.0.10", refused: true, reason: "ibm cloud"},
		{name: "aws ecs task metadata", addr: "169.254.170.2", refused: true, reason: "aws ecs"},
		{name: "alibaba metadata", addr: "100.100.100.200", refused: true, reason: "alibaba"},
		{name: "oracle legacy metadata", addr: "192.0.0.192", refused: true, reason: "oracle"},
		{name: "tencent metadata", addr: "169.254.0.23", refused: true, reason: "tencent"},
		{name: "aws metadata v6", addr: "fd00:ec2::254", refused: true, reason: "aws metadata"},
		{name: "next to the wireserver", addr: "168.63.129.17"},
		{name: "next to ibm", addr: "161.27.0.1"},
		// IPv4 allowed
		{name: "public dns", addr: "8.8.8.8"},
		{name: "public 1.1.1.1", addr: "1.1.1.1"},
		{name: "just below 10/8", addr: "9.255.255.255"},
		{name: "just above 10/8", addr: "11.0.0.0"},
		{name: "just below cgnat", addr: "100.63.255.255"},
		{name: "just above cgnat", addr: "100.128.0.0"},
		{name: "just below 172.16/12", addr: "172.15.255.255"},
		{name: "just above 172.16/12", addr: "172.32.0.0"},
		{name: "192.0.1 public", addr: "192.0.1.1"},
		{name: "just above 192.168", addr: "192.169.0.1"},
		{name: "just below multicast", addr: "223.255.255.255"},
		// IPv6 refused
		{name: "v6 unspecified", addr: "::", refused: true, reason: "unspecified"},
		{name: "v6 loopback", addr: "::1", refused: true, reason: "loopback"},
		{name: "v6 unique-local fc", addr: "fc00::1", refused: true, reason: "unique-local"},
		{name: "v6 unique-local fd", addr: "fd12:3456:789a::1", refused: true, reason: "unique-local"},
		{name: "v6 link-local", addr: "fe80::1", refused: true, reason: "link-local"},
		{name: "v6 link-local zoned", addr: "fe80::1%eth0", refused: true, reason: "link-local"},
		{name: "v6 site-local", addr: "fec0::1", refused: true, reason: "site-local"},
		{name: "v6 multicast", addr: "ff02::1", refused: true, reason: "multicast"},
		{name: "v6 multicast global scope", addr: "ff0e::1", refused: true, reason: "multicast"},
		{name: "v6 documentation", addr: "2001:db8::1", refused: true, reason: "documentation"},
		{name: "v6 documentation 3fff", addr: "3fff::1", refused: true, reason: "documentation"},
		{name: "v6 discard-only", addr: "100::1", refused: true, reason: "discard"},
		{name: "v6 benchmarking", addr: "2001:2::1", refused: true, reason: "ietf"},
		{name: "v6 reserved 4000::", addr: "4000::1", refused: true, reason: "reserved"},
		{name: "v6 reserved ::2", addr: "::2:0:0:1", refused: true, reason: "reserved"},
		{name: "v6 srv6", addr: "5f00::1", refused: true, reason: "srv6"},
		// IPv4 embedded in IPv6
		{name: "mapped loopback", addr: "::ffff:127.0.0.1", refused: true, reason: "loopback"},
		{name: "mapped private", addr: "::ffff:10.1.2.3", refused: true, reason: "private"},
		{name: "mapped metadata", addr: "::ffff:169.254.169.254", refused: true, reason: "link-local"},
		{name: "mapped hex loopback", addr: "::ffff:7f00:1", refused: true, reason: "loopback"},
		{name: "compatible loopback", addr: "::127.0.0.1", refused: true, reason: "ipv4-compatible"},
		{name: "compatible public", addr: "::8.8.8.8", refused: true, reason: "ipv4-compatible"},
		{name: "translated loopback", addr: "::ffff:0:127.0.0.1", refused: true, reason: "ipv4-translated"},
		{name: "6to4 loopback", addr: "2002:7f00:1::", refused: true, reason: "6to4 of loopback"},
		{name: "6to4 private", addr: "2002:c0a8:101::1", refused: true, reason: "6to4 of private"},
		{name: "6to4 metadata", addr: "2002:a9fe:a9fe::", refused: true, reason: "6to4 of link-local"},
		{name: "nat64 loopback", addr: "64:ff9b::127.0.0.1", refused: true, reason: "nat64 of loopback"},
		{name: "nat64 private", addr: "64:ff9b::a00:1", refused: true, reason: "nat64 of private"},
		{name: "nat64 metadata", addr: "64:ff9b::169.254.169.254", refused: true, reason: "nat64 of link-local"},
		{name: "nat64 local-use", addr: "64:ff9b:1::808:808", refused: true, reason: "nat64 local-use"},
		// Teredo: 2001:0:server:flags:port:~client. Client 127.0.0.1 is stored as 80ff:fffe.
		{name: "teredo client loopback", addr: "2001:0:4136:e378:8000:63bf:80ff:fffe", refused: true, reason: "teredo of loopback"},
		{name: "teredo client private", addr: "2001:0:4136:e378:8000:63bf:f5ff:fffe", refused: true, reason: "teredo of private"},
		{name: "teredo server private", addr: "2001:0:a00:1:8000:63bf:f7f7:f7f7", refused: true, reason: "teredo of private"},
		// IPv6 allowed
		{name: "v6 public cloudflare", addr: "2606:4700::1"},
		{name: "v6 public google", addr: "2001:4860:4860::8888"},
		{name: "mapped public", addr: "::ffff:8.8.8.8"},
		{name: "6to4 public", addr: "2002:808:808::1"},
		{name: "nat64 public", addr: "64:ff9b::8.8.8.8"},
		{name: "teredo public both", addr: "2001:0:4136:e378:8000:63bf:f7f7:f7f7"}, // client 8.8.8.8
	}
	if len(tests) < 60 {
		t.Fatalf("the table has %d addresses, want at least 60", len(tests))
	}
	p := NewPolicy(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Check(netip.MustParseAddr(tt.addr))
			if !tt.refused {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tt.addr, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check(%s) allowed, want refused (%s)", tt.addr, tt.reason)
			}
			var se *shotd.Error
			if !errors.As(err, &se) || se.Code != shotd.CodeHostNotAllowed {
				t.Fatalf("Check(%s) = %#v, want a host_not_allowed *shotd.Error", tt.addr, err)
			}
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("Check(%s): no *RefusedError cause in %v", tt.addr, err)
			}
			if !strings.Contains(re.Reason, tt.reason) {
				t.Errorf("Check(%s) reason %q, want it to contain %q", tt.addr, re.Reason, tt.reason)
			}
			if strings.Contains(se.Message, tt.addr) {
				t.Errorf("client message %q leaks the address", se.Message)
			}
		})
	}
}

func TestPolicyInvalidAddr(t *testing.T) {
	var nilPolicy *Policy
	for _, tt := range []struct {
		name string
		p    *Policy
	}{
		{name: "nil policy", p: nilPolicy},
		{name: "allow everything", p: NewPolicy([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Check(netip.Addr{}); err == nil {
				t.Fatal("the zero Addr was allowed")
			}
			if err := tt.p.Check(netip.MustParseAddr("127.0.0.1")); (err == nil) != (tt.p != nil) {
				t.Fatalf("Check(127.0.0.1) = %v", err)
			}
		})
	}
}

// TestPolicyAllowAndDeny: the allow and deny lists and the host's own addresses, in their order.
func TestPolicyAllowAndDeny(t *testing.T) {
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	// own lists the host's own addresses (WithHostAddrs); the public ones are only classified.
	own := func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("8.8.4.4"), netip.MustParseAddr("2001:4860:4860::8844"), netip.MustParseAddr("::ffff:9.9.9.9")}
	}
	tests := []struct {
		name      string
		allow     []netip.Prefix
		deny      []netip.Prefix
		own       func() []netip.Addr
		addr      string
		refused   bool
		reasonHas string // when refused: part of the RefusedError's reason ("" = any)
	}{
		{name: "allowed loopback", allow: pfx("127.0.0.1/32"), addr: "127.0.0.1"},
		{name: "allowed loopback, other loopback", allow: pfx("127.0.0.1/32"), addr: "127.0.0.3", refused: true},
		{name: "allowed loopback, mapped form", allow: pfx("127.0.0.1/32"), addr: "::ffff:127.0.0.1"},
		{name: "allowed loopback, nat64 form stays refused", allow: pfx("127.0.0.1/32"), addr: "64:ff9b::7f00:1", refused: true},
		{name: "allowed loopback, 6to4 form stays refused", allow: pfx("127.0.0.1/32"), addr: "2002:7f00:1::", refused: true},
		{name: "allowed as mapped prefix", allow: pfx("::ffff:10.0.0.0/104"), addr: "10.9.8.7"},
		{name: "allowed intranet", allow: pfx("10.0.0.0/8"), addr: "10.1.2.3"},
		{name: "allowed wireserver", allow: pfx("168.63.129.16/32"), addr: "168.63.129.16"},
		{name: "allowed intranet, other private", allow: pfx("10.0.0.0/8"), addr: "192.168.0.1", refused: true},
		{name: "allowed ula", allow: pfx("fd00::/8"), addr: "fd00::5"},
		{name: "allowed link-local with zone", allow: pfx("fe80::/10"), addr: "fe80::1%eth0"},
		{name: "allowed v6 loopback", allow: pfx("::1/128"), addr: "::1"},
		{name: "deny wins over allow", allow: pfx("10.0.0.0/8"), deny: pfx("10.0.0.5/32"), addr: "10.0.0.5", refused: true},
		{name: "deny leaves the rest of allow", allow: pfx("10.0.0.0/8"), deny: pfx("10.0.0.5/32"), addr: "10.0.0.6"},
		{name: "deny wins, mapped form", allow: pfx("127.0.0.0/8"), deny: pfx("127.0.0.1/32"), addr: "::ffff:127.0.0.1", refused: true},
		{name: "deny wins, nat64 form", allow: pfx("127.0.0.0/8", "64:ff9b::/96"), deny: pfx("127.0.0.1/32"), addr: "64:ff9b::7f00:1", refused: true},
		{name: "deny a public address", deny: pfx("8.8.8.8/32"), addr: "8.8.8.8", refused: true},
		{name: "deny a public address, 6to4 form", deny: pfx("8.8.8.8/32"), addr: "2002:808:808::", refused: true},
		{name: "deny a public address, teredo client", deny: pfx("8.8.8.8/32"), addr: "2001:0:4136:e378:8000:63bf:f7f7:f7f7", refused: true},
		{name: "invalid prefixes ignored", allow: []netip.Prefix{{}}, addr: "127.0.0.1", refused: true},
		// The host's own addresses are refused in every form unless allow-listed; deny still wins.
		{name: "own v4", own: own, addr: "8.8.4.4", refused: true, reasonHas: "own address"},
		{name: "own v4, mapped form", own: own, addr: "::ffff:8.8.4.4", refused: true, reasonHas: "own address"},
		{name: "own v4 listed mapped", own: own, addr: "9.9.9.9", refused: true, reasonHas: "own address"},
		{name: "own v6", own: own, addr: "2001:4860:4860::8844", refused: true, reasonHas: "own address"},
		{name: "own v6 with a zone", own: own, addr: "2001:4860:4860::8844%eth0", refused: true, reasonHas: "own address"},
		{name: "own v4, nat64 form", own: own, addr: "64:ff9b::808:404", refused: true, reasonHas: "own address"},
		{name: "own v4, 6to4 form", own: own, addr: "2002:808:404::", refused: true, reasonHas: "own address"},
		{name: "not own, public", own: own, addr: "8.8.8.8"},
		{name: "not own, public, nat64 form", own: own, addr: "64:ff9b::808:808"},
		{name: "own but allow-listed", own: own, allow: pfx("8.8.4.4/32"), addr: "8.8.4.4"},
		{name: "own, allow-listed and denied", own: own, allow: pfx("8.8.4.0/24"), deny: pfx("8.8.4.4/32"), addr: "8.8.4.4", refused: true, reasonHas: "denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPolicy(tt.allow, tt.deny...)
			if tt.own != nil {
				p = p.WithHostAddrs(tt.own)
			}
			err := p.Check(netip.MustParseAddr(tt.addr))
			if (err != nil) != tt.refused {
				t.Fatalf("Check(%s) = %v, want refused=%v", tt.addr, err, tt.refused)
			}
			if err != nil && !IsRefused(err) {
				t.Fatalf("IsRefused(%v) = false", err)
			}
			var r *RefusedError
			if err != nil && (!errors.As(err, &r) || !strings.Contains(r.Reason, tt.reasonHas)) {
				t.Fatalf("Check(%s) = %v, want a reason with %q", tt.addr, err, tt.reasonHas)
			}
		})
	}
}

// TestNilPolicyHostAddrs: a nil policy given the host's addresses refuses them too.
func TestNilPolicyHostAddrs(t *testing.T) {
	own := func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("8.8.4.4")} }
	if err := (*Policy)(nil).WithHostAddrs(own).Check(netip.MustParseAddr("8.8.4.4")); err == nil {
		t.Error("a nil policy with the host's addresses let one through")
	}
}

// TestInterfaceAddrs: the reader lists this machine's addresses (loopback's at least) and reads
// them again only after refresh.
func TestInterfaceAddrs(t *testing.T) {
	addrs := InterfaceAddrs(time.Hour)
	first := addrs()
	if !slices.Contains(first, netip.MustParseAddr("127.0.0.1")) {
		t.Fatalf("interface addresses %v lack 127.0.0.1", first)
	}
	if second := addrs(); len(second) == 0 || &second[0] != &first[0] {
		t.Error("read again before the refresh")
	}
}
