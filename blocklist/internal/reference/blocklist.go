package reference

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/shotd/shotd"
)

// Request is one request as the renderer sees it.
//
// PageURL is the URL of the top document, "" for the top document's own requests (its
// navigation and redirects). A page without a host of its own (an html source, about:blank)
// may pass "" or "about:blank": its subresources are then all third-party, and `$domain=`
// rules that name sites do not apply. A "document" request is the top document when PageURL
// is "" or equal to URL, and a frame otherwise; html sources should pass "about:blank" so that
// their frames count as frames.
type Request struct {
	URL          string // full request URL
	PageURL      string // top document URL ("" for the document itself or html sources)
	ResourceType string // CDP resource type in lower case: document, stylesheet, image, script, xhr ...
}

// Stats counts what a list holds and what it left out.
type Stats struct {
	Lists            []string       // names given to Parse, in load order
	Network          int            // blocking network rules
	Exceptions       int            // `@@` network exceptions (hide-control ones included)
	Hiding           int            // `##` element hiding rules
	HidingExceptions int            // `#@#` rules
	Skipped          int            // rules not loaded
	SkipReasons      map[string]int // why, for example "unsupported option $redirect"
}

// Loaded is the number of rules in use.
func (s Stats) Loaded() int { return s.Network + s.Exceptions + s.Hiding + s.HidingExceptions }

// List is a compiled filter list, or several merged. It is immutable once built and safe for
// concurrent use. A nil *List blocks and hides nothing.
type List struct {
	// What Parse produced, kept as it was for Merge: every network rule including $badfilter
	// ones, the element rules, and the parse-time skip counts. build never changes a rule.
	names        []string
	parsed       []*netRule
	cos          []*cosRule
	parseSkipped map[string]int
	stats        Stats

	index    index      // blocking, important and exception rules together: one look-up
	docAllow []*netRule // `@@...$document`: checked against the page
	hideCtl  []*netRule // `@@...$generichide` and friends
}

// index finds the few rules worth checking for a URL: by host for `||host...` rules, by the
// hash of one token of the pattern for the others, and the rest (no usable token) always. A
// hash collision only adds a candidate; every candidate is checked in full.
type index struct {
	hosts   map[string][]*netRule
	tokens  map[uint32][]*netRule
	generic []*netRule
}

// tokenHash is FNV-1a, computed by the URL scan as it reads each token.
func tokenHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Parse reads one filter list in Adblock Plus / uBlock Origin syntax. It is tolerant: rules it
// cannot honour exactly are skipped and counted in Stats, never guessed at. The error is only
// ever a read error.
func Parse(r io.Reader, name string) (*List, error) {
	var p parser
	if err := p.read(r); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot read block list "+name)
	}
	return build([]string{name}, p.net, p.cos, p.skipped), nil
}

// LoadFiles parses the files at paths into one list.
func LoadFiles(paths ...string) (*List, error) {
	var p parser
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot open block list "+path)
		}
		err = p.read(f)
		f.Close()
		if err != nil {
			return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot read block list "+path)
		}
	}
	return build(paths, p.net, p.cos, p.skipped), nil
}

// Merge combines lists into one, as if their files had been loaded together; nil lists are
// left out.
func Merge(lists ...*List) *List {
	var names []string
	var net []*netRule
	var cos []*cosRule
	skipped := map[string]int{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		names = append(names, l.names...)
		net = append(net, l.parsed...)
		cos = append(cos, l.cos...)
		for k, v := range l.parseSkipped {
			skipped[k] += v
		}
	}
	return build(names, net, cos, skipped)
}

