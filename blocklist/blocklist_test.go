package blocklist

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/shotd/shotd"
)

func mustParse(t testing.TB, rules string) *List {
	t.Helper()
	l, err := Parse(strings.NewReader(rules), "test")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return l
}

// longDomains is long enough for the map form of a domain list.
const longDomains = "site1.com|site2.com|site3.com|~ok.site3.com|site4.com|site5.com|site6.com|site7.com|site8.com|site9.com|brand.*"

// page is the first-party page most cases load from.
const page = "https://news.example.com/article"

func TestMatch(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		url   string
		page  string // default page; "-" for none
		typ   string // default script
		want  bool
	}{
		// plain substrings and case
		{name: "slashes make a regex", rules: "/banner/", url: "https://x.com/img/banner1.png", want: true},
		{name: "substring path", rules: "/ads/banner.", url: "https://x.com/ads/banner.png", want: true},
		{name: "substring miss", rules: "/ads/banner.", url: "https://x.com/ads/banners.png", want: false},
		{name: "substring in query", rules: "&adslot=", url: "https://x.com/p?id=1&adslot=top", want: true},
		{name: "case-insensitive by default", rules: "/AdServer/", url: "https://x.com/adserver/x.js", want: true},
		{name: "match-case hit", rules: "/AdServer/$match-case", url: "https://x.com/AdServer/x.js", want: true},
		{name: "match-case miss", rules: "/AdServer/$match-case", url: "https://x.com/adserver/x.js", want: false},

		// wildcards
		{name: "wildcard", rules: "/ads/*/pixel.gif", url: "https://x.com/ads/2024/07/pixel.gif", want: true},
		{name: "wildcard order", rules: "/ads/*/pixel.gif", url: "https://x.com/pixel.gif/ads/", want: false},
		{name: "wildcard empty run", rules: "/ads/*pixel", url: "https://x.com/ads/pixel", want: true},
		{name: "leading and trailing stars", rules: "*/track.*", url: "https://x.com/a/track.gif", want: true},

		// separator
		{name: "separator slash", rules: "||x.com^ad^", url: "https://x.com/ad/1", want: true},
		{name: "separator query", rules: "/promo^", url: "https://x.com/promo?id=1", want: true},
		{name: "separator end of url", rules: "/promo^", url: "https://x.com/promo", want: true},
		{name: "separator not a letter", rules: "/promo^", url: "https://x.com/promotion", want: false},
		{name: "separator not dot", rules: "/promo^", url: "https://x.com/promo.js", want: false},
		{name: "separator not percent", rules: "/promo^", url: "https://x.com/promo%20x", want: false},

		// anchors
		{name: "start anchor hit", rules: "|https://ads.", url: "https://ads.x.com/a.js", want: true},
		{name: "start anchor miss", rules: "|https://ads.", url: "https://x.com/?u=https://ads.x.com", want: false},
		{name: "end anchor hit", rules: ".swf|", url: "https://x.com/a.swf", want: true},
		{name: "end anchor miss", rules: ".swf|", url: "https://x.com/a.swf?x=1", want: false},
		{name: "both anchors", rules: "|https://x.com/a.js|", url: "https://x.com/a.js", want: true},
		{name: "both anchors longer", rules: "|https://x.com/a.js|", url: "https://x.com/a.js.map", want: false},

		// host anchors
		{name: "host anchor domain", rules: "||adnet.com^", url: "https://adnet.com/x.js", want: true},
		{name: "host anchor subdomain", rules: "||adnet.com^", url: "https://cdn.eu.adnet.com/x.js", want: true},
		{name: "host anchor with port", rules: "||adnet.com^", url: "https://adnet.com:8443/x.js", want: true},
		{name: "host anchor not suffix of label", rules: "||adnet.com^", url: "https://badadnet.com/x.js", want: false},
		{name: "host anchor not prefix of longer host", rules: "||adnet.com^", url: "https://adnet.com.evil.org/x.js", want: false},
		{name: "host anchor not in path", rules: "||adnet.com^", url: "https://x.com/adnet.com/x.js", want: false},
		{name: "host anchor not in query", rules: "||adnet.com^", url: "https://x.com/r?u=https://adnet.com/", want: false},
		{name: "host anchor with path", rules: "||cdn.com/ads/", url: "https://img.cdn.com/ads/1.png", want: true},
		{name: "host anchor with path miss", rules: "||cdn.com/ads/", url: "https://img.cdn.com/news/1.png", want: false},
		{name: "host anchor partial label", rules: "||ads.", url: "https://ads.foo.com/", want: true},
		{name: "host anchor partial label inner", rules: "||ads.", url: "https://eu.ads.foo.com/", want: true},
		{name: "host anchor partial label miss", rules: "||ads.", url: "https://foo.com/ads.js", want: false},
		{name: "host anchor userinfo", rules: "||adnet.com^", url: "https://user:pw@adnet.com/", want: true},
		{name: "host anchor wildcard", rules: "||adnet.com/*/pixel", url: "https://adnet.com/a/b/pixel", want: true},
		{name: "websocket scheme", rules: "||adnet.com^", url: "wss://adnet.com/socket", typ: "websocket", want: true},
		{name: "data url never matches", rules: "banner", url: "data:image/png;base64,banner", typ: "image", want: false},

		// third-party
		{name: "third-party on other site", rules: "||adnet.com^$third-party", url: "https://adnet.com/x.js", want: true},
		{name: "third-party on own site", rules: "||adnet.com^$third-party", url: "https://adnet.com/x.js", page: "https://www.adnet.com/", want: false},
		{name: "third-party same registrable domain", rules: "||cdn.example.com^$third-party", url: "https://cdn.example.com/x.js", want: false},
		{name: "third-party public suffix", rules: "||b.github.io^$third-party", url: "https://b.github.io/x.js", page: "https://a.github.io/", want: true},
		{name: "third-party co.uk", rules: "||cdn.shop.co.uk^$third-party", url: "https://cdn.shop.co.uk/x.js", page: "https://www.shop.co.uk/", want: false},
		{name: "first-party hit", rules: "/stats.js$~third-party", url: "https://news.example.com/stats.js", want: true},
		{name: "first-party miss", rules: "/stats.js$~third-party", url: "https://other.org/stats.js", want: false},
		{name: "1p alias", rules: "/stats.js$1p", url: "https://example.com/stats.js", want: true},
		{name: "3p alias", rules: "/stats.js$3p", url: "https://example.com/stats.js", want: false},
		{name: "top document is first-party", rules: "||adnet.com^$third-party,document", url: "https://adnet.com/", page: "-", typ: "document", want: false},
		{name: "html source subresource is third-party", rules: "||adnet.com^$third-party", url: "https://adnet.com/x.js", page: "-", want: true},
		{name: "about:blank subresource is third-party", rules: "||adnet.com^$third-party", url: "https://adnet.com/x.js", page: "about:blank", want: true},
		{name: "html source frame", rules: "||adnet.com^$subdocument", url: "https://adnet.com/f.html", page: "about:blank", typ: "document", want: true},

		// types
		{name: "type script hit", rules: "||adnet.com^$script", url: "https://adnet.com/x.js", want: true},
		{name: "type script miss", rules: "||adnet.com^$script", url: "https://adnet.com/x.png", typ: "image", want: false},
		{name: "type image", rules: "||adnet.com^$image", url: "https://adnet.com/x.png", typ: "image", want: true},
		{name: "type xhr from fetch", rules: "||adnet.com^$xmlhttprequest", url: "https://adnet.com/api", typ: "fetch", want: true},
		{name: "type xhr alias", rules: "||adnet.com^$xhr", url: "https://adnet.com/api", typ: "xhr", want: true},
		{name: "type stylesheet", rules: "||adnet.com^$stylesheet", url: "https://adnet.com/a.css", typ: "stylesheet", want: true},
		{name: "type font", rules: "||adnet.com^$font", url: "https://adnet.com/a.woff2", typ: "font", want: true},
		{name: "type media", rules: "||adnet.com^$media", url: "https://adnet.com/a.mp4", typ: "media", want: true},
		{name: "type ping", rules: "||adnet.com^$ping", url: "https://adnet.com/p", typ: "ping", want: true},
		{name: "type websocket", rules: "||adnet.com^$websocket", url: "wss://adnet.com/s", typ: "websocket", want: true},
		{name: "type other from manifest", rules: "||adnet.com^$other", url: "https://adnet.com/m.json", typ: "manifest", want: true},
		{name: "type subdocument is a frame", rules: "||adnet.com^$subdocument", url: "https://adnet.com/frame.html", typ: "document", want: true},
		{name: "type subdocument not the page", rules: "||adnet.com^$subdocument", url: "https://adnet.com/", page: "-", typ: "document", want: false},
		{name: "type list", rules: "||adnet.com^$script,image", url: "https://adnet.com/x.png", typ: "image", want: true},
		{name: "negated type hit", rules: "||adnet.com^$~image", url: "https://adnet.com/x.js", want: true},
		{name: "negated type miss", rules: "||adnet.com^$~image", url: "https://adnet.com/x.png", typ: "image", want: false},
		{name: "negated types", rules: "||adnet.com^$~image,~script", url: "https://adnet.com/x.css", typ: "stylesheet", want: true},
		{name: "no type: not the top document", rules: "||adnet.com^", url: "https://adnet.com/", page: "-", typ: "document", want: false},
		{name: "no type: frames", rules: "||adnet.com^", url: "https://adnet.com/f", typ: "document", want: true},
		{name: "document type blocks the page", rules: "||adnet.com^$document", url: "https://adnet.com/", page: "-", typ: "document", want: true},
		{name: "popup only skipped", rules: "||adnet.com^$popup", url: "https://adnet.com/x.js", want: false},
		{name: "popup with script keeps script", rules: "||adnet.com^$popup,script", url: "https://adnet.com/x.js", want: true},

		// domain option
		{name: "domain hit", rules: "/ad.js$domain=example.com", url: "https://cdn.org/ad.js", want: true},
		{name: "domain subdomain of page", rules: "/ad.js$domain=example.com", url: "https://cdn.org/ad.js", page: "https://a.b.example.com/", want: true},
		{name: "domain miss", rules: "/ad.js$domain=example.com", url: "https://cdn.org/ad.js", page: "https://example.org/", want: false},
		{name: "domain list", rules: "/ad.js$domain=a.com|example.com", url: "https://cdn.org/ad.js", want: true},
		{name: "domain excluded", rules: "/ad.js$domain=~example.com", url: "https://cdn.org/ad.js", want: false},
		{name: "domain excluded elsewhere", rules: "/ad.js$domain=~example.com", url: "https://cdn.org/ad.js", page: "https://b.com/", want: true},
		{name: "domain most specific wins", rules: "/ad.js$domain=example.com|~news.example.com", url: "https://cdn.org/ad.js", want: false},
		{name: "domain most specific wins 2", rules: "/ad.js$domain=example.com|~news.example.com", url: "https://cdn.org/ad.js", page: "https://shop.example.com/", want: true},
		{name: "domain entity", rules: "/ad.js$domain=example.*", url: "https://cdn.org/ad.js", page: "https://www.example.co.uk/", want: true},
		{name: "domain entity miss", rules: "/ad.js$domain=example.*", url: "https://cdn.org/ad.js", page: "https://example.notasuffix.com/", want: false},
		{name: "domain needs a page", rules: "/ad.js$domain=example.com", url: "https://cdn.org/ad.js", page: "-", want: false},
		{name: "domain of the top document is its own", rules: "||example.com^$document,domain=example.com", url: "https://example.com/", page: "-", typ: "document", want: true},

		{name: "long domain list hit", rules: "/ad.js$domain=" + longDomains, url: "https://cdn.org/ad.js", page: "https://www.site7.com/", want: true},
		{name: "long domain list entity", rules: "/ad.js$domain=" + longDomains, url: "https://cdn.org/ad.js", page: "https://brand.de/", want: true},
		{name: "long domain list excluded subdomain", rules: "/ad.js$domain=" + longDomains, url: "https://cdn.org/ad.js", page: "https://ok.site3.com/", want: false},
		{name: "long domain list miss", rules: "/ad.js$domain=" + longDomains, url: "https://cdn.org/ad.js", page: "https://site77.com/", want: false},
		{name: "long negated list", rules: "/ad.js$domain=~a1.com|~a2.com|~a3.com|~a4.com|~a5.com|~a6.com|~a7.com|~a8.com|~brand.*", url: "https://cdn.org/ad.js", page: "https://x.a5.com/", want: false},
		{name: "long negated list elsewhere", rules: "/ad.js$domain=~a1.com|~a2.com|~a3.com|~a4.com|~a5.com|~a6.com|~a7.com|~a8.com|~brand.*", url: "https://cdn.org/ad.js", page: "https://a9.com/", want: true},
		{name: "long negated list entity", rules: "/ad.js$domain=~a1.com|~a2.com|~a3.com|~a4.com|~a5.com|~a6.com|~a7.com|~a8.com|~brand.*", url: "https://cdn.org/ad.js", page: "https://brand.co.uk/", want: false},

		// exceptions
		{name: "exception wins", rules: "||adnet.com^\n@@||adnet.com/ok/", url: "https://adnet.com/ok/x.js", want: false},
		{name: "exception elsewhere", rules: "||adnet.com^\n@@||adnet.com/ok/", url: "https://adnet.com/bad/x.js", want: true},
		{name: "exception by type", rules: "||adnet.com^\n@@||adnet.com^$image", url: "https://adnet.com/x.png", typ: "image", want: false},
		{name: "exception of another type", rules: "||adnet.com^\n@@||adnet.com^$image", url: "https://adnet.com/x.js", want: true},
		{name: "exception by domain", rules: "||adnet.com^\n@@||adnet.com^$domain=example.com", url: "https://adnet.com/x.js", want: false},
		{name: "exception alone blocks nothing", rules: "@@||adnet.com^", url: "https://adnet.com/x.js", want: false},
		{name: "important beats exception", rules: "||adnet.com^$important\n@@||adnet.com^", url: "https://adnet.com/x.js", want: true},
		{name: "document exception allows the page", rules: "||adnet.com^\n@@||example.com^$document", url: "https://adnet.com/x.js", want: false},
		{name: "document exception on another page", rules: "||adnet.com^\n@@||example.org^$document", url: "https://adnet.com/x.js", want: true},
		{name: "generichide exception does not except requests", rules: "||adnet.com^\n@@||adnet.com^$generichide", url: "https://adnet.com/x.js", want: true},
		{name: "badfilter disables", rules: "||adnet.com^$third-party\n||adnet.com^$third-party,badfilter", url: "https://adnet.com/x.js", want: false},
		{name: "badfilter needs same options", rules: "||adnet.com^$script\n||adnet.com^$third-party,badfilter", url: "https://adnet.com/x.js", want: true},

		// regex
		{name: "regex hit", rules: `/\/ad[0-9]+\.js$/`, url: "https://x.com/ad123.js", want: true},
		{name: "regex miss", rules: `/\/ad[0-9]+\.js$/`, url: "https://x.com/ad123.js?v=1", want: false},
		{name: "regex case-insensitive", rules: `/\/ADS\/[a-z]+\//`, url: "https://x.com/ads/top/1", want: true},
		{name: "regex match-case", rules: `/\/ADS\/[a-z]+\//$match-case`, url: "https://x.com/ads/top/1", want: false},
		{name: "regex with options", rules: `/^https?:\/\/[a-z]{8}\.com\/[0-9]+\.js/$script,third-party`, url: "https://abcdefgh.com/12.js", want: true},
		{name: "regex options type miss", rules: `/^https?:\/\/[a-z]{8}\.com\/[0-9]+\.js/$script,third-party`, url: "https://abcdefgh.com/12.js", typ: "image", want: false},
		{name: "regex lookahead skipped", rules: `/ad(?!min)/`, url: "https://x.com/ad.js", want: false},
		{name: "regex token prefilter", rules: `/\.amazonaws\.com\/[a-f0-9]{8}\//`, url: "https://s3.amazonaws.com/deadbeef/x", want: true},

		// unsupported options are skipped, never applied as plain blocks
		{name: "csp skipped", rules: "||adnet.com^$csp=script-src 'none'", url: "https://adnet.com/x.js", want: false},
		{name: "redirect skipped", rules: "||adnet.com/x.js$script,redirect=noop.js", url: "https://adnet.com/x.js", want: false},
		{name: "removeparam skipped", rules: "$removeparam=utm_source", url: "https://x.com/?utm_source=a", want: false},
		{name: "method skipped", rules: "||adnet.com^$xhr,method=post", url: "https://adnet.com/api", typ: "xhr", want: false},
		{name: "unknown option skipped", rules: "||adnet.com^$frobnicate", url: "https://adnet.com/x.js", want: false},

		// comments and cosmetic lines are not network rules
		{name: "comment", rules: "! ||adnet.com^", url: "https://adnet.com/x.js", want: false},
		{name: "cosmetic is not network", rules: "adnet.com##.ad", url: "https://adnet.com/x.js", want: false},
		{name: "fragment in network rule", rules: "||adnet.com/#ad", url: "https://adnet.com/#ad", want: true},
		{name: "regex-domain cosmetic is not network", rules: `/adnet\.com/##.ad`, url: "https://adnet.com/x.js", want: false},
		{name: "bare host anchor matches nothing", rules: "||", url: "https://adnet.com/x.js", want: false},
		{name: "bare wildcard matches nothing", rules: "*", url: "https://adnet.com/x.js", want: false},
		{name: "wildcard with options", rules: "*$script,domain=example.com", url: "https://adnet.com/x.js", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := mustParse(t, tc.rules)
			req := Request{URL: tc.url, PageURL: page, ResourceType: "script"}
			if tc.page == "-" {
				req.PageURL = ""
			} else if tc.page != "" {
				req.PageURL = tc.page
			}
			if tc.typ != "" {
				req.ResourceType = tc.typ
			}
			got, rule := l.MatchRule(req)
			if got != tc.want {
				t.Fatalf("Match(%+v) = %v (rule %q), want %v; stats %+v", req, got, rule, tc.want, l.Stats())
			}
		})
	}
}

