package blocklist

import (
	"os"
	"sync"
	"testing"
	"time"
)

const (
	easyList    = DebianEasyList
	easyPrivacy = DebianEasyPrivacy
)

func haveDebianLists(tb testing.TB) {
	tb.Helper()
	for _, p := range []string{easyList, easyPrivacy} {
		if _, err := os.Stat(p); err != nil {
			tb.Skipf("%s not installed (package webext-ublock-origin-chromium): %v", p, err)
		}
	}
}

var (
	realOnce                     sync.Once
	realAds, realTrack, realBoth *List
	realErr                      error
)

// realLists loads the Debian lists once for the tests and benchmarks of the package.
func realLists(tb testing.TB) (ads, track, both *List) {
	tb.Helper()
	haveDebianLists(tb)
	realOnce.Do(func() {
		if realAds, realErr = LoadFiles(easyList); realErr != nil {
			return
		}
		if realTrack, realErr = LoadFiles(easyPrivacy); realErr != nil {
			return
		}
		realBoth, realErr = LoadFiles(easyList, easyPrivacy)
	})
	if realErr != nil {
		tb.Fatal(realErr)
	}
	return realAds, realTrack, realBoth
}

func TestDebianLists(t *testing.T) {
	ads, track, both := realLists(t)
	const news = "https://www.theguardian.example/world/article"
	tests := []struct {
		name string
		list *List
		req  Request
		want bool
	}{
		{name: "adsbygoogle script", list: ads, req: Request{URL: "https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "doubleclick ad frame", list: ads, req: Request{URL: "https://securepubads.g.doubleclick.net/gampad/ads?iu=/1234/top&sz=728x90", PageURL: news, ResourceType: "xhr"}, want: true},
		{name: "gpt script", list: ads, req: Request{URL: "https://securepubads.g.doubleclick.net/tag/js/gpt.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "amazon-adsystem", list: ads, req: Request{URL: "https://c.amazon-adsystem.com/aax2/apstag.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "google-analytics by easyprivacy", list: track, req: Request{URL: "https://www.google-analytics.com/analytics.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "gtag by easyprivacy", list: track, req: Request{URL: "https://www.googletagmanager.com/gtag/js?id=G-ABC123", PageURL: news, ResourceType: "script"}, want: true},
		{name: "hotjar by easyprivacy", list: track, req: Request{URL: "https://static.hotjar.com/c/hotjar-123456.js?sv=6", PageURL: news, ResourceType: "script"}, want: true},
		{name: "facebook pixel by easyprivacy", list: track, req: Request{URL: "https://connect.facebook.net/en_US/fbevents.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "google-analytics not an ad", list: ads, req: Request{URL: "https://www.google-analytics.com/analytics.js", PageURL: news, ResourceType: "script"}, want: false},
		{name: "both lists merged", list: both, req: Request{URL: "https://www.google-analytics.com/analytics.js", PageURL: news, ResourceType: "script"}, want: true},
		{name: "bootstrap on jsdelivr", list: both, req: Request{URL: "https://cdn.jsdelivr.net/npm/bootstrap/dist/css/bootstrap.min.css", PageURL: news, ResourceType: "stylesheet"}, want: false},
		{name: "first-party app script", list: both, req: Request{URL: "https://example.com/app.js", PageURL: "https://example.com/", ResourceType: "script"}, want: false},
		{name: "the page itself", list: both, req: Request{URL: "https://example.com/", ResourceType: "document"}, want: false},
		{name: "jquery on code.jquery.com", list: both, req: Request{URL: "https://code.jquery.com/jquery-3.7.1.min.js", PageURL: news, ResourceType: "script"}, want: false},
		{name: "google fonts", list: both, req: Request{URL: "https://fonts.gstatic.com/s/roboto/v30/KFOmCnqEu92Fr1Mu4mxK.woff2", PageURL: news, ResourceType: "font"}, want: false},
		{name: "wikipedia image", list: both, req: Request{URL: "https://upload.wikimedia.org/wikipedia/commons/thumb/a/a9/Example.jpg/320px-Example.jpg", PageURL: "https://en.wikipedia.org/wiki/Example", ResourceType: "image"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, rule := tc.list.MatchRule(tc.req)
			if got != tc.want {
				t.Fatalf("Match(%s as %s) = %v (rule %q), want %v", tc.req.URL, tc.req.ResourceType, got, rule, tc.want)
			}
		})
	}

	s := both.Stats()
	if s.Network < 60000 || s.Hiding < 10000 {
		t.Fatalf("too few rules loaded: %+v", s)
	}
	t.Logf("easylist+easyprivacy: network %d, exceptions %d, hiding %d, hiding exceptions %d, skipped %d",
		s.Network, s.Exceptions, s.Hiding, s.HidingExceptions, s.Skipped)
	t.Logf("skip reasons: %v", s.SkipReasons)

	css := ads.HideCSS("www.example.com")
	if n := len(selectors(css)); n < 5000 {
		t.Fatalf("generic hiding holds only %d selectors", n)
	}
	t.Logf("generic stylesheet: %d bytes", len(css))
}

// TestDebianListsLoadTime keeps parsing both lists well under a second.
func TestDebianListsLoadTime(t *testing.T) {
	haveDebianLists(t)
	if testing.Short() || raceEnabled || cpuTime() == 0 {
		t.Skip("timing is meaningless under -race or -short")
	}
	// CPU time, not wall time: the machine is shared and its load would make wall time flaky.
	start, cpu := time.Now(), cpuTime()
	if _, err := LoadFiles(easyList, easyPrivacy); err != nil {
		t.Fatal(err)
	}
	wall, used := time.Since(start), cpuTime()-cpu
	if used > time.Second {
		t.Fatalf("loading both lists took %v of CPU (%v wall)", used, wall)
	}
	t.Logf("loaded both lists in %v of CPU (%v wall)", used, wall)
}

// benchRequests is a mix of what a news page loads: ads, trackers, CDN assets and its own files.
var benchRequests = []Request{
	{URL: "https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js?client=ca-pub-1234567890", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://securepubads.g.doubleclick.net/gampad/ads?pvsid=123&correlator=456&output=ldjh&impl=fifs&iu_parts=1234,news,top&sz=728x90", PageURL: benchPage, ResourceType: "xhr"},
	{URL: "https://www.google-analytics.com/g/collect?v=2&tid=G-ABC123&cid=555.666&en=page_view", PageURL: benchPage, ResourceType: "ping"},
	{URL: "https://www.googletagmanager.com/gtm.js?id=GTM-ABCDEF", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://static.hotjar.com/c/hotjar-123456.js?sv=6", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://connect.facebook.net/en_US/fbevents.js", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://c.amazon-adsystem.com/aax2/apstag.js", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://cdn.taboola.com/libtrc/publisher/loader.js", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/css/bootstrap.min.css", PageURL: benchPage, ResourceType: "stylesheet"},
	{URL: "https://cdnjs.cloudflare.com/ajax/libs/jquery/3.7.1/jquery.min.js", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://fonts.googleapis.com/css2?family=Roboto:wght@400;700&display=swap", PageURL: benchPage, ResourceType: "stylesheet"},
	{URL: "https://fonts.gstatic.com/s/roboto/v30/KFOmCnqEu92Fr1Mu4mxK.woff2", PageURL: benchPage, ResourceType: "font"},
	{URL: "https://news.example.com/static/js/main.4f3c2a1b.chunk.js", PageURL: benchPage, ResourceType: "script"},
	{URL: "https://news.example.com/static/css/site.css?v=20240611", PageURL: benchPage, ResourceType: "stylesheet"},
	{URL: "https://images.example-cdn.com/photos/2024/06/11/rally-crowd-1200x800.jpg?w=1200&q=80", PageURL: benchPage, ResourceType: "image"},
	{URL: "https://news.example.com/api/v2/comments?article=12345&page=2", PageURL: benchPage, ResourceType: "fetch"},
	{URL: "https://i.ytimg.com/vi/dQw4w9WgXcQ/hqdefault.jpg", PageURL: benchPage, ResourceType: "image"},
	{URL: "https://www.youtube.com/embed/dQw4w9WgXcQ?rel=0", PageURL: benchPage, ResourceType: "document"},
	{URL: "https://upload.wikimedia.org/wikipedia/commons/thumb/a/a9/Example.jpg/320px-Example.jpg", PageURL: benchPage, ResourceType: "image"},
	{URL: "https://news.example.com/", ResourceType: "document"},
}

const benchPage = "https://news.example.com/world/2024/06/11/some-long-article-slug"

func BenchmarkMatch(b *testing.B) {
	_, _, both := realLists(b)
	b.ReportAllocs()
	blocked := 0
	cpu := cpuTime()
	for i := 0; b.Loop(); i++ {
		if both.Match(benchRequests[i%len(benchRequests)]) {
			blocked++
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(blocked)/float64(b.N), "blocked/op")
}

func BenchmarkLoad(b *testing.B) {
	haveDebianLists(b)
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := LoadFiles(easyList, easyPrivacy); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

func BenchmarkHideCSS(b *testing.B) {
	ads, _, _ := realLists(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = ads.HideCSS("www.example.com")
	}
}
