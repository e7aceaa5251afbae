package egress

import (
	"net/url"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/urlhost"
	"github.com/shotd/shotd/option"
)

// agreeURLs are urls on both sides of every line the parser and the guard draw.
var agreeURLs = []string{
	"http://8.8.8.8/", "https://example.com/", "HTTP://EXAMPLE.COM/", "http://127.1/", "http://0x7f.1/",
	"http://2130706433/", "http://0177.0.0.1/", "http://127.0.0.1./", "http://[::1]/", "http://[fe80::1%25eth0]/",
	"http://１２７．０．０．１/", "http://é.example/", "http://xn--a/", "http://a..b/", "http://a_b.example/",
	"http://foo.1e/", "http://a.0x1g/", "http://%C3%A9.example/", "http://localhost:8080/",
	"http://999.1.1.1/", "http://1.2.3.256/", "http://256.0.0.1/", "http://1.2.3.4.5/", "http://4294967296/",
	"http://a.123/", "http://a.123./", "http://a.09/", "http://a.0x/", "http://é.0/", "http://a\u3002123/",
	"http://[fe80::1%25e$th0]/", "http://[::1/", "http://[zz]/", "http:///x", "http://x:0/", "http://x:99999/",
	"example.com", "ftp://x/", "http:x", "http:/x", " http://x/", "javascript:alert(1)", "//x/",
}

// checkAgreement holds what httpd relies on: option.ParseOptions, which runs first, refuses every
// url the guard calls malformed (invalid_url) or of a wrong scheme (invalid_options), with the same
// code; so a url that parses never reaches the guard's own refusal of a malformed url.
func checkAgreement(t *testing.T, g *Guard, raw string) {
	t.Helper()
	_, perr := option.ParseOptions(option.Params{{Name: "url", Values: []string{raw}}}, option.Limits{})
	gerr := g.CheckURLLiteral(raw)
	pc, gc := codeOrEmpty(perr), codeOrEmpty(gerr)
	if (gc == shotd.CodeInvalidURL || gc == shotd.CodeInvalidOptions) && pc != gc {
		t.Fatalf("%q: the guard answers %v, the parser %v", raw, gerr, perr)
	}
	// On the host alone the two agree both ways (the parser refuses more than the host, such as
	// user:password, so its other refusals are left out).
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Port() != "" || !urlhost.HasHTTPScheme(raw) {
		return
	}
	_, _, kind := urlhost.Parse(u.Hostname())
	if (kind == urlhost.Invalid) != (pc == shotd.CodeInvalidURL) {
		t.Fatalf("%q: the guard calls host %q %v, the parser answers %v", raw, u.Hostname(), kind, perr)
	}
}

func TestParseOptionsAgreesWithGuard(t *testing.T) {
	g := NewGuard(NewPolicy(nil), nil) // CheckURLLiteral resolves nothing
	for _, raw := range agreeURLs {
		t.Run(raw, func(t *testing.T) { checkAgreement(t, g, raw) })
	}
}

func FuzzParseOptionsAgreesWithGuard(f *testing.F) {
	for _, raw := range agreeURLs {
		f.Add(raw)
	}
	g := NewGuard(NewPolicy(nil), nil)
	f.Fuzz(func(t *testing.T, raw string) { checkAgreement(t, g, raw) })
}
