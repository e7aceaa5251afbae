package shotd

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// UpstreamProxy is the proxy option: an HTTP proxy of the user's that a render's connections
// leave through, past the egress guard, and the hosts that go around it (proxy_bypass_hosts).
// The credentials are Secrets: they print and marshal as [redacted], so that neither a log line
// nor a job record holds them.
type UpstreamProxy struct {
	Host string // host:port, the port always given (80 when the option left it out)
	// The credentials are never marshalled: a job record keeps them in Sealed, encrypted with
	// the key that also seals storage credentials (objstore.Sealer).
	Username Secret   `json:"-"`
	Password Secret   `json:"-"`
	Sealed   []byte   `json:",omitempty"`
	Bypass   []string // host names (lower case, "*.example.com" for a domain and its subdomains) and IP literals
}

// HasSecrets reports whether o carries credentials that a job record must keep sealed: the
// storage credentials of store=true, a proxy's, and the request's headers, cookies and
// authorization.
func (o *Options) HasSecrets() bool {
	return o.Store || (o.S1.Proxy != nil && (o.S1.Proxy.HasCredentials() || o.S1.Proxy.Sealed != nil)) ||
		o.HasRequestSecrets() || o.SealedRequest != nil
}

// HasRequestSecrets reports whether o sends headers, cookies or authorization with the page's
// requests: any of them may be a credential.
func (o *Options) HasRequestSecrets() bool {
	return len(o.Headers) > 0 || len(o.Cookies) > 0 || o.Authorization != ""
}

// HasCredentials reports whether the option carried user:password.
func (p *UpstreamProxy) HasCredentials() bool { return p.Username != "" || p.Password != "" }

// checkProxy validates the proxy option: http://[user:password@]host[:port], nothing more. The
// value is never quoted back: it may hold a password.
func checkProxy(v string) string {
	_, msg := parseProxy(v)
	return msg
}

// parseProxy reads a proxy option checked or not, returning what is wrong with it.
func parseProxy(v string) (*UpstreamProxy, string) {
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
	if msg := checkHost(u.Hostname()); msg != "" {
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
	p := &UpstreamProxy{Host: net.JoinHostPort(u.Hostname(), port)}
	if u.User != nil {
		pass, _ := u.User.Password()
		if u.User.Username() == "" {
			return nil, "has a password without a user name"
		}
		p.Username, p.Password = Secret(u.User.Username()), Secret(pass)
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
	a, canon, kind := ParseHost(name)
	switch {
	case kind == HostIP && !wildcard:
		return a.Unmap().String()
	case kind == HostName && wildcard:
		return "*." + canon
	case kind == HostName:
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

// checkProxyOptions completes the proxy option with its bypass list (from checkS1Options).
func checkProxyOptions(o *Options) {
	if p := o.S1.Proxy; p != nil {
		p.Bypass = o.S1.proxyBypass
	}
}
