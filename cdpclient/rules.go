package cdpclient

import (
	"encoding/json"
	"net"
	"net/url"
	"strings"

	"github.com/mafredri/cdp/protocol/fetch"
	"github.com/mafredri/cdp/protocol/network"

	"github.com/shotd/shotd"
)

// requestRules is what the interceptor applies to each request of a render beyond the egress
// guard: blocking (block_resources, block_requests, the Blocker) and the extra headers (headers,
// authorization). nil when the render has none of them, so that a plain render pauses no
// subresource.
type requestRules struct {
	blockTypes map[string]bool // api resource type names of block_resources
	patterns   []urlPattern    // block_requests
	blocker    Blocker
	// scoped go only to requests whose hostKey is target; global go to every request.
	scoped []fetch.HeaderEntry
	global []fetch.HeaderEntry
	target string // hostKey of the url option; "" for an html source: scoped headers go nowhere
	// targetTLS: the url option is https, so scoped headers never go out in clear text, not
	// even to its host after a redirect to http.
	targetTLS bool
}

// newRequestRules returns the rules of o, or nil when there are none.
func newRequestRules(o *shotd.Options, b Blocker) *requestRules {
	if b == nil && len(o.BlockResources) == 0 && len(o.BlockRequests) == 0 && len(o.Headers) == 0 && o.Authorization == "" &&
		!o.BlockSocials {
		return nil
	}
	rr := &requestRules{blocker: b, target: hostKey(o.URL), targetTLS: secureScheme(o.URL)}
	if len(o.BlockResources) > 0 {
		rr.blockTypes = make(map[string]bool, len(o.BlockResources))
		for _, t := range o.BlockResources {
			rr.blockTypes[strings.ToLower(t)] = true
		}
	}
	for _, p := range o.BlockRequests {
		if p = strings.TrimSpace(p); p != "" {
			rr.patterns = append(rr.patterns, compilePattern(p))
		}
	}
	if o.BlockSocials {
		rr.patterns = append(rr.patterns, socialPatterns()...) // hide.go
	}
	add := func(name, value string) {
		h := fetch.HeaderEntry{Name: name, Value: value}
		if scopedHeader(name) {
			rr.scoped = setHeader(rr.scoped, h)
		} else {
			rr.global = setHeader(rr.global, h)
		}
	}
	for _, h := range o.Headers {
		add(h.Name, h.Value)
	}
	if o.Authorization != "" {
		add("Authorization", o.Authorization) // the option wins over an Authorization header
	}
	return rr
}

// scopedHeader reports whether a header carries credentials and so goes to the site of url
// alone: any name with auth, token, key, secret, session, password, jwt, cookie, credential or
// api in it (Authorization, Cookie, X-Api-Key, X-Session, X-JWT, ...). It errs on the side of
// scoping: a header scoped wrongly only misses the other hosts.
func scopedHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "token", "key", "secret", "session", "passw", "jwt", "cookie", "credential", "api"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// hostKey is what scoped headers compare: the lower-case host name plus the port when it is
// not the default port of the scheme. So http://a.example and https://a.example are the same
// site (a redirect to https keeps the credentials), while another port on the same host, which
// may be another service, is not. "" when raw has no host.
func hostKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	switch {
	case port == "":
	case port == "80" && (u.Scheme == "http" || u.Scheme == "ws"):
		port = ""
	case port == "443" && (u.Scheme == "https" || u.Scheme == "wss"):
		port = ""
	}
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// secureScheme reports whether raw is an https (or wss) address.
func secureScheme(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	return ok && (strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "wss"))
}

// setHeader replaces the entry of h's name (case-insensitively) or appends h.
func setHeader(hs []fetch.HeaderEntry, h fetch.HeaderEntry) []fetch.HeaderEntry {
	for i := range hs {
		if strings.EqualFold(hs[i].Name, h.Name) {
			hs[i] = h
			return hs
		}
	}
	return append(hs, h)
}

