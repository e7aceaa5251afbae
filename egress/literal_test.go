package egress

import (
	"github.com/shotd/shotd/internal/urlhost"
	"net/netip"
	"testing"
)

func TestParseHostLiteral(t *testing.T) {
	tests := []struct {
		name string
		host string
		want string // "" = not a literal
		kind urlhost.Kind
	}{
		{name: "dotted decimal", host: "127.0.0.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "trailing dot", host: "127.0.0.1.", want: "127.0.0.1", kind: urlhost.IP},
		{name: "single integer", host: "2130706433", want: "127.0.0.1", kind: urlhost.IP},
		{name: "single integer canary", host: "2130706435", want: "127.0.0.3", kind: urlhost.IP},
		{name: "single integer max", host: "4294967295", want: "255.255.255.255", kind: urlhost.IP},
		{name: "single hex", host: "0x7f000001", want: "127.0.0.1", kind: urlhost.IP},
		{name: "single octal", host: "017700000001", want: "127.0.0.1", kind: urlhost.IP},
		{name: "octal parts", host: "0177.0.0.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "octal with many zeros", host: "0000000177.0.0.01", want: "127.0.0.1", kind: urlhost.IP},
		{name: "hex parts", host: "0x7f.0x0.0x0.0x1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "hex upper", host: "0X7F.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "hex short", host: "0x7f.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "hex canary", host: "0x7f.0.0.3", want: "127.0.0.3", kind: urlhost.IP},
		{name: "empty hex is zero", host: "0x.0x.0x.0x", want: "0.0.0.0", kind: urlhost.IP},
		{name: "short 127.1", host: "127.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "short 127.0.1", host: "127.0.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "short with big last", host: "127.65535", want: "127.0.255.255", kind: urlhost.IP},
		{name: "mixed radixes", host: "0x7f.0.00.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "metadata integer", host: "2852039166", want: "169.254.169.254", kind: urlhost.IP},
		{name: "zero", host: "0", want: "0.0.0.0", kind: urlhost.IP},
		{name: "upper case letters", host: "0XA9.0XFE.0XA9.0XFE", want: "169.254.169.254", kind: urlhost.IP},
		{name: "percent-encoded digits", host: "%31%32%37.0.0.1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "full-width digits and dots", host: "１２７．０．０．１", want: "127.0.0.1", kind: urlhost.IP},
		{name: "ideographic full stop", host: "127。0。0。1", want: "127.0.0.1", kind: urlhost.IP},
		{name: "bracketed v6", host: "[::1]", want: "::1", kind: urlhost.IP},
		{name: "bare v6", host: "::1", want: "::1", kind: urlhost.IP},
		{name: "bracketed mapped", host: "[::ffff:127.0.0.1]", want: "::ffff:127.0.0.1", kind: urlhost.IP},
		{name: "bracketed mapped hex", host: "[::ffff:7f00:1]", want: "::ffff:127.0.0.1", kind: urlhost.IP},
		{name: "upper case v6", host: "[FE80::1]", want: "fe80::1", kind: urlhost.IP},
		{name: "zone rfc 6874", host: "[fe80::1%25eth0]", want: "fe80::1%eth0", kind: urlhost.IP},
		{name: "zone bare", host: "fe80::1%eth0", want: "fe80::1%eth0", kind: urlhost.IP},
		{name: "zone bracketed raw", host: "[fe80::1%eth0]", want: "fe80::1%eth0", kind: urlhost.IP},
		{name: "zone with odd characters", host: "[fe80::1%25a]b]", kind: urlhost.Invalid},
		{name: "empty zone", host: "[fe80::1%25]", kind: urlhost.Invalid},
		{name: "nat64", host: "[64:ff9b::7f00:1]", want: "64:ff9b::7f00:1", kind: urlhost.IP},
		// names
		{name: "name", host: "example.com", kind: urlhost.Name},
		{name: "name upper", host: "EXAMPLE.com", kind: urlhost.Name},
		{name: "name with digits", host: "1.2.3.example", kind: urlhost.Name},
		{name: "name trailing dot", host: "example.com.", kind: urlhost.Name},
		{name: "localhost", host: "localhost", kind: urlhost.Name},
		{name: "hex-looking label not last", host: "0x7f.example", kind: urlhost.Name},
		{name: "last label like hex but not", host: "1.2.3.0xg", kind: urlhost.Name},
		{name: "idn name", host: "bücher.example", kind: urlhost.Name},
		// invalid: ends in a number but is not IPv4, or malformed
		{name: "five parts", host: "1.2.3.4.5", kind: urlhost.Invalid},
		{name: "part over 255", host: "256.1.1.1", kind: urlhost.Invalid},
		{name: "last too big for short", host: "127.16777216", kind: urlhost.Invalid},
		{name: "integer over 32 bits", host: "4294967296", kind: urlhost.Invalid},
		{name: "hex over 32 bits", host: "0x100000000", kind: urlhost.Invalid},
		{name: "huge number", host: "99999999999999999999999999999", kind: urlhost.Invalid},
		{name: "bad octal", host: "09.0.0.1", kind: urlhost.Invalid},
		{name: "empty part", host: "127..1", kind: urlhost.Invalid},
		{name: "name ending in number", host: "example.123", kind: urlhost.Invalid},
		{name: "two trailing dots is a name (WHATWG)", host: "127.0.0.1..", kind: urlhost.Name},
		{name: "empty", host: "", kind: urlhost.Invalid},
		{name: "just a dot is a name (WHATWG)", host: ".", kind: urlhost.Name},
		{name: "unclosed bracket", host: "[::1", kind: urlhost.Invalid},
		{name: "v4 in brackets", host: "[127.0.0.1]", kind: urlhost.Invalid},
		{name: "bad v6", host: "[::1::2]", kind: urlhost.Invalid},
		{name: "with port", host: "127.0.0.1:80", kind: urlhost.Invalid},
		{name: "space", host: "127.0.0.1 x", kind: urlhost.Invalid},
		{name: "percent-encoded space", host: "127.0.0.1%20", kind: urlhost.Invalid},
		{name: "at sign", host: "a@127.0.0.1", kind: urlhost.Invalid},
		{name: "invalid utf-8", host: "\xff.1", kind: urlhost.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseHostLiteral(tt.host)
			if ok != (tt.kind == urlhost.IP) {
				t.Fatalf("ParseHostLiteral(%q) = %v, %v; want ok=%v", tt.host, got, ok, tt.kind == urlhost.IP)
			}
			if ok && got != netip.MustParseAddr(tt.want) {
				t.Fatalf("ParseHostLiteral(%q) = %v, want %v", tt.host, got, tt.want)
			}
			if _, _, kind := urlhost.Parse(tt.host); kind != tt.kind {
				t.Fatalf("urlhost.Parse(%q) kind = %v, want %v", tt.host, kind, tt.kind)
			}
		})
	}
}
