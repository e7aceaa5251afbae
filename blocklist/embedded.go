package blocklist

import (
	_ "embed"
	"strings"
	"sync"
)

// Where Debian's package webext-ublock-origin-chromium installs EasyList and EasyPrivacy; it is
// updated with the operating system. The lists are not ours to ship: they are read from here (or
// wherever the operator points) at start.
const (
	DebianEasyList    = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt"
	DebianEasyPrivacy = "/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easyprivacy.txt"
)

//go:embed lists/chats.txt
var chatsTxt string

//go:embed lists/cookies.txt
var cookiesTxt string

var (
	chatsOnce, cookiesOnce sync.Once
	chatsList, cookiesList *List
)

// Chats is our embedded list for block_chats: the script hosts of the common live-chat widgets
// (network rules, third-party only) and `##` rules for their containers. Parsed once.
func Chats() *List {
	chatsOnce.Do(func() { chatsList = mustParseEmbedded(chatsTxt, "chats.txt") })
	return chatsList
}

// CookieBanners is our embedded list for block_cookie_banners: `##` rules for the dialogs of
// the common consent platforms and generic banner containers. Parsed once. Pair its HideCSS
// with ScrollUnlockCSS.
func CookieBanners() *List {
	cookiesOnce.Do(func() { cookiesList = mustParseEmbedded(cookiesTxt, "cookies.txt") })
	return cookiesList
}

// ScrollUnlockCSS undoes the scroll lock that consent dialogs put on the page while they are
// open, which stays after the dialog is hidden and would cut a full-page capture.
func ScrollUnlockCSS() string {
	return "html,body{overflow:auto!important}\n"
}

func mustParseEmbedded(src, name string) *List {
	l, err := Parse(strings.NewReader(src), name)
	if err != nil {
		panic("blocklist: embedded " + name + ": " + err.Error()) // a strings.Reader cannot fail
	}
	return l
}
