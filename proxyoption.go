package shotd

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
	return o.Store || (o.Proxy != nil && (o.Proxy.HasCredentials() || o.Proxy.Sealed != nil)) ||
		o.HasRequestSecrets() || o.SealedRequest != nil
}

// HasRequestSecrets reports whether o sends headers, cookies or authorization with the page's
// requests: any of them may be a credential.
func (o *Options) HasRequestSecrets() bool {
	return len(o.Headers) > 0 || len(o.Cookies) > 0 || o.Authorization != ""
}

// HasCredentials reports whether the option carried user:password.
func (p *UpstreamProxy) HasCredentials() bool { return p.Username != "" || p.Password != "" }
