// Package blocklist is shotd's own engine for filter lists in Adblock Plus / uBlock Origin
// syntax (EasyList, EasyPrivacy and the small lists embedded here): it decides per request
// whether the renderer blocks it, and builds the element hiding stylesheet for a page.
//
// Network rules: substrings, `*`, the `^` separator, `|` anchors, `||host` anchors, `@@`
// exceptions, `/regex/` rules (Go RE2; those that do not compile are skipped) and the options
// $third-party / $first-party (1p, 3p), the resource types and their negations, $domain= (with
// `name.*` entities), $match-case, $important, $badfilter, and on exceptions $document,
// $generichide, $specifichide and $elemhide. Rules without type options apply to every
// subresource but not to the top document, as in Adblock Plus; popup-only rules are skipped.
//
// Rules whose option changes what a match does, or depends on what a Request does not carry,
// are skipped whole rather than applied as plain blocks: $csp, $redirect, $redirect-rule,
// $removeparam, $queryprune, $rewrite, $replace, $header, $permissions, $uritransform, $urlskip,
// $method, $to, $denyallow, $cname, $sitekey, $empty, $mp4, $inline-script, $inline-font,
// $webrtc, $genericblock, $strict1p/$strict3p and unknown options. Stats counts them by reason.
//
// Element hiding: `##sel`, `domain##sel`, `~domain##sel`, `name.*##sel` and `#@#` exceptions,
// served by HideCSS as `display:none!important` rules of at most 100 selectors each, so that
// one selector Chrome rejects voids only its own chunk. Procedural, scripted and style rules
// (`#?#`, `#$#`, `#%#`, `##+js(...)`, `##^...`, `sel {style}`, :has-text, :-abp-..., :xpath,
// :upward, :style ...) and selectors with unbalanced brackets or quotes are skipped; native
// CSS such as :has() is kept.
//
// Matching is indexed: `||host...` rules by host (a request looks up its host and each parent
// domain), the others by their rarest whole token, so a request checks a handful of rules, not
// the hundred thousand loaded. A List is immutable once built and safe for concurrent use.
//
// Rules are stored compactly, for an appliance's memory: a list's text is read into one string
// that the rules' strings point into, the rules are one slice of values (their patterns cut at
// `*` while matching, not stored in pieces), and the index is sorted hashes with runs of rule
// numbers. EasyList and EasyPrivacy take about 16 MB of heap (33 MB before). The tests keep the
// matcher as it was, frozen but for the built-in domain lists of domains.go that both share
// (reference_test.go), and compare the two on the whole lists.
//
// EasyList and EasyPrivacy (dual GPLv3 / CC BY-SA 3.0) are not shipped: they are read at run
// time from the operating system's package (DebianEasyList, DebianEasyPrivacy) or a configured
// path. The embedded lists in lists/ (Chats, CookieBanners) are our own work.
//
// block_cookie_banners also answers consent dialogs: LoadAutoconsent wraps DuckDuckGo's
// autoconsent standalone script (MPL-2.0, installed by scripts/install-deps.sh, read at start,
// not shipped) into the start script a Selection hands the renderer (StartScript), set to reject.
package blocklist