func TestParseStats(t *testing.T) {
	l := mustParse(t, strings.Join([]string{
		"[Adblock Plus 2.0]",
		"! comment",
		"",
		"||ads.com^",
		"/banner/*/img^",
		"@@||ads.com/ok^",
		"@@||site.com^$generichide",
		"##.ad",
		"site.com##.promo",
		"site.com#@#.ad",
		"||ads.com^$csp=default-src 'none'",
		"||ads.com^$redirect=noop.js",
		"||ads.com^$popup",
		"site.com#?#.x:-abp-has(.y)",
		"site.com##+js(set, x, 1)",
		"site.com#$#abort-on-property-read x",
		"##.a:has-text(Sponsored)",
		"##.ok:has(> .ad)",
		`/(?<=x)ad/`,
		"##.broken[",
		"site.com##.x {height:0 !important;}",
	}, "\n"))
	s := l.Stats()
	want := Stats{Network: 2, Exceptions: 2, Hiding: 3, HidingExceptions: 1, Skipped: 10}
	if s.Network != want.Network || s.Exceptions != want.Exceptions || s.Hiding != want.Hiding ||
		s.HidingExceptions != want.HidingExceptions || s.Skipped != want.Skipped {
		t.Fatalf("stats = %+v, want %+v", s, want)
	}
	for _, reason := range []string{
		"unsupported option $csp", "unsupported option $redirect", "popup only",
		"procedural cosmetic (#?#)", "scriptlet (##+js)", "snippet or CSS injection (#$#)",
		"procedural cosmetic", "regex RE2 cannot compile", "malformed cosmetic",
		"CSS injection (sel {style})",
	} {
		if s.SkipReasons[reason] != 1 {
			t.Errorf("skip reason %q = %d, want 1 (all: %v)", reason, s.SkipReasons[reason], s.SkipReasons)
		}
	}
	if s.Loaded() != 8 {
		t.Errorf("Loaded() = %d, want 8", s.Loaded())
	}
	if len(s.Lists) != 1 || s.Lists[0] != "test" {
		t.Errorf("Lists = %v", s.Lists)
	}
}

