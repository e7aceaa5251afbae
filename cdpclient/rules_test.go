package cdpclient

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		s       string
		want    bool
	}{
		{"literal", "abc", "abc", true},
		{"literal differs", "abc", "abd", false},
		{"whole string only", "abc", "abcd", false},
		{"star suffix", "ab*", "abcd", true},
		{"star prefix", "*cd", "abcd", true},
		{"star middle", "a*d", "abcd", true},
		{"star empty", "a*b", "ab", true},
		{"two stars", "*b*d*", "abcde", true},
		{"backtrack", "*ab*ab", "xxabyyab", true},
		{"backtrack fails", "*ab*abz", "xxabyyab", false},
		{"only star", "*", "", true},
		{"empty pattern", "", "x", false},
		{"star crosses slash", "a*z", "a/b/c/z", true},
		{"prefix and suffix overlap", "ab*ba", "aba", false},
		{"prefix and suffix touch", "ab*ba", "abba", true},
		{"adjacent stars", "a**b", "ab", true},
		{"piece repeats", "*aa*aa*", "aaa", false},
		{"piece repeats enough", "*aa*aa*", "aaaa", true},
		{"empty string empty pattern", "", "", true},
		{"empty string literal", "a", "", false},
		// Issue 19: the old matcher took len(s) x len(pattern) steps, about 1.7 ns each: some
		// 30 minutes here, past go test's timeout; a linear one takes milliseconds.
		{"long url long pattern", "*" + strings.Repeat("a", 128<<10) + "b*", strings.Repeat("a", 8<<20), false},
		{"many stars", strings.Repeat("*a", 30<<10) + "*b", strings.Repeat("a", 2<<20), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := globMatch(tt.pattern, tt.s); got != tt.want {
				t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

func TestURLPattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		url     string
		want    bool
	}{
		{"whole url", "https://cdn.example.com/*.js", "https://cdn.example.com/a/b.js", true},
		{"whole url other scheme", "https://cdn.example.com/*.js", "http://cdn.example.com/a/b.js", false},
		{"whole url ignores fragment", "https://a.example/x", "https://a.example/x#frag", true},
		{"whole url is anchored", "https://a.example/x", "https://a.example/x?q=1", false},
		{"no scheme with path", "cdn.example.com/ads/*", "https://cdn.example.com/ads/banner.png", true},
		{"no scheme with path, other host", "cdn.example.com/ads/*", "https://example.com/ads/banner.png", false},
		{"any host path", "*/analytics.js*", "http://127.0.0.1:8080/analytics.js?v=2", true},
		{"host exact", "ads.example.com", "https://ads.example.com/x", true},
		{"host exact not subdomain", "ads.example.com", "https://x.ads.example.com/x", false},
		{"host wildcard", "*.doubleclick.net", "https://stats.g.doubleclick.net/r", true},
		{"host wildcard not apex", "*.doubleclick.net", "https://doubleclick.net/r", false},
		{"host pattern ignores path", "*tracker*", "https://example.com/tracker.js", false},
		{"host pattern case", "ADS.example.com", "https://ads.EXAMPLE.com/", true},
		{"host pattern ignores port", "127.0.0.1", "http://127.0.0.1:9000/x", true},
		{"data url never a host", "data", "data:text/plain,hi", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compilePattern(tt.pattern).match(tt.url); got != tt.want {
				t.Errorf("pattern %q on %q = %v, want %v", tt.pattern, tt.url, got, tt.want)
			}
		})
	}
}

