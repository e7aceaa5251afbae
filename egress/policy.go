package egress

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/shotd/shotd"
)

// refusedMessage is the client-safe message of every refusal. It names neither the address nor
// the reason: telling a caller what an internal name resolves to would map the intranet for it.
const refusedMessage = "the target host is private, local or internal"

// RefusedError is the cause of a host_not_allowed error: which address was refused and why. It is
// meant for the log; the client sees only the catalogue message.
type RefusedError struct {
	Host   string     // the host as asked for, when the refusal came from a name or URL
	Addr   netip.Addr // the refused address; invalid when the host itself was refused
	Port   uint16     // non-zero when the port was refused
	Reason string     // for example "loopback", "nat64 of private", "denied port", "denied host name"
}

func (e *RefusedError) Error() string {
	switch {
	case e.Addr.IsValid() && e.Port != 0:
		return fmt.Sprintf("egress: %s refused: %s", netip.AddrPortFrom(e.Addr, e.Port), e.Reason)
	case e.Addr.IsValid() && e.Host != "" && e.Host != e.Addr.String():
		return fmt.Sprintf("egress: host %q (%s) refused: %s", e.Host, e.Addr, e.Reason)
	case e.Addr.IsValid():
		return fmt.Sprintf("egress: %s refused: %s", e.Addr, e.Reason)
	default:
		return fmt.Sprintf("egress: host %q refused: %s", e.Host, e.Reason)
	}
}

// refused builds the catalogue error of a refusal.
func refused(r *RefusedError) *shotd.Error {
	return &shotd.Error{Code: shotd.CodeHostNotAllowed, Message: refusedMessage, Cause: r}
}

// IsRefused reports whether err, or an error it wraps, is a host_not_allowed refusal of the guard.
// A webhook sender uses it to tell a refusal (do not retry) from a network failure.
func IsRefused(err error) bool {
	var e *shotd.Error
	return errors.As(err, &e) && e.Code == shotd.CodeHostNotAllowed
}

// Policy decides which addresses may be contacted. The zero value and a nil *Policy refuse every
// special-purpose address and allow nothing extra. A Policy is immutable and safe for concurrent
// use.
type Policy struct {
	allow []netip.Prefix
	deny  []netip.Prefix
	// hostAddrs lists the addresses of this machine's own interfaces (nil: none known). A public
	// address of the host reaches its own services like loopback does: a page must not dial it.
	hostAddrs func() []netip.Addr
}

// NewPolicy returns a policy that also lets the allow prefixes through (network.allow_private)
// and always refuses the deny prefixes, even where allow covers them. IPv4-mapped prefixes are
// read as their IPv4 form; invalid prefixes are ignored.
func NewPolicy(allow []netip.Prefix, deny ...netip.Prefix) *Policy {
	return &Policy{allow: normalizePrefixes(allow), deny: normalizePrefixes(deny)}
}

// WithHostAddrs returns a copy of p that also refuses the addresses addrs lists, the machine's
// own (InterfaceAddrs), unless an allow prefix covers them. addrs is called at every check and
// must be cheap and safe for concurrent use.
func (p *Policy) WithHostAddrs(addrs func() []netip.Addr) *Policy {
	c := Policy{}
	if p != nil {
		c = *p
	}
	c.hostAddrs = addrs
	return &c
}

func normalizePrefixes(in []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(in))
	for _, p := range in {
		if !p.IsValid() {
			continue
		}
		p = p.Masked()
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	return out
}

// Check returns nil when addr may be contacted and otherwise a *shotd.Error with code
// host_not_allowed whose cause is a *RefusedError. The order is: an invalid address is refused;
// an address (or an IPv4 address embedded in it) inside a deny prefix is refused; an address
// inside an allow prefix is allowed; an address of the host itself (WithHostAddrs) is refused;
// everything special-purpose is refused. An IPv6 zone is
// ignored and an IPv4-mapped address is the IPv4 address it maps.
func (p *Policy) Check(addr netip.Addr) error {
	if reason := p.refusal(addr); reason != "" {
		return refused(&RefusedError{Addr: addr, Reason: reason})
	}
	return nil
}

// refusal returns why addr is refused, or "" when it is allowed.
func (p *Policy) refusal(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	// A zone only picks the interface; netip.Prefix.Contains never matches a zoned address, so
	// strip it before any table lookup. A mapped address is the IPv4 address on the wire.
	a := addr.WithZone("").Unmap()
	if p != nil {
		if containsAny(p.deny, a) {
			return "denied"
		}
		for _, v4 := range embeddedV4(a) {
			if containsAny(p.deny, v4) {
				return "denied"
			}
		}
		if containsAny(p.allow, a) {
			return ""
		}
		if p.isHostAddr(a) {
			return "this host's own address"
		}
	}
	return classify(a)
}