func TestParseReadError(t *testing.T) {
	_, err := Parse(iotest.ErrReader(errors.New("disk on fire")), "broken")
	if shotd.CodeOf(err) != shotd.CodeInternalError {
		t.Fatalf("err = %v, want an internal_error", err)
	}
	if _, err := LoadFiles(t.TempDir() + "/missing.txt"); shotd.CodeOf(err) != shotd.CodeInternalError {
		t.Fatalf("LoadFiles(missing) err = %v, want an internal_error", err)
	}
}

func TestLoadFilesAndMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := dir+"/a.txt", dir+"/b.txt"
	writeFile(t, a, "||ads.com^\n##.ad\n")
	writeFile(t, b, "@@||ads.com/ok^\n||track.com^$third-party\n")
	l, err := LoadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(mustParse(t, "||ads.com^\n##.ad\n"), nil, mustParse(t, "@@||ads.com/ok^\n||track.com^$third-party\n"))
	for _, list := range []*List{l, m} {
		tests := []struct {
			name string
			url  string
			want bool
		}{
			{name: "first file", url: "https://ads.com/x.js", want: true},
			{name: "exception from second file", url: "https://ads.com/ok/x.js", want: false},
			{name: "second file", url: "https://track.com/p.gif", want: true},
			{name: "neither", url: "https://example.org/app.js", want: false},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if got := list.Match(Request{URL: tc.url, PageURL: page, ResourceType: "script"}); got != tc.want {
					t.Fatalf("Match(%s) = %v, want %v", tc.url, got, tc.want)
				}
			})
		}
		if s := list.Stats(); s.Network != 2 || s.Exceptions != 1 || s.Hiding != 1 {
			t.Errorf("stats = %+v", s)
		}
	}
}

