package urlhost

import (
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Kind is what a URL host turned out to be.
type Kind int

const (
	Invalid Kind = iota // no browser would load it: bad brackets, bad IPv4, forbidden bytes
	IP                  // an IP literal in any spelling
	Name                // a domain name, to be resolved
)

// whatwgIDNA maps a non-ASCII host the way the WHATWG "domain to ASCII" step does (UTS #46,
// non-transitional, no STD3 rules, no hyphen checks). It matters here because the mapping turns
// full-width digits and dots into ASCII ones, so "１２７．０．０．１" is an IPv4 literal.
var whatwgIDNA = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.VerifyDNSLength(false),
)

// Parse classifies host, the host part of a URL without its port, as a browser's URL parser
// does, and returns either the address or the ASCII, lower-case name. It follows the WHATWG URL
// host parser: percent-decoding, IDNA mapping (full-width digits), then the IPv4 parser when the
// last label is a number, which accepts a single 32-bit integer (2130706433), octal (0177.0.0.1)
// and hex (0x7f.1) parts, short forms (127.1, 127.0.1) and a trailing dot; a host whose last
// label is a number and which is no valid IPv4 address is invalid. IPv6 may be bracketed or not
// and may carry a zone ("[fe80::1%25eth0]", "fe80::1%eth0"); the zone is kept in the address.
// The option parser and the egress guard both use it, so they never disagree on a host.
func Parse(host string) (netip.Addr, string, Kind) {
	if host == "" {
		return netip.Addr{}, "", Invalid
	}
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return netip.Addr{}, "", Invalid
		}
		return parseIPv6(host[1 : len(host)-1])
	}
	if strings.IndexByte(host, ']') >= 0 {
		return netip.Addr{}, "", Invalid
	}
	if strings.IndexByte(host, ':') >= 0 {
		// Only IPv6 has a colon; url.URL.Hostname() hands it over without brackets.
		return parseIPv6(host)
	}
	s := percentDecode(host)
	if !utf8.ValidString(s) {
		return netip.Addr{}, "", Invalid
	}
	if isASCII(s) {
		s = strings.ToLower(s)
	} else {
		var err error
		if s, err = whatwgIDNA.ToASCII(s); err != nil {
			return netip.Addr{}, "", Invalid
		}
		s = strings.ToLower(s)
	}
	if s == "" || hasForbiddenDomainByte(s) {
		return netip.Addr{}, "", Invalid
	}
	if endsInNumber(s) {
		// A browser never resolves such a host: either it is an IPv4 literal or the URL is bad.
		if a, ok := parseIPv4(s); ok {
			return a, "", IP
		}
		return netip.Addr{}, "", Invalid
	}
	return netip.Addr{}, s, Name
}

// parseIPv6 parses the inside of brackets. RFC 6874 writes the zone separator as "%25".
func parseIPv6(s string) (netip.Addr, string, Kind) {
	if i := strings.Index(s, "%25"); i >= 0 {
		s = s[:i] + "%" + s[i+3:]
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || strings.Trim(a.Zone(), zoneChars) != "" {
		return netip.Addr{}, "", Invalid
	}
	return a, "", IP
}

// zoneChars are the RFC 3986 unreserved characters, all an interface name needs in a URL.
// EndsInNumber reports whether host, percent-decoded and in ASCII, has a number for its last
// label: a host the IPv4 parser reads, so that an invalid one is an invalid IPv4 address.
func EndsInNumber(host string) bool {
	s := strings.ToLower(percentDecode(host))
	return isASCII(s) && endsInNumber(s)
}

const zoneChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// percentDecode decodes %XX sequences and keeps malformed ones as they are, like the WHATWG
// percent-decode of a host.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// hasForbiddenDomainByte reports a WHATWG forbidden domain code point: such a host fails to parse
// in a browser, and it must not reach a resolver either.
func hasForbiddenDomainByte(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c == 0x7f || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0 {
			return true
		}
	}
	return false
}

// endsInNumber is the WHATWG "ends in a number" checker: it decides that a host is meant as IPv4.
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 is the WHATWG IPv4 parser.
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1] // one trailing dot is allowed
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(nums) - 1
	for _, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	// The last part fills all the bytes the earlier parts left: 127.1 is 127.0.0.1.
	if nums[last] >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := nums[last]
	for i, n := range nums[:last] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Number is the WHATWG IPv4 number parser: "0x" starts hex, a leading "0" octal, and an
// empty rest after the prefix is zero. Values saturate above 2^32, which every caller refuses.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		radix, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		radix, s = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= radix {
			return 0, false
		}
		if v <= 1<<33 {
			v = v*radix + d
		}
	}
	if v > 1<<33 {
		v = 1<<33 + 1
	}
	return v, true
}
