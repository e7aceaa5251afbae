package blocklist

import (
	"net/url"
	"strings"
)

// Library holds every list the service can apply, loaded once at start: EasyList for block_ads,
// EasyPrivacy for block_trackers, and the embedded chat-widget and cookie-banner lists.
type Library struct {
	Ads      *List
	Trackers *List
	Chats    *List
	Cookies  *List
	// Consent is the script block_cookie_banners runs in every document before the page's own
	// (LoadAutoconsent); "" for none: banners are then hidden only. Set it before serving.
	Consent string
}

// NewLibrary loads EasyList and EasyPrivacy from their paths (Debian's by default) and takes the
// embedded lists. A missing EasyList or EasyPrivacy file is an error: an operator who asked for
// blocking must not get a service that silently blocks nothing.
func NewLibrary(easyList, easyPrivacy string) (*Library, error) {
	ads, err := LoadFiles(easyList)
	if err != nil {
		return nil, err
	}
	trackers, err := LoadFiles(easyPrivacy)
	if err != nil {
		return nil, err
	}
	return &Library{Ads: ads, Trackers: trackers, Chats: Chats(), Cookies: CookieBanners()}, nil
}

// Selection is the set of lists one render applies; it implements cdpclient's Blocker.
type Selection struct {
	network []*List // lists whose network rules block requests
	hiding  []*List // lists whose element-hiding rules apply
	cookies bool    // also undo the scroll lock consent dialogs leave behind
	start   string  // the consent script for every document; "" for none
}

// Select returns the lists for a render's block_* options, or nil when it asks for none.
func (lib *Library) Select(ads, trackers, cookies, chats bool) *Selection {
	if lib == nil || !(ads || trackers || cookies || chats) {
		return nil
	}
	s := &Selection{cookies: cookies}
	if cookies {
		s.start = lib.Consent
	}
	add := func(on bool, l *List) {
		if on && l != nil {
			s.network = append(s.network, l)
			s.hiding = append(s.hiding, l)
		}
	}
	add(ads, lib.Ads)
	add(trackers, lib.Trackers)
	add(chats, lib.Chats)
	add(cookies, lib.Cookies)
	return s
}

// Block reports whether any selected list blocks the request. Frames arrive as "subdocument".
func (s *Selection) Block(rawURL, pageURL, resourceType string) bool {
	if pageURL == "" {
		pageURL = "about:blank" // an html source: everything it loads is third-party
	}
	req := Request{URL: rawURL, PageURL: pageURL, ResourceType: resourceType}
	for _, l := range s.network {
		if l.Match(req) {
			return true
		}
	}
	return false
}

// HideCSS returns the element-hiding stylesheet of every selected list for the page.
func (s *Selection) HideCSS(pageURL string) string {
	host := ""
	if u, err := url.Parse(pageURL); err == nil {
		host = u.Hostname()
	}
	var b strings.Builder
	for _, l := range s.hiding {
		b.WriteString(l.HideCSS(host))
	}
	if s.cookies {
		b.WriteString(ScrollUnlockCSS())
	}
	return b.String()
}

// StartScript is the consent-dialog script of block_cookie_banners ("" for none); cdpclient puts
// it into every document before the page's scripts, and waits for it before the capture.
func (s *Selection) StartScript() string {
	return s.start
}
