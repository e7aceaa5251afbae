package blocklist

import (
	"os"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// selectors lists the selectors of a HideCSS stylesheet.
func selectors(css string) map[string]bool {
	out := map[string]bool{}
	for _, rule := range strings.Split(css, "\n") {
		body, ok := strings.CutSuffix(rule, "{display:none!important}")
		if !ok {
			continue
		}
		for _, s := range strings.Split(body, ",") {
			out[s] = true
		}
	}
	return out
}

func TestHideCSS(t *testing.T) {
	rules := strings.Join([]string{
		"##.ad-banner",
		"###sponsored",
		"example.com##.promo",
		"example.com,other.org##.both",
		"example.com,~shop.example.com##.not-shop",
		"~example.com##.generic-but-example",
		"example.*##.entity",
		"#@#.globally-off",
		"##.globally-off",
		"news.example.com#@#.ad-banner",
		"other.org#@#.promo",
		"example.com##.ok:has(> img)",
		"example.com##.bad:has-text(Ad)",
		"example.com##+js(nobab)",
		"quiet.org,example.com##.mixed",
		"@@||nogeneric.net^$generichide",
		"nogeneric.net##.site-only",
		"@@||nospecific.net^$specifichide",
		"nospecific.net##.site-only",
		"@@||nothing.net^$elemhide",
		"nothing.net##.site-only",
		"@@||allowed.net^$document",
	}, "\n")
	l := mustParse(t, rules)
	tests := []struct {
		name      string
		host      string
		want, not []string
	}{
		{name: "generic only", host: "unrelated.io", want: []string{".ad-banner", "#sponsored", ".generic-but-example"}, not: []string{".promo", ".both", ".globally-off", ".entity"}},
		{name: "no host", host: "", want: []string{".ad-banner", ".generic-but-example"}, not: []string{".promo"}},
		{name: "site specific", host: "example.com", want: []string{".ad-banner", ".promo", ".both", ".not-shop", ".entity", ".ok:has(> img)", ".mixed"}, not: []string{".generic-but-example", ".bad:has-text(Ad)"}},
		{name: "subdomain inherits", host: "www.example.com", want: []string{".promo", ".not-shop"}},
		{name: "subdomain excluded", host: "shop.example.com", want: []string{".promo"}, not: []string{".not-shop"}},
		{name: "site exception of generic", host: "news.example.com", want: []string{"#sponsored", ".promo"}, not: []string{".ad-banner"}},
		{name: "site exception of specific", host: "other.org", want: []string{".both"}, not: []string{".promo"}},
		{name: "entity under another suffix", host: "www.example.co.uk", want: []string{".entity"}, not: []string{".promo"}},
		{name: "host with port and upper case", host: "WWW.Example.com:8080", want: []string{".promo"}},
		{name: "url instead of host", host: "https://example.com/page", want: []string{".promo"}},
		{name: "generichide", host: "nogeneric.net", want: []string{".site-only"}, not: []string{".ad-banner"}},
		{name: "specifichide", host: "nospecific.net", want: []string{".ad-banner"}, not: []string{".site-only"}},
		{name: "elemhide", host: "nothing.net", not: []string{".ad-banner", ".site-only"}},
		{name: "document exception", host: "www.allowed.net", not: []string{".ad-banner"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			css := l.HideCSS(tc.host)
			got := selectors(css)
			for _, s := range tc.want {
				if !got[s] {
					t.Errorf("HideCSS(%q) lacks %q; has %v", tc.host, s, got)
				}
			}
			for _, s := range tc.not {
				if got[s] {
					t.Errorf("HideCSS(%q) has %q", tc.host, s)
				}
			}
		})
	}
}

func TestHideCSSChunks(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 250; i++ {
		b.WriteString("##.g" + itoa(i) + "\n")
	}
	for i := 0; i < 120; i++ {
		b.WriteString("site.com##.s" + itoa(i) + "\n")
	}
	l := mustParse(t, b.String())
	tests := []struct {
		name  string
		host  string
		rules int
		sels  int
	}{
		{name: "generic", host: "x.com", rules: 3, sels: 250},
		{name: "generic and site", host: "site.com", rules: 5, sels: 370},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			css := l.HideCSS(tc.host)
			lines := strings.Split(strings.TrimSpace(css), "\n")
			if len(lines) != tc.rules {
				t.Fatalf("%d CSS rules, want %d", len(lines), tc.rules)
			}
			for _, line := range lines {
				if !strings.HasSuffix(line, "{display:none!important}") {
					t.Fatalf("rule %q is not a hiding rule", line)
				}
				if n := strings.Count(line, ",") + 1; n > chunkSize {
					t.Fatalf("a rule holds %d selectors", n)
				}
			}
			if n := len(selectors(css)); n != tc.sels {
				t.Fatalf("%d selectors, want %d", n, tc.sels)
			}
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestBalancedSelector(t *testing.T) {
	tests := []struct {
		name string
		sel  string
		want bool
	}{
		{name: "class", sel: ".ad", want: true},
		{name: "attribute", sel: `div[id^="ad-"]`, want: true},
		{name: "bracket in quotes", sel: `a[href*="]"]`, want: true},
		{name: "has", sel: `div:has(> a[href*="x"])`, want: true},
		{name: "unclosed bracket", sel: `div[id="x"`, want: false},
		{name: "unclosed quote", sel: `div[id="x]`, want: false},
		{name: "brace injection", sel: `.a{} body{display:none}`, want: false},
		{name: "comment", sel: `.a /* x */`, want: false},
		{name: "mismatched", sel: `div:not(.a]`, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := balancedSelector(tc.sel); got != tc.want {
				t.Fatalf("balancedSelector(%q) = %v, want %v", tc.sel, got, tc.want)
			}
		})
	}
}
