package egress

import (
	"net/netip"

	"github.com/shotd/shotd"
)

// ParseHostLiteral reports whether host, the host part of a URL without its port, is an IP
// address in any spelling that browsers accept, and returns the address (shotd.ParseHost says
// which spellings). Names and invalid hosts give false.
func ParseHostLiteral(host string) (netip.Addr, bool) {
	a, _, kind := shotd.ParseHost(host)
	return a, kind == shotd.HostIP
}