func (p *parser) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			p.line(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// badTokens are in nearly every URL; a rule is indexed under one of them only when it has
// nothing better.
var badTokens = map[string]bool{
	"http": true, "https": true, "www": true, "com": true, "net": true, "org": true, "js": true,
	"html": true, "php": true, "css": true, "png": true, "jpg": true, "gif": true, "cdn": true,
	"static": true, "assets": true, "wss": true, "ws": true, "min": true,
}

func build(names []string, parsed []*netRule, cos []*cosRule, parseSkipped map[string]int) *List {
	l := &List{names: names, parsed: parsed, cos: cos, parseSkipped: parseSkipped}
	skipped := map[string]int{}
	for k, v := range parseSkipped {
		skipped[k] = v
	}
	net := applyBadfilters(parsed, skipped)

	// Index each rule under its rarest token across all rules, so that no bucket grows long.
	freq := map[string]int{}
	for _, r := range net {
		for _, t := range r.tokens {
			freq[t]++
		}
	}
	l.index = index{hosts: map[string][]*netRule{}, tokens: map[uint32][]*netRule{}}
	for _, r := range net {
		if r.exception {
			l.stats.Exceptions++
			if r.hideCtl != 0 {
				l.hideCtl = append(l.hideCtl, r)
			}
			if r.docAllow {
				l.docAllow = append(l.docAllow, r)
			}
			if r.types == 0 {
				continue // hide control only
			}
		} else {
			l.stats.Network++
		}
		l.index.add(r, freq)
	}
	for _, c := range cos {
		if c.exception {
			l.stats.HidingExceptions++
		} else {
			l.stats.Hiding++
		}
	}
	l.stats.Lists = append([]string(nil), names...)
	l.stats.SkipReasons = map[string]int{}
	for k, v := range skipped {
		l.stats.SkipReasons[k] = v
		l.stats.Skipped += v
	}
	return l
}

// applyBadfilters drops each rule a `$badfilter` rule names (same pattern and options), and the
// badfilter rules themselves.
func applyBadfilters(net []*netRule, skipped map[string]int) []*netRule {
	bad, badBodies := map[string]bool{}, map[string]bool{}
	for _, r := range net {
		if r.badfilter {
			bad[ruleKey(r.text)] = true
			body, _ := splitOptions(r.text)
			badBodies[body] = true
		}
	}
	if len(bad) == 0 {
		return net
	}
	out := make([]*netRule, 0, len(net))
	for _, r := range net {
		switch {
		case r.badfilter:
			skipped["$badfilter directive (applied)"]++
		case badBodies[ruleBody(r.text)] && bad[ruleKey(r.text)]:
			skipped["disabled by $badfilter"]++
		default:
			out = append(out, r)
		}
	}
	return out
}

func ruleBody(text string) string {
	body, _ := splitOptions(text)
	return body
}

// ruleKey is a rule's text with its options sorted and badfilter left out.
func ruleKey(text string) string {
	body, opts := splitOptions(text)
	var keep []string
	for _, o := range strings.Split(opts, ",") {
		if o != "" && !strings.EqualFold(o, "badfilter") {
			keep = append(keep, strings.ToLower(o))
		}
	}
	sort.Strings(keep)
	return body + "$" + strings.Join(keep, ",")
}

func (ix *index) add(r *netRule, freq map[string]int) {
	if r.host != "" {
		ix.hosts[r.host] = append(ix.hosts[r.host], r)
		return
	}
	best, bestScore := "", 0
	for _, t := range r.tokens {
		score := freq[t]
		if badTokens[t] {
			score += 1 << 20
		}
		if best == "" || score < bestScore || score == bestScore && len(t) > len(best) {
			best, bestScore = t, score
		}
	}
	if best == "" {
		ix.generic = append(ix.generic, r)
		return
	}
	h := tokenHash(best)
	ix.tokens[h] = append(ix.tokens[h], r)
}

// Stats reports what the list loaded and skipped.
func (l *List) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	s := l.stats
	s.Lists = append([]string(nil), s.Lists...)
	s.SkipReasons = make(map[string]int, len(l.stats.SkipReasons))
	for k, v := range l.stats.SkipReasons {
		s.SkipReasons[k] = v
	}
	return s
}

// Match reports whether req is to be blocked: a blocking rule matches and no exception does,
// or an `$important` rule matches. Only http, https, ws and wss URLs can match.
func (l *List) Match(req Request) bool {
	block, _ := l.MatchRule(req)
	return block
}

// MatchRule is Match that also returns the rule that decided, as written in the list: the
// blocking rule, or the exception that overrode one ("" when nothing matched).
func (l *List) MatchRule(req Request) (bool, string) {
	if l == nil {
		return false, ""
	}
	var c matchCtx
	if !c.init(req) {
		return false, ""
	}
	var v verdict
	l.index.scan(&c, &v)
	switch {
	case v.important != nil:
		return true, v.important.text
	case v.block == nil:
		return false, ""
	case v.allow != nil:
		return false, v.allow.text
	}
	if e := l.pageAllowed(&c); e != nil {
		return false, e.text
	}
	return true, v.block.text
}

// verdict collects, over the candidates of one request, the first matching rule of each kind.
type verdict struct {
	block, important, allow *netRule
}

// consider checks r unless a rule of its kind already matched; true ends the scan (an
// important rule decides alone).
func (v *verdict) consider(r *netRule, c *matchCtx) bool {
	switch {
	case r.exception:
		if v.allow == nil && r.matches(c) {
			v.allow = r
		}
	case r.important:
		if r.matches(c) {
			v.important = r
			return true
		}
	default:
		if v.block == nil && r.matches(c) {
			v.block = r
		}
	}
	return false
}

// pageAllowed finds a `@@...$document` rule that matches the page the request comes from.
func (l *List) pageAllowed(c *matchCtx) *netRule {
	if len(l.docAllow) == 0 || c.pageURL == "" {
		return nil
	}
	var pc matchCtx
	if !pc.init(Request{URL: c.pageURL, ResourceType: "document"}) {
		return nil
	}
	for _, r := range l.docAllow {
		if r.matches(&pc) {
			return r
		}
	}
	return nil
}