// isHostAddr reports whether a (zone-less, unmapped), or an IPv4 address it carries (NAT64,
// 6to4, Teredo), is one of the host's own addresses.
func (p *Policy) isHostAddr(a netip.Addr) bool {
	if p == nil || p.hostAddrs == nil {
		return false
	}
	own := p.hostAddrs()
	for _, a := range append([]netip.Addr{a}, embeddedV4(a)...) {
		for _, h := range own {
			if h.WithZone("").Unmap() == a {
				return true
			}
		}
	}
	return false
}

func containsAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

type block struct {
	prefix netip.Prefix
	reason string
	// embed, when set, means the block carries IPv4 addresses inside it: the address is refused
	// exactly when one of them is.
	embed func(netip.Addr) []netip.Addr
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// v4Blocks are the IPv4 special-purpose blocks that must never be dialled: the IANA registry's
// entries that are not globally reachable, plus multicast, the reserved 240/4 and the deprecated
// 6to4 relay anycast. More specific entries come first so that the reason is the precise one.
var v4Blocks = append(metadataV4, []block{
	{prefix: mustPrefix("0.0.0.0/8"), reason: "this network"}, // Linux connects 0.0.0.0 to loopback
	{prefix: mustPrefix("10.0.0.0/8"), reason: "private"},
	{prefix: mustPrefix("100.64.0.0/10"), reason: "shared address space (cgnat)"},
	{prefix: mustPrefix("127.0.0.0/8"), reason: "loopback"},
	{prefix: mustPrefix("169.254.0.0/16"), reason: "link-local"}, // holds 169.254.169.254, cloud metadata
	{prefix: mustPrefix("172.16.0.0/12"), reason: "private"},
	{prefix: mustPrefix("192.0.0.0/24"), reason: "ietf protocol assignments"},
	{prefix: mustPrefix("192.0.2.0/24"), reason: "documentation"},
	{prefix: mustPrefix("192.88.99.0/24"), reason: "reserved (6to4 relay anycast)"},
	{prefix: mustPrefix("192.168.0.0/16"), reason: "private"},
	{prefix: mustPrefix("198.18.0.0/15"), reason: "benchmarking"},
	{prefix: mustPrefix("198.51.100.0/24"), reason: "documentation"},
	{prefix: mustPrefix("203.0.113.0/24"), reason: "documentation"},
	{prefix: mustPrefix("224.0.0.0/4"), reason: "multicast"},
	{prefix: mustPrefix("255.255.255.255/32"), reason: "broadcast"},
	{prefix: mustPrefix("240.0.0.0/4"), reason: "reserved"},
}...)

// metadataV4 are the cloud metadata and platform addresses, which answer a virtual machine with
// its credentials or its platform's secrets. Most sit in a block refused anyway; they are listed
// for a precise reason in the log, and the ones outside every private range (Azure's
// WireServer, IBM's service network) are refused only because they are here. An allow_private
// entry still lets one through. Sources:
//   - 169.254.169.254: AWS, GCP, Azure, Oracle, DigitalOcean, Hetzner, OpenStack instance
//     metadata (docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html,
//     cloud.google.com/compute/docs/metadata/querying-metadata,
//     learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
//   - 169.254.170.2: AWS ECS task metadata and credentials
//     (docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html).
//   - 169.254.169.253, 169.254.169.123: AWS VPC DNS and time sync.
//   - 169.254.0.23: Tencent Cloud metadata (cloud.tencent.com/document/product/213/4934).
//   - 169.254.42.42: Scaleway metadata (www.scaleway.com/en/docs/instances/).
//   - 100.100.100.200: Alibaba Cloud metadata (www.alibabacloud.com/help/en/ecs/user-guide/
//     view-instance-metadata).
//   - 192.0.0.192: Oracle Cloud legacy metadata (docs.oracle.com/iaas/Content/Compute/Tasks/
//     gettingmetadata.htm).
//   - 168.63.129.16: Azure WireServer and platform DNS, health probes and the VM agent's
//     channel (learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16).
//   - 161.26.0.0/16: IBM Cloud's service network: DNS, NTP, metadata of classic infrastructure
//     (cloud.ibm.com/docs/vpc?topic=vpc-service-endpoints-for-vpc).
var metadataV4 = []block{
	{prefix: mustPrefix("169.254.169.254/32"), reason: "link-local: cloud metadata"},
	{prefix: mustPrefix("169.254.170.2/32"), reason: "link-local: aws ecs task metadata"},
	{prefix: mustPrefix("169.254.169.253/32"), reason: "link-local: aws vpc dns"},
	{prefix: mustPrefix("169.254.169.123/32"), reason: "link-local: aws time sync"},
	{prefix: mustPrefix("169.254.0.23/32"), reason: "link-local: tencent cloud metadata"},
	{prefix: mustPrefix("169.254.42.42/32"), reason: "link-local: scaleway metadata"},
	{prefix: mustPrefix("100.100.100.200/32"), reason: "shared address space (cgnat): alibaba cloud metadata"},
	{prefix: mustPrefix("192.0.0.192/32"), reason: "ietf protocol assignments: oracle cloud metadata"},
	{prefix: mustPrefix("168.63.129.16/32"), reason: "platform: azure wireserver"},
	{prefix: mustPrefix("161.26.0.0/16"), reason: "platform: ibm cloud service network"},
}

// v6Blocks are the IPv6 special-purpose blocks. Forms that embed an IPv4 address are refused when
// the embedded address is; the deprecated or local-only embeddings are refused outright because no
// public site is reached through them. Anything outside 2000::/3 that is not listed here is
// refused as reserved (see classify).
var v6Blocks = []block{
	{prefix: mustPrefix("::/128"), reason: "unspecified"},
	{prefix: mustPrefix("::1/128"), reason: "loopback"},
	{prefix: mustPrefix("::/96"), reason: "ipv4-compatible"},                        // deprecated by RFC 4291
	{prefix: mustPrefix("::ffff:0:0:0/96"), reason: "ipv4-translated"},              // SIIT, RFC 2765
	{prefix: mustPrefix("64:ff9b::/96"), reason: "nat64", embed: lastV4},            // RFC 6052 well-known
	{prefix: mustPrefix("64:ff9b:1::/48"), reason: "nat64 local-use"},               // RFC 8215, not global
	{prefix: mustPrefix("100::/64"), reason: "discard-only"},                        // RFC 6666
	{prefix: mustPrefix("2001::/32"), reason: "teredo", embed: teredoV4},            // RFC 4380
	{prefix: mustPrefix("2001::/23"), reason: "ietf protocol assignments"},          // benchmarking, ORCHID ...
	{prefix: mustPrefix("2001:db8::/32"), reason: "documentation"},                  // RFC 3849
	{prefix: mustPrefix("2002::/16"), reason: "6to4", embed: sixToFourV4},           // RFC 3056
	{prefix: mustPrefix("3fff::/20"), reason: "documentation"},                      // RFC 9637
	{prefix: mustPrefix("5f00::/16"), reason: "srv6 sids"},                          // RFC 9602, not global
	{prefix: mustPrefix("fd00:ec2::254/128"), reason: "unique-local: aws metadata"}, // IMDS over IPv6
	{prefix: mustPrefix("fd00:ec2::/32"), reason: "unique-local: aws platform"},     // DNS, time sync
	{prefix: mustPrefix("fc00::/7"), reason: "unique-local"},                        // RFC 4193
	{prefix: mustPrefix("fe80::/10"), reason: "link-local"},                         // RFC 4291
	{prefix: mustPrefix("fec0::/10"), reason: "site-local"},                         // deprecated by RFC 3879
	{prefix: mustPrefix("ff00::/8"), reason: "multicast"},                           // RFC 4291
}

// globalUnicast6 is where IANA allocates global IPv6 unicast; the rest is reserved.
var globalUnicast6 = mustPrefix("2000::/3")

// classify returns why a zone-less, unmapped address is refused by the built-in table, or "".
func classify(a netip.Addr) string {
	if a.Is4() {
		for _, b := range v4Blocks {
			if b.prefix.Contains(a) {
				return b.reason
			}
		}
		return ""
	}
	for _, b := range v6Blocks {
		if !b.prefix.Contains(a) {
			continue
		}
		if b.embed == nil {
			return b.reason
		}
		for _, v4 := range b.embed(a) {
			if r := classify(v4); r != "" {
				return b.reason + " of " + r
			}
		}
		return ""
	}
	if !globalUnicast6.Contains(a) {
		return "reserved"
	}
	return ""
}

// embeddedV4 returns the IPv4 addresses that an IPv6 address carries, for the deny check.
func embeddedV4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	for _, b := range v6Blocks {
		if b.prefix.Contains(a) {
			if b.embed != nil {
				return b.embed(a)
			}
			return nil
		}
	}
	return nil
}

// lastV4 is the IPv4 address in the low 32 bits of the NAT64 well-known prefix.
func lastV4(a netip.Addr) []netip.Addr {
	b := a.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))}
}

// sixToFourV4 is the IPv4 address in bits 16-47 of 2002::/16.
func sixToFourV4(a netip.Addr) []netip.Addr {
	b := a.As16()
	return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}
}

// teredoV4 returns the Teredo server (bits 32-63) and the client's public address (the low 32
// bits, stored bit-inverted).
func teredoV4(a netip.Addr) []netip.Addr {
	b := a.As16()
	client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(client)}
}
