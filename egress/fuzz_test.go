package egress

import (
	"net"
	"net/netip"
	"testing"
)

// internalByNetIP reports whether the standard library calls ip loopback, private, link-local,
// multicast or unspecified: the policy must refuse at least all of those.
func internalByNetIP(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()
}

// FuzzParseHostLiteral: no panic; every accepted literal that net.ParseIP calls loopback (or
// otherwise internal) is refused by the default policy; every strict literal that net.ParseIP
// accepts is recognised as the same address; an accepted address round-trips.
func FuzzParseHostLiteral(f *testing.F) {
	policy := NewPolicy(nil)
	f.Fuzz(func(t *testing.T, host string) {
		a, ok := ParseHostLiteral(host)
		if strict := net.ParseIP(host); strict != nil {
			if !ok {
				t.Fatalf("ParseHostLiteral(%q) refused a literal that net.ParseIP accepts", host)
			}
			if want, _ := netip.AddrFromSlice(strict.To16()); want.Unmap() != a.Unmap() {
				t.Fatalf("ParseHostLiteral(%q) = %v, net.ParseIP says %v", host, a, strict)
			}
		}
		if !ok {
			return
		}
		if !a.IsValid() {
			t.Fatalf("ParseHostLiteral(%q) accepted an invalid address", host)
		}
		ip := net.ParseIP(a.WithZone("").String())
		if ip == nil {
			t.Fatalf("ParseHostLiteral(%q) = %v, which net.ParseIP cannot read back", host, a)
		}
		if internalByNetIP(ip) && policy.Check(a) == nil {
			t.Fatalf("ParseHostLiteral(%q) = %v is internal but the policy allows it", host, a)
		}
		// Round trip through the URL spelling: brackets, and a zone written as "%25" (RFC 6874).
		s := a.String()
		if a.Is6() {
			s = "[" + a.WithZone("").String() + "]"
			if z := a.Zone(); z != "" {
				s = s[:len(s)-1] + "%25" + z + "]"
			}
		}
		if b, ok := ParseHostLiteral(s); !ok || b != a {
			t.Fatalf("ParseHostLiteral(%q) = %v does not round-trip through %q: %v, %v", host, a, s, b, ok)
		}
	})
}

// FuzzPolicy: no panic on any 16 bytes; an IPv4 address and its mapped, NAT64, 6to4 and Teredo
// forms agree: a refused IPv4 address is refused in every embedding.
func FuzzPolicy(f *testing.F) {
	policy := NewPolicy(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		var raw [16]byte
		copy(raw[:], b)
		a := netip.AddrFrom16(raw)
		err := policy.Check(a)
		if internalByNetIP(net.IP(raw[:])) && err == nil {
			t.Fatalf("Check(%v) allowed an address net.IP calls internal", a)
		}
		_ = policy.Check(a.WithZone("z"))

		v4 := netip.AddrFrom4([4]byte(raw[:4]))
		v4Refused := policy.Check(v4) != nil
		mapped := netip.AddrFrom16(v4.As16())
		if (policy.Check(mapped) != nil) != v4Refused {
			t.Fatalf("%v refused=%v but its mapped form %v disagrees", v4, v4Refused, mapped)
		}
		if !v4Refused {
			return
		}
		four := v4.As4()
		var nat64, sixToFour, teredo [16]byte
		copy(nat64[:], []byte{0, 0x64, 0xff, 0x9b})
		copy(nat64[12:], four[:])
		sixToFour[0], sixToFour[1] = 0x20, 0x02
		copy(sixToFour[2:6], four[:])
		teredo[0], teredo[1] = 0x20, 0x01
		copy(teredo[4:8], []byte{65, 54, 227, 120}) // a public server address
		for i := range 4 {
			teredo[12+i] = ^four[i]
		}
		for name, e := range map[string][16]byte{"nat64": nat64, "6to4": sixToFour, "teredo": teredo} {
			if policy.Check(netip.AddrFrom16(e)) == nil {
				t.Fatalf("%v is refused but its %s form %v is allowed", v4, name, netip.AddrFrom16(e))
			}
		}
	})
}
