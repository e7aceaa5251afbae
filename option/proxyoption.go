package option

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/urlhost"
)

// checkProxy validates the proxy option: http://[user:password@]host[:port], nothing more. The
// value is never quoted back: it may hold a password.
func checkProxy(v string) string {
	_, msg := parseProxy(v)
	return msg
}

// parseProxy reads a proxy option checked or not, returning what is wrong with it.
func parseProxy(v string) (*shotd.UpstreamProxy, string) {
	i := strings.Index(v, "://")
	if i <= 0 {
		return nil, "must be an http://[user:password@]host:port address"
	}
	if scheme := strings.ToLower(v[:i]); scheme != "http" {
		return nil, "scheme " + strconv.Quote(clip(scheme)) + " is not supported: only http:// proxies are (their connections to https sites are CONNECT tunnels)"
	}
	u, err := url.Parse(v)
	if err != nil {
		return nil, "is not a valid address"
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, "must be only http://[user:password@]host:port, without a path or query"
	}
	if msg := urlhost.Check(u.Hostname()); msg != "" {
		return nil, msg
	}
	port := u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return nil, "has an invalid port"
		}
		port = "80"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, "has an invalid port"
	}
	p := &shotd.UpstreamProxy{Host: net.JoinHostPort(u.Hostname(), port)}
	if u.User != nil {
		pass, _ := u.User.Password()
		if u.User.Username() == "" {
			return nil, "has a password without a user name"
		}
		p.Username, p.Password = shotd.Secret(u.User.Username()), shotd.Secret(pass)
	}
	return p, ""
}

// checkBypassHosts validates one proxy_bypass_hosts value, which may list several hosts
// separated by commas.
func checkBypassHosts(v string) string {
	hosts := splitBypass(v)
	if len(hosts) == 0 {
		return "must not be empty"
	}
	for _, h := range hosts {
		if bypassHost(h) == "" {
			return "each host must be a name (*.example.com for a domain and its subdomains) or an IP address, without a scheme, port or path"
		}
	}
	return ""
}

// bypassHost returns the canonical form of one bypass host (a lower-case name, "*." and a name,
// or an IP address as netip prints it), or "" when it is none of these.
func bypassHost(h string) string {
	name, wildcard := strings.CutPrefix(h, "*.")
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")); err == nil && !wildcard {
		return a.Unmap().String()
	}
	if strings.ContainsAny(name, "/:*?[]@\\ ") {
		return ""
	}
	a, canon, kind := urlhost.Parse(name)
	switch {
	case kind == urlhost.IP && !wildcard:
		return a.Unmap().String()
	case kind == urlhost.Name && wildcard:
		return "*." + canon
	case kind == urlhost.Name:
		return canon
	}
	return ""
}

// splitBypass splits one proxy_bypass_hosts value into lower-case hosts.
func splitBypass(v string) []string {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), "."); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// checkProxyOptions completes the proxy option with its bypass list (from checkRefinements).
func checkProxyOptions(o *draft) {
	if p := o.Proxy; p != nil {
		p.Bypass = o.proxyBypass
	}
}

// proxyOptionSpecs are the rows of proxy and proxy_bypass_hosts.
func proxyOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		str("Network", "proxy", "", "Your HTTP proxy, http://user:password@host:port, that the render's connections leave through. Only http:// proxies; https sites go through CONNECT tunnels. The egress guard still checks every host the page asks for, and the proxy's own address (resolved once); the proxy is asked for the address checked, not the name. The credentials are never logged; a background job keeps them sealed.",
			func(o *draft, v string) { o.Proxy, _ = parseProxy(v) }).checked(checkProxy),
		list("Network", "proxy_bypass_hosts", ArrayRepeat, "Hosts reached directly rather than through proxy (still through the egress guard): names, *.example.com for a domain and its subdomains, IP addresses; repeated or comma-separated.",
			func(o *draft, v []string) {
				for _, it := range v {
					for _, h := range splitBypass(it) {
						o.proxyBypass = append(o.proxyBypass, bypassHost(h))
					}
				}
			}).checked(checkBypassHosts),
	}
}