// matchCtx is a request prepared for matching; the party is worked out only when a rule asks.
type matchCtx struct {
	url, lurl string // as given, and ASCII lower-cased
	hs, he    int    // host bounds in both
	host      string // lower-cased, no trailing dot
	typ       typeMask
	pageURL   string
	pageHost  string
	third     int8 // 0 unknown, 1 third-party, -1 first-party
}

func (c *matchCtx) init(req Request) bool {
	hs, he, ok := splitURL(req.URL)
	if !ok {
		return false
	}
	c.url, c.lurl, c.hs, c.he = req.URL, asciiLower(req.URL), hs, he
	c.host = strings.TrimSuffix(c.lurl[hs:he], ".")
	c.pageURL = req.PageURL
	c.typ = resourceType(req)
	if c.typ == tDocument {
		// The top document is its own page: first-party, and $domain= is about its host.
		c.pageHost = c.host
	} else {
		c.pageHost = hostOf(req.PageURL)
	}
	return true
}

// resourceType maps a CDP resource type to an Adblock Plus one. A document is the top document
// when it has no page or is the page; otherwise it is a frame (subdocument). ABP names are
// accepted as well.
func resourceType(req Request) typeMask {
	switch strings.ToLower(req.ResourceType) {
	case "document", "main_frame":
		if req.PageURL == "" || req.PageURL == req.URL {
			return tDocument
		}
		return tSubdocument
	case "subdocument", "sub_frame":
		return tSubdocument
	case "stylesheet":
		return tStylesheet
	case "image", "imageset":
		return tImage
	case "media":
		return tMedia
	case "font":
		return tFont
	case "script":
		return tScript
	case "xhr", "fetch", "xmlhttprequest":
		return tXHR
	case "websocket":
		return tWebsocket
	case "ping", "beacon":
		return tPing
	case "object":
		return tObject
	default: // texttrack, eventsource, manifest, prefetch, signedexchange, preflight, other ...
		return tOther
	}
}

// thirdParty compares registrable domains. A page without a host (html source, about:blank)
// is an opaque origin: everything it loads is third-party.
func (c *matchCtx) thirdParty() bool {
	if c.third == 0 {
		c.third = -1
		if c.pageHost == "" || c.host != c.pageHost && registrable(c.host) != registrable(c.pageHost) {
			c.third = 1
		}
	}
	return c.third == 1
}

// scan offers v the candidates of c: the rules under the host and each parent domain, under
// each token of the URL, and the generic ones.
func (ix *index) scan(c *matchCtx, v *verdict) {
	if len(ix.hosts) > 0 {
		for h := c.host; h != ""; {
			for _, r := range ix.hosts[h] {
				if v.consider(r, c) {
					return
				}
			}
			i := strings.IndexByte(h, '.')
			if i < 0 {
				break
			}
			h = h[i+1:]
		}
	}
	if len(ix.tokens) > 0 {
		u := c.lurl
		for i := 0; i < len(u); {
			if !isTokenChar(u[i]) {
				i++
				continue
			}
			h := uint32(2166136261)
			for ; i < len(u) && isTokenChar(u[i]); i++ {
				h = (h ^ uint32(u[i])) * 16777619
			}
			for _, r := range ix.tokens[h] {
				if v.consider(r, c) {
					return
				}
			}
		}
	}
	for _, r := range ix.generic {
		if v.consider(r, c) {
			return
		}
	}
}

// matches checks one rule, cheapest conditions first.
func (r *netRule) matches(c *matchCtx) bool {
	return r.types&c.typ != 0 && r.matchesURL(c)
}

// matchesURL checks everything but the request type.
func (r *netRule) matchesURL(c *matchCtx) bool {
	if r.hostOnly {
		// The host index found it by this host, but hideControl and pageAllowed scan rules
		// directly; the check costs a compare.
		if c.host != r.host && !(len(c.host) > len(r.host) && strings.HasSuffix(c.host, r.host) &&
			c.host[len(c.host)-len(r.host)-1] == '.') {
			return false
		}
	} else {
		u := c.lurl
		if r.matchCase {
			u = c.url
		}
		if r.re != nil {
			// A regex costs more than the domain look-up; most carry a $domain= list.
			if r.domains != nil && !r.domains.match(c.pageHost) {
				return false
			}
			if !r.re.MatchString(c.url) {
				return false
			}
		} else if !r.pat.match(u, c.hs, c.he) {
			return false
		}
	}
	// The domain list can be long and the party needs the public suffix list: both come after
	// the pattern, which turns most candidates down.
	if r.domains != nil && !r.domains.match(c.pageHost) {
		return false
	}
	switch r.party {
	case 1:
		return c.thirdParty()
	case -1:
		return !c.thirdParty()
	}
	return true
}
