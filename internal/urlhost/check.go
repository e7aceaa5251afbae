package urlhost

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// HasHTTPScheme reports whether raw is an http:// or https:// address as far as its scheme goes:
// the line between a wrong or missing scheme (invalid_options) and a malformed http(s) address
// (invalid_url), which the egress guard draws where it checks a url too.
func HasHTTPScheme(raw string) bool {
	msg, schemeOK := CheckHTTPURL(raw)
	return msg == "" || schemeOK
}

// CheckHTTPURL checks a full http or https address: "" when it is one, else what is wrong, worded
// to follow the option's name. schemeOK tells whether the scheme was right, so that a malformed
// http(s) address can be told from a wrong or missing scheme.
func CheckHTTPURL(raw string) (msg string, schemeOK bool) {
	if strings.TrimSpace(raw) != raw || raw == "" {
		return "must be a full http:// or https:// address without surrounding spaces", false
	}
	i := strings.Index(raw, "://")
	if i <= 0 {
		return "must start with http:// or https://", false
	}
	scheme := strings.ToLower(raw[:i])
	if scheme != "http" && scheme != "https" {
		return fmt.Sprintf("scheme %q is not allowed; use http or https", scheme), false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "is not a valid address", true
	}
	if u.Host == "" || u.Hostname() == "" {
		return "has no host", true
	}
	if u.User != nil {
		return "must not carry user:password credentials; use the authorization option", true
	}
	if msg := Check(u.Hostname()); msg != "" {
		return msg, true
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has an invalid port", true
		}
	}
	return "", true
}

// Check returns what is wrong with host, a URL's host without its port as url.URL.Hostname
// gives it, or "" when a browser would accept it (Parse).
func Check(host string) string {
	if host == "" {
		return "has no host"
	}
	if _, _, kind := Parse(host); kind != Invalid {
		return ""
	}
	switch {
	case strings.IndexByte(host, ':') >= 0:
		return "has an invalid IPv6 address"
	case EndsInNumber(host):
		return fmt.Sprintf("has an invalid host: %q ends in a number, so it must be an IPv4 address, and it is not one", clip(host))
	}
	return "has an invalid host"
}

// clip shortens a host quoted back in a message.
func clip(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
