package blocklist

import (
	"strings"
	"testing"
)

func TestSelection(t *testing.T) {
	ads, _ := Parse(strings.NewReader("||ads.example^\nexample.com##.ad-slot\n"), "ads")
	trackers, _ := Parse(strings.NewReader("||track.example^\n"), "trackers")
	lib := &Library{Ads: ads, Trackers: trackers, Chats: Chats(), Cookies: CookieBanners()}
	if lib.Select(false, false, false, false) != nil {
		t.Fatal("no option must select nothing")
	}
	cases := []struct {
		name                          string
		ads, trackers, cookies, chats bool
		url                           string
		block                         bool
		css                           string
		noCSS                         string
	}{
		{name: "ads only blocks ads", ads: true, url: "https://ads.example/x.js", block: true, css: ".ad-slot"},
		{name: "ads only lets trackers through", ads: true, url: "https://track.example/t.js", block: false},
		{name: "trackers only", trackers: true, url: "https://track.example/t.js", block: true, noCSS: ".ad-slot"},
		{name: "cookies unlock scrolling", cookies: true, url: "https://cdn.example/app.js", block: false, css: "overflow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := lib.Select(c.ads, c.trackers, c.cookies, c.chats)
			if got := s.Block(c.url, "https://example.com/", "script"); got != c.block {
				t.Fatalf("Block = %v, want %v", got, c.block)
			}
			css := s.HideCSS("https://example.com/page")
			if c.css != "" && !strings.Contains(css, c.css) {
				t.Fatalf("HideCSS lacks %q", c.css)
			}
			if c.noCSS != "" && strings.Contains(css, c.noCSS) {
				t.Fatalf("HideCSS has %q", c.noCSS)
			}
		})
	}
}