// headersFor returns the full header list the request to rawURL must carry, or nil when it
// needs no extra header. Fetch.continueRequest replaces the request's headers with the list,
// so it starts from the request's own.
func (rr *requestRules) headersFor(rawURL string, own network.Headers) []fetch.HeaderEntry {
	extra := rr.global
	// The same host, and no step down from https to http: an http target may follow its own
	// redirect to https, an https target's credentials never travel in clear text.
	if len(rr.scoped) > 0 && rr.target != "" && hostKey(rawURL) == rr.target && (!rr.targetTLS || secureScheme(rawURL)) {
		extra = append(append([]fetch.HeaderEntry(nil), rr.global...), rr.scoped...)
	}
	if len(extra) == 0 {
		return nil
	}
	var m map[string]string
	_ = json.Unmarshal(own, &m) // an unreadable list leaves the extra headers alone
	hs := make([]fetch.HeaderEntry, 0, len(m)+len(extra))
	for k, v := range m {
		hs = append(hs, fetch.HeaderEntry{Name: k, Value: v})
	}
	for _, h := range extra {
		if strings.EqualFold(h.Name, "cookie") {
			// Keep the cookies the page already sends with ours.
			for _, o := range hs {
				if strings.EqualFold(o.Name, "cookie") && o.Value != "" {
					h.Value = o.Value + "; " + h.Value
					break
				}
			}
		}
		hs = setHeader(hs, h)
	}
	return hs
}

// apiResourceType maps Chrome's resource type to the names of block_resources; the types the
// api does not list (prefetch, ping, preflight, ...) count as "other".
func apiResourceType(t network.ResourceType) string {
	s := strings.ToLower(string(t))
	switch s {
	case "document", "stylesheet", "image", "media", "font", "script", "xhr", "fetch", "websocket",
		"texttrack", "eventsource", "manifest":
		return s
	}
	return "other"
}

// blocks reports whether a request (not the main document) must fail.
func (rr *requestRules) blocks(rawURL string, t network.ResourceType, subdocument bool, pageURL string) bool {
	switch typ := apiResourceType(t); {
	case rr.blockTypes[typ]:
		return true
	case typ == "xhr" || typ == "fetch":
		// Fetch interception reports fetch() requests as XHR, so the two cannot be told apart
		// here: either name blocks both.
		if rr.blockTypes["xhr"] || rr.blockTypes["fetch"] {
			return true
		}
	}
	for _, p := range rr.patterns {
		if p.match(rawURL) {
			return true
		}
	}
	if rr.blocker != nil {
		rt := strings.ToLower(string(t))
		if subdocument {
			rt = "subdocument"
		}
		return rr.blocker.Block(rawURL, pageURL, rt)
	}
	return false
}

// urlPattern is one block_requests entry. The rule:
//   - a pattern with "://" is matched against the whole URL (without its #fragment):
//     "https://cdn.example.com/*.js";
//   - a pattern without a scheme but with a "/" is matched against the URL without its
//     "scheme://": "cdn.example.com/ads/*", "*/analytics.js*";
//   - a pattern without a scheme and without "/" is matched against the host name alone:
//     "ads.example.com", "*.doubleclick.net", "*tracker*".
//
// "*" stands for any run of characters, "/" included; everything else is literal and the match
// covers the whole string. Hosts compare case-insensitively, paths case-sensitively.
type urlPattern struct {
	glob string
	kind int // patWhole, patNoScheme, patHost
}

const (
	patWhole = iota
	patNoScheme
	patHost
)

func compilePattern(p string) urlPattern {
	switch {
	case strings.Contains(p, "://"):
		return urlPattern{glob: p, kind: patWhole}
	case strings.Contains(p, "/"):
		return urlPattern{glob: p, kind: patNoScheme}
	default:
		return urlPattern{glob: strings.ToLower(p), kind: patHost}
	}
}

func (p urlPattern) match(rawURL string) bool {
	if i := strings.IndexByte(rawURL, '#'); i >= 0 {
		rawURL = rawURL[:i]
	}
	switch p.kind {
	case patWhole:
		return globMatch(p.glob, rawURL)
	case patNoScheme:
		i := strings.Index(rawURL, "://")
		if i < 0 {
			return false
		}
		return globMatch(p.glob, rawURL[i+3:])
	default:
		u, err := url.Parse(rawURL)
		if err != nil || u.Hostname() == "" {
			return false
		}
		return globMatch(p.glob, strings.ToLower(u.Hostname()))
	}
}

