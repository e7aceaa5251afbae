package blocklist

import (
	"strings"
	"testing"
)

func TestEmbeddedListsParseClean(t *testing.T) {
	tests := []struct {
		name           string
		list           *List
		network, hides int // lower bounds
	}{
		{name: "chats", list: Chats(), network: 60, hides: 60},
		{name: "cookies", list: CookieBanners(), network: 0, hides: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.list.Stats()
			if s.Skipped != 0 {
				t.Fatalf("our own list has %d rules the engine skips: %v", s.Skipped, s.SkipReasons)
			}
			if s.Network < tc.network || s.Hiding < tc.hides {
				t.Fatalf("stats %+v, want at least %d network and %d hiding rules", s, tc.network, tc.hides)
			}
		})
	}
	if Chats() != Chats() || CookieBanners() != CookieBanners() {
		t.Fatal("embedded lists must be parsed once")
	}
}

func TestChats(t *testing.T) {
	const shop = "https://shop.example.com/"
	tests := []struct {
		name string
		url  string
		page string
		typ  string
		want bool
	}{
		{name: "intercom widget", url: "https://widget.intercom.io/widget/abc123", want: true},
		{name: "intercom cdn", url: "https://js.intercomcdn.com/frame-modern.1234.js", want: true},
		{name: "drift", url: "https://js.driftt.com/include/1700000000000/abc.js", want: true},
		{name: "crisp", url: "https://client.crisp.chat/l.js", want: true},
		{name: "tawk.to", url: "https://embed.tawk.to/5f0000000000000000000000/default", want: true},
		{name: "zendesk snippet", url: "https://static.zdassets.com/ekr/snippet.js?key=abc", want: true},
		{name: "zopim", url: "https://v2.zopim.com/?abc", want: true},
		{name: "livechat", url: "https://cdn.livechatinc.com/tracking.js", want: true},
		{name: "hubspot conversations", url: "https://js.usemessages.com/conversations-embed.js", want: true},
		{name: "tidio", url: "https://code.tidio.co/abcdef.js", want: true},
		{name: "olark", url: "https://static.olark.com/jsclient/loader0.js", want: true},
		{name: "freshchat", url: "https://wchat.freshchat.com/js/widget.js", want: true},
		{name: "freshworks loader", url: "https://fw-cdn.com/123456/789.js", want: true},
		{name: "userlike", url: "https://userlike-cdn-widgets.s3-eu-west-1.amazonaws.com/abc.js", want: true},
		{name: "smartsupp", url: "https://www.smartsuppchat.com/loader.js?", want: true},
		{name: "jivochat", url: "https://code.jivosite.com/widget/AbCdEf", want: true},
		{name: "chatra", url: "https://call.chatra.io/chatra.js", want: true},
		{name: "gorgias", url: "https://config.gorgias.chat/bundle-loader/01ABC", want: true},
		{name: "reamaze", url: "https://cdn.reamaze.com/assets/reamaze.js", want: true},
		{name: "help scout beacon", url: "https://beacon-v2.helpscout.net/", want: true},
		{name: "pure chat", url: "https://app.purechat.com/VisitorWidget/WidgetScript", want: true},
		{name: "facebook customer chat", url: "https://connect.facebook.net/en_US/sdk/xfbml.customerchat.js", want: true},
		{name: "intercom websocket", url: "wss://nexus-websocket-a.intercom.io/pubsub/5-abc", typ: "websocket", want: true},
		{name: "facebook sdk is not chat", url: "https://connect.facebook.net/en_US/sdk.js", want: false},
		{name: "zendesk help center assets are not chat", url: "https://static.zdassets.com/hc/assets/application.js", want: false},
		{name: "vendor's own site", url: "https://widget.intercom.io/widget/abc123", page: "https://www.intercom.io/", want: false},
		{name: "ordinary script", url: "https://cdn.jsdelivr.net/npm/vue@3/dist/vue.global.js", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{URL: tc.url, PageURL: shop, ResourceType: "script"}
			if tc.page != "" {
				req.PageURL = tc.page
			}
			if tc.typ != "" {
				req.ResourceType = tc.typ
			}
			if got, rule := Chats().MatchRule(req); got != tc.want {
				t.Fatalf("Chats().Match(%s) = %v (rule %q), want %v", tc.url, got, rule, tc.want)
			}
		})
	}

	css := selectors(Chats().HideCSS("shop.example.com"))
	for _, s := range []string{"#intercom-container", ".intercom-lightweight-app", "#drift-widget-container",
		".crisp-client", "#hubspot-messages-iframe-container", "#tidio-chat", "#olark-wrapper", "#fc_frame",
		"#chat-widget-container", "iframe#webWidget", "#smartsupp-widget-container", "jdiv", "#chatra",
		"#gorgias-chat-container", "#reamaze-widget", "#beacon-container", ".fb-customerchat", "#zsiq_float"} {
		if !css[s] {
			t.Errorf("chat stylesheet lacks %s", s)
		}
	}
}

func TestCookieBanners(t *testing.T) {
	css := CookieBanners().HideCSS("www.example.com")
	got := selectors(css)
	for _, s := range []string{
		"#onetrust-consent-sdk", "#CybotCookiebotDialog", "#qc-cmp2-container", "#didomi-host",
		"#truste-consent-track", "#usercentrics-root", `div[id^="sp_message_container_"]`,
		".osano-cm-window", ".cky-consent-container", "#cmplz-cookiebanner-container",
		"#termly-code-snippet-support", "#iubenda-cs-banner", "#klaro", ".cookiefirst-root",
		"#BorlabsCookieBox", `div[id*="cookie-banner" i]`, `div[class*="cookie-consent" i]`,
		`div[class*="consent-banner" i]`, `div[id*="gdpr-banner" i]`,
	} {
		if !got[s] {
			t.Errorf("cookie stylesheet lacks %s", s)
		}
	}
	// The generic patterns must never reach the root elements, whose classes often say
	// "cookie-consent-open": hiding body would blank the screenshot.
	for s := range got {
		low := strings.ToLower(s)
		if strings.HasPrefix(low, "html") || strings.HasPrefix(low, "body") || strings.HasPrefix(low, "[class") || strings.HasPrefix(low, "[id") {
			t.Errorf("selector %q could hide the root element", s)
		}
	}
	if !strings.HasPrefix(ScrollUnlockCSS(), "html,body{overflow:auto!important}") {
		t.Fatalf("ScrollUnlockCSS() = %q", ScrollUnlockCSS())
	}
	if CookieBanners().Match(Request{URL: "https://cdn.cookielaw.org/scripttemplates/otSDKStub.js", PageURL: "https://www.example.com/", ResourceType: "script"}) {
		t.Fatal("the cookie list hides; it must not block requests")
	}
}