func TestMergeKeepsIndexAndBadfilter(t *testing.T) {
	a := mustParse(t, "/ads/banner.\n||tracker.com^$third-party\n")
	b := mustParse(t, "||tracker.com^$third-party,badfilter\n@@/ads/banner.$domain=ok.com\n")
	m := Merge(a, b)
	mm := Merge(m, mustParse(t, "##.x"))
	tests := []struct {
		name string
		list *List
		req  Request
		want bool
	}{
		{name: "token rule in the first list", list: a, req: Request{URL: "https://x.com/ads/banner.png", PageURL: page, ResourceType: "image"}, want: true},
		{name: "token rule after merge", list: m, req: Request{URL: "https://x.com/ads/banner.png", PageURL: page, ResourceType: "image"}, want: true},
		{name: "token rule after a second merge", list: mm, req: Request{URL: "https://x.com/ads/banner.png", PageURL: page, ResourceType: "image"}, want: true},
		{name: "exception from the other list", list: m, req: Request{URL: "https://x.com/ads/banner.png", PageURL: "https://ok.com/", ResourceType: "image"}, want: false},
		{name: "badfilter from the other list", list: m, req: Request{URL: "https://tracker.com/p.gif", PageURL: page, ResourceType: "image"}, want: false},
		{name: "first list unchanged by the merge", list: a, req: Request{URL: "https://tracker.com/p.gif", PageURL: page, ResourceType: "image"}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, rule := tc.list.MatchRule(tc.req); got != tc.want {
				t.Fatalf("Match(%s) = %v (rule %q), want %v", tc.req.URL, got, rule, tc.want)
			}
		})
	}
	if s := mm.Stats(); s.SkipReasons["disabled by $badfilter"] != 1 || s.Network != 1 || s.Exceptions != 1 || s.Hiding != 1 {
		t.Fatalf("merged stats = %+v", s)
	}
}