// globMatch matches s against a pattern where "*" is any run of characters. It runs in time
// linear in len(s) plus len(pattern): the pieces between stars are literal, so the leftmost
// place of each piece after the previous one is never worse than a later one, and no
// backtracking is needed. (The greedy algorithm with one backtrack point this replaces cost
// len(s) x len(pattern): minutes for a long URL against a long pattern, with the render's slot
// held.)
func globMatch(pattern, s string) bool {
	pieces := strings.Split(pattern, "*")
	if len(pieces) == 1 {
		return pattern == s
	}
	first, last := pieces[0], pieces[len(pieces)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	// The middle pieces, in order, within what the first and last leave.
	rest := s[len(first) : len(s)-len(last)]
	for _, piece := range pieces[1 : len(pieces)-1] {
		i := strings.Index(rest, piece)
		if i < 0 {
			return false
		}
		rest = rest[i+len(piece):]
	}
	return true
}

// webSocketScript returns the script that blocks WebSocket connections, "" when the render
// blocks none. Neither Fetch interception nor Network.setBlockedURLs sees WebSocket handshakes
// (Chromium 156), so block_resources=websocket and the block_requests patterns are applied by
// replacing the page's WebSocket constructor: a blocked socket fails at once with error and
// close events (code 1006) and sends nothing. It covers every frame's main world and the page's
// dedicated workers (workers.go); shared and service workers and the Blocker's lists are not
// covered.
func (rr *requestRules) webSocketScript() string {
	if rr == nil || (!rr.blockTypes["websocket"] && len(rr.patterns) == 0) {
		return ""
	}
	type pat struct {
		G string `json:"g"`
		K int    `json:"k"`
	}
	ps := make([]pat, 0, len(rr.patterns))
	for _, p := range rr.patterns {
		ps = append(ps, pat{p.glob, p.kind})
	}
	return jsCall(webSocketJS, rr.blockTypes["websocket"], ps)
}

const webSocketJS = `(all, pats) => {
	const Native = globalThis.WebSocket; // a window, or a worker's global scope
	if (!Native || Native.__shotdBlocking) return;
	const esc = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	const res = pats.map(p => ({k: p.k, re: new RegExp('^' + p.g.split('*').map(esc).join('.*') + '$', 's')}));
	const blocked = raw => {
		let u;
		try { u = new URL(raw, location.href); } catch (e) { return false; }
		if (all) return true;
		const whole = u.href.split('#')[0];
		return res.some(p => p.k === 0 ? p.re.test(whole) : p.k === 1 ? p.re.test(whole.slice(whole.indexOf('://') + 3)) : p.re.test(u.hostname.toLowerCase()));
	};
	function WebSocket(url, protocols) {
		if (!new.target) throw new TypeError("Failed to construct 'WebSocket': Please use the 'new' operator");
		if (!blocked(url)) return protocols === undefined ? new Native(url) : new Native(url, protocols);
		const ws = new EventTarget();
		Object.assign(ws, {url: String(url), readyState: 0, protocol: '', extensions: '', bufferedAmount: 0, binaryType: 'blob',
			onopen: null, onmessage: null, onerror: null, onclose: null, send() {}, close() {}});
		setTimeout(() => {
			ws.readyState = 3;
			const err = new Event('error');
			if (typeof ws.onerror === 'function') ws.onerror(err);
			ws.dispatchEvent(err);
			const close = new CloseEvent('close', {code: 1006, reason: '', wasClean: false});
			if (typeof ws.onclose === 'function') ws.onclose(close);
			ws.dispatchEvent(close);
		}, 0);
		return ws;
	}
	WebSocket.prototype = Native.prototype;
	Object.assign(WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3, __shotdBlocking: true});
	globalThis.WebSocket = WebSocket;
}`