func TestHostKey(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string
	}{
		{"http default port", "http://Example.COM/x", "example.com"},
		{"explicit default port", "http://example.com:80/", "example.com"},
		{"https default port", "https://example.com:443/", "example.com"},
		{"https on 80 keeps the port", "https://example.com:80/", "example.com:80"},
		{"other port", "http://127.0.0.1:8080/", "127.0.0.1:8080"},
		{"ipv6", "http://[::1]:9000/", "[::1]:9000"},
		{"no host", "about:blank", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostKey(tt.url); got != tt.want {
				t.Errorf("hostKey(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

func TestScopedHeader(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   bool
	}{
		{"cookie", "Cookie", true},
		{"authorization", "authorization", true},
		{"api key", "X-Api-Key", true},
		{"token", "X-Auth-Token", true},
		{"secret", "X-Client-Secret", true},
		{"key", "Ocp-Apim-Subscription-Key", true},
		// Issue 19: names the old rule (cookie, authorization, key, token, secret, auth, api) missed.
		{"session", "X-Session", true},
		{"session id", "Session-Id", true},
		{"jwt", "X-JWT", true},
		{"password", "X-Password", true},
		{"credential", "X-Amz-Credential", true},
		{"cookie-like", "X-Cookie-Jar", true},
		{"plain", "X-Trace-Id", false},
		{"accept language", "Accept-Language", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := scopedHeader(tt.header); got != tt.want {
				t.Errorf("scopedHeader(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestHeadersFor(t *testing.T) {
	o := &shotd.Options{
		URL:           "http://site.example:8080/page",
		Headers:       []shotd.Header{{Name: "X-Api-Key", Value: "k"}, {Name: "X-Trace", Value: "t"}, {Name: "Cookie", Value: "h=1"}},
		Authorization: "Bearer b",
	}
	rr := newRequestRules(o, nil)
	own, _ := json.Marshal(map[string]string{"Accept": "*/*", "x-trace": "page", "Cookie": "p=2"})
	tests := []struct {
		name string
		url  string
		want map[string]string // "" = absent
	}{
		{"target", "http://site.example:8080/img", map[string]string{
			"X-Api-Key": "k", "X-Trace": "t", "Authorization": "Bearer b", "Cookie": "p=2; h=1", "Accept": "*/*"}},
		{"other port", "http://site.example:9090/img", map[string]string{
			"X-Api-Key": "", "X-Trace": "t", "Authorization": "", "Cookie": "p=2", "Accept": "*/*"}},
		{"other host", "http://cdn.example:8080/img", map[string]string{
			"X-Api-Key": "", "X-Trace": "t", "Authorization": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := rr.headersFor(tt.url, network.Headers(own))
			got := map[string]string{}
			for _, h := range hs {
				if _, dup := got[lower(h.Name)]; dup {
					t.Errorf("header %s twice", h.Name)
				}
				got[lower(h.Name)] = h.Value
			}
			for name, want := range tt.want {
				if g := got[lower(name)]; g != want {
					t.Errorf("%s = %q, want %q", name, g, want)
				}
			}
		})
	}
	if newRequestRules(&shotd.Options{URL: "http://a.example/"}, nil) != nil {
		t.Error("rules for a render without headers or blocking")
	}
	html := newRequestRules(&shotd.Options{HTML: "<p>", Authorization: "x"}, nil)
	if hs := html.headersFor("http://a.example/", nil); hs != nil {
		t.Errorf("html source: scoped headers %v sent to a host", hs)
	}
}

// TestHeadersForScheme: scoped headers follow the target's scheme: an https target's
// credentials never go to its host over http (a redirect down), while an http target's follow a
// redirect up to https, and plain headers go everywhere.
func TestHeadersForScheme(t *testing.T) {
	tests := []struct {
		name, target, url string
		scoped            bool
	}{
		{"https to https", "https://site.example/", "https://site.example/a", true},
		{"https down to http", "https://site.example/", "http://site.example/a", false},
		{"https down to http, explicit port", "https://site.example:443/", "http://site.example:443/a", false},
		{"https to wss", "https://site.example/", "wss://site.example/s", true},
		{"https to ws", "https://site.example/", "ws://site.example/s", false},
		{"http to http", "http://site.example/", "http://site.example/a", true},
		{"http up to https", "http://site.example/", "https://site.example/a", true},
		{"upper-case scheme", "HTTPS://site.example/", "http://site.example/a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := newRequestRules(&shotd.Options{URL: tt.target, Authorization: "Bearer b",
				Headers: []shotd.Header{{Name: "X-Session", Value: "s"}, {Name: "X-Trace", Value: "t"}}}, nil)
			got := map[string]string{}
			for _, h := range rr.headersFor(tt.url, nil) {
				got[lower(h.Name)] = h.Value
			}
			if got["x-trace"] != "t" {
				t.Errorf("plain header missing: %v", got)
			}
			if has := got["authorization"] != "" || got["x-session"] != ""; has != tt.scoped {
				t.Errorf("scoped headers sent = %v, want %v (%v)", has, tt.scoped, got)
			}
		})
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func TestBlocks(t *testing.T) {
	rr := newRequestRules(&shotd.Options{URL: "http://a.example/", BlockResources: []string{"image", "other"},
		BlockRequests: []string{"*/ads/*"}}, recordBlocker{block: "evil.example"})
	tests := []struct {
		name   string
		url    string
		typ    network.ResourceType
		subdoc bool
		want   bool
	}{
		{"image type", "http://a.example/x.png", network.ResourceTypeImage, false, true},
		{"ping counts as other", "http://a.example/p", network.ResourceTypePing, false, true},
		{"script passes", "http://a.example/x.js", network.ResourceTypeScript, false, false},
		{"pattern", "http://a.example/ads/x.js", network.ResourceTypeScript, false, true},
		{"blocker", "http://evil.example/x.js", network.ResourceTypeScript, false, true},
		{"blocker subdocument", "http://evil.example/frame", network.ResourceTypeDocument, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rr.blocks(tt.url, tt.typ, tt.subdoc, "http://a.example/"); got != tt.want {
				t.Errorf("blocks = %v, want %v", got, tt.want)
			}
		})
	}
}

// recordBlocker blocks every URL whose host is block and hides .ad-box.
type recordBlocker struct{ block string }

func (b recordBlocker) Block(rawURL, pageURL, resourceType string) bool {
	return hostKey(rawURL) == b.block
}

func (b recordBlocker) HideCSS(pageURL string) string { return ".ad-box { display: none !important; }" }