func TestNilList(t *testing.T) {
	var l *List
	if l.Match(Request{URL: "https://ads.com/", ResourceType: "script"}) || l.HideCSS("a.com") != "" {
		t.Fatal("nil list must block and hide nothing")
	}
	if s := l.Stats(); s.Loaded() != 0 {
		t.Fatalf("nil stats = %+v", s)
	}
}

func TestLongLine(t *testing.T) {
	long := "||" + strings.Repeat("a", 2<<20) + ".com^"
	l := mustParse(t, long+"\n||ads.com^\n")
	if !l.Match(Request{URL: "https://ads.com/x", PageURL: page, ResourceType: "script"}) {
		t.Fatal("a rule after a 2 MiB line was lost")
	}
}

func TestConcurrentMatch(t *testing.T) {
	l := mustParse(t, "||ads.com^$third-party\n/banner/*.gif\n##.ad\nexample.com##.promo")
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			ok := true
			for j := 0; j < 500; j++ {
				ok = ok && l.Match(Request{URL: "https://ads.com/x.js", PageURL: page, ResourceType: "script"})
				ok = ok && strings.Contains(l.HideCSS("www.example.com"), ".promo")
			}
			done <- ok
		}()
	}
	for i := 0; i < 8; i++ {
		if !<-done {
			t.Fatal("a concurrent match went wrong")
		}
	}
}
