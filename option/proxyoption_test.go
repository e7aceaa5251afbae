package option

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shotd/shotd"
)

// TestProxyOption: proxy is http://[user:password@]host[:port] and nothing else, its bypass list
// holds names, *.domains and IP addresses, and a refusal never quotes the password back.
func TestProxyOption(t *testing.T) {
	const url = "https://a.example/"
	ok := []struct {
		name   string
		ps     Params
		want   shotd.UpstreamProxy
		bypass []string
	}{
		{"with credentials", q("url", url, "proxy", "http://user:pa%3Ass@proxy.example:3128"),
			shotd.UpstreamProxy{Host: "proxy.example:3128", Username: "user", Password: "pa:ss"}, nil},
		{"without credentials, default port", q("url", url, "proxy", "http://proxy.example"),
			shotd.UpstreamProxy{Host: "proxy.example:80"}, nil},
		{"ipv6 literal, trailing slash", q("url", url, "proxy", "HTTP://u:pw-6@[2001:db8::1]:8080/"),
			shotd.UpstreamProxy{Host: "[2001:db8::1]:8080", Username: "u", Password: "pw-6"}, nil},
		{"credentials with async (sealed in the job record)", q("url", url, "async", "true", "proxy", "http://u:topsecret@proxy.example:3128"),
			shotd.UpstreamProxy{Host: "proxy.example:3128", Username: "u", Password: "topsecret"}, nil},
		{"bypass list, repeated and comma-separated", Params{{Name: "url", Values: []string{url}},
			{Name: "proxy_bypass_hosts", Values: []string{"Example.COM", "*.cdn.example, 10.0.0.1", "[::1]"}},
			{Name: "proxy", Values: []string{"http://proxy.example:3128"}}},
			shotd.UpstreamProxy{Host: "proxy.example:3128"}, []string{"example.com", "*.cdn.example", "10.0.0.1", "::1"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			o := mustParse(t, c.ps)
			p := o.Proxy
			if p == nil {
				t.Fatal("no proxy parsed")
			}
			if p.Host != c.want.Host || p.Username != c.want.Username || p.Password != c.want.Password {
				t.Errorf("proxy = %q %q %q, want %q %q %q", p.Host, p.Username.Reveal(), p.Password.Reveal(),
					c.want.Host, c.want.Username.Reveal(), c.want.Password.Reveal())
			}
			if !slices.Equal(p.Bypass, c.bypass) {
				t.Errorf("bypass = %q, want %q", p.Bypass, c.bypass)
			}
			b, _ := json.Marshal(o)
			if s := fmt.Sprintf("%v %+v", o, p) + string(b); c.want.Password != "" && strings.Contains(s, c.want.Password.Reveal()) {
				t.Errorf("the password shows in a printed or marshalled Options: %s", s)
			}
		})
	}

	bad := []struct {
		name, field string
		ps          Params
	}{
		{"https proxy", "proxy", q("url", url, "proxy", "https://u:p@proxy.example:443")},
		{"socks proxy", "proxy", q("url", url, "proxy", "socks5://proxy.example:1080")},
		{"no scheme", "proxy", q("url", url, "proxy", "proxy.example:3128")},
		{"no host", "proxy", q("url", url, "proxy", "http://:3128")},
		{"bad host", "proxy", q("url", url, "proxy", "http://999.1.1.1:3128")},
		{"bad port", "proxy", q("url", url, "proxy", "http://proxy.example:70000")},
		{"empty port", "proxy", q("url", url, "proxy", "http://proxy.example:")},
		{"path", "proxy", q("url", url, "proxy", "http://proxy.example:3128/x")},
		{"query", "proxy", q("url", url, "proxy", "http://proxy.example:3128?a=b")},
		{"password without user", "proxy", q("url", url, "proxy", "http://:topsecret@proxy.example:3128")},
		{"bypass without proxy", "proxy_bypass_hosts", q("url", url, "proxy_bypass_hosts", "example.com")},
		{"bypass with a port", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", "example.com:80")},
		{"bypass with a scheme", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", "http://example.com")},
		{"bypass with a path", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", "example.com/x")},
		{"bypass inner wildcard", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", "a.*.example.com")},
		{"bypass wildcard ip", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", "*.10.0.0.1")},
		{"bypass empty", "proxy_bypass_hosts", q("url", url, "proxy", "http://p.example", "proxy_bypass_hosts", " , ")},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(c.ps, Limits{})
			e := wantCode(t, err, shotd.CodeInvalidOptions, c.field)
			if strings.Contains(fmt.Sprint(e.Message, e.Fields), "topsecret") {
				t.Errorf("the refusal quotes the password: %s %v", e.Message, e.Fields)
			}
		})
	}
	// Without credentials a background job may keep the proxy.
	mustParse(t, q("url", url, "async", "true", "proxy", "http://proxy.example:3128"))
}

// TestFormatJPG: jpg, ScreenshotOne's name, is jpeg: the same Options, so the same file and
// cache key; other spellings stay refused.
func TestFormatJPG(t *testing.T) {
	jpg := mustParse(t, q("url", "https://a.example/", "format", "jpg"))
	jpeg := mustParse(t, q("url", "https://a.example/", "format", "jpeg"))
	if jpg.Format != shotd.FormatJPEG || jpg.ContentType() != "image/jpeg" {
		t.Errorf("format=jpg: %q %q, want jpeg image/jpeg", jpg.Format, jpg.ContentType())
	}
	if jpg.ResponseCacheKey("acct") != jpeg.ResponseCacheKey("acct") {
		t.Error("format=jpg and format=jpeg have different cache keys")
	}
	for _, v := range []string{"JPG", "jpe", "jfif"} {
		_, err := ParseOptions(q("url", "https://a.example/", "format", v), Limits{})
		wantCode(t, err, shotd.CodeInvalidOptions, "format")
	}
}
