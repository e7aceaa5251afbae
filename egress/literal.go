package egress

import (
	"net/netip"

	"github.com/shotd/shotd/internal/urlhost"
)

// ParseHostLiteral reports whether host, the host part of a URL without its port, is an IP
// address in any spelling that browsers accept, and returns the address (urlhost.Parse says
// which spellings). Names and invalid hosts give false.
func ParseHostLiteral(host string) (netip.Addr, bool) {
	a, _, kind := urlhost.Parse(host)
	return a, kind == urlhost.IP
}
