package blocklist

// The reference matcher (this file, reference_parse_test.go and reference_pattern_test.go) is
// the block list matcher as it was before its rules were stored compactly (blocklist as of
// commit 539e766, element hiding left out), frozen: the oracle that TestCompactMatchesReference
// compares the compact matcher with, request by request, on the Debian lists. Its names carry a
// ref prefix so that it can live beside the matcher in this package's tests; it shares only
// domains.go, which the compact rules left as it was. It is not to be changed or used for
// anything else.

import (
	"bufio"
	"errors"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/shotd/shotd"
)

// refRequest is one request as the renderer sees it.
//
// PageURL is the URL of the top document, "" for the top document's own requests (its
// navigation and redirects). A page without a host of its own (an html source, about:blank)
// may pass "" or "about:blank": its subresources are then all third-party, and `$domain=`
// rules that name sites do not apply. A "document" request is the top document when PageURL
// is "" or equal to URL, and a frame otherwise; html sources should pass "about:blank" so that
// their frames count as frames.
type refRequest struct {
	URL          string // full request URL
	PageURL      string // top document URL ("" for the document itself or html sources)
	ResourceType string // CDP resource type in lower case: document, stylesheet, image, script, xhr ...
}

// refStats counts what a list holds and what it left out.
type refStats struct {
	Lists            []string       // names given to Parse, in load order
	Network          int            // blocking network rules
	Exceptions       int            // `@@` network exceptions (hide-control ones included)
	Hiding           int            // `##` element hiding rules
	HidingExceptions int            // `#@#` rules
	Skipped          int            // rules not loaded
	SkipReasons      map[string]int // why, for example "unsupported option $redirect"
}

// Loaded is the number of rules in use.
func (s refStats) Loaded() int { return s.Network + s.Exceptions + s.Hiding + s.HidingExceptions }

// refList is a compiled filter list, or several merged. It is immutable once built and safe for
// concurrent use. A nil *List blocks and hides nothing.
type refList struct {
	// What Parse produced, kept as it was for Merge: every network rule including $badfilter
	// ones, the element rules, and the parse-time skip counts. build never changes a rule.
	names        []string
	parsed       []*refNetRule
	cos          []*refCosRule
	parseSkipped map[string]int
	stats        refStats

	index    refIndex      // blocking, important and exception rules together: one look-up
	docAllow []*refNetRule // `@@...$document`: checked against the page
	hideCtl  []*refNetRule // `@@...$generichide` and friends
}

// refIndex finds the few rules worth checking for a URL: by host for `||host...` rules, by the
// hash of one token of the pattern for the others, and the rest (no usable token) always. A
// hash collision only adds a candidate; every candidate is checked in full.
type refIndex struct {
	hosts   map[string][]*refNetRule
	tokens  map[uint32][]*refNetRule
	generic []*refNetRule
}

// refTokenHash is FNV-1a, computed by the URL scan as it reads each token.
func refTokenHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// refParse reads one filter list in Adblock Plus / uBlock Origin syntax. It is tolerant: rules it
// cannot honour exactly are skipped and counted in Stats, never guessed at. The error is only
// ever a read error.
func refParse(r io.Reader, name string) (*refList, error) {
	var p refParser
	if err := p.read(r); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "cannot read block list "+name)
	}
	return refBuild([]string{name}, p.net, p.cos, p.skipped), nil
}

// refLoadFiles parses the files at paths into one list.
func refLoadFiles(paths ...string) (*refList, error) {
	var p refParser
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
	return refBuild(paths, p.net, p.cos, p.skipped), nil
}

// refMerge combines lists into one, as if their files had been loaded together; nil lists are
// left out.
func refMerge(lists ...*refList) *refList {
	var names []string
	var net []*refNetRule
	var cos []*refCosRule
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
	return refBuild(names, net, cos, skipped)
}

func (p *refParser) read(r io.Reader) error {
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

// refBadTokens are in nearly every URL; a rule is indexed under one of them only when it has
// nothing better.
var refBadTokens = map[string]bool{
	"http": true, "https": true, "www": true, "com": true, "net": true, "org": true, "js": true,
	"html": true, "php": true, "css": true, "png": true, "jpg": true, "gif": true, "cdn": true,
	"static": true, "assets": true, "wss": true, "ws": true, "min": true,
}

func refBuild(names []string, parsed []*refNetRule, cos []*refCosRule, parseSkipped map[string]int) *refList {
	l := &refList{names: names, parsed: parsed, cos: cos, parseSkipped: parseSkipped}
	skipped := map[string]int{}
	for k, v := range parseSkipped {
		skipped[k] = v
	}
	net := refApplyBadfilters(parsed, skipped)

	// Index each rule under its rarest token across all rules, so that no bucket grows long.
	freq := map[string]int{}
	for _, r := range net {
		for _, t := range r.tokens {
			freq[t]++
		}
	}
	l.index = refIndex{hosts: map[string][]*refNetRule{}, tokens: map[uint32][]*refNetRule{}}
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

// refApplyBadfilters drops each rule a `$badfilter` rule names (same pattern and options), and the
// badfilter rules themselves.
func refApplyBadfilters(net []*refNetRule, skipped map[string]int) []*refNetRule {
	bad, badBodies := map[string]bool{}, map[string]bool{}
	for _, r := range net {
		if r.badfilter {
			bad[refRuleKey(r.text)] = true
			body, _ := refSplitOptions(r.text)
			badBodies[body] = true
		}
	}
	if len(bad) == 0 {
		return net
	}
	out := make([]*refNetRule, 0, len(net))
	for _, r := range net {
		switch {
		case r.badfilter:
			skipped["$badfilter directive (applied)"]++
		case badBodies[refRuleBody(r.text)] && bad[refRuleKey(r.text)]:
			skipped["disabled by $badfilter"]++
		default:
			out = append(out, r)
		}
	}
	return out
}

func refRuleBody(text string) string {
	body, _ := refSplitOptions(text)
	return body
}

// refRuleKey is a rule's text with its options sorted and badfilter left out.
func refRuleKey(text string) string {
	body, opts := refSplitOptions(text)
	var keep []string
	for _, o := range strings.Split(opts, ",") {
		if o != "" && !strings.EqualFold(o, "badfilter") {
			keep = append(keep, strings.ToLower(o))
		}
	}
	sort.Strings(keep)
	return body + "$" + strings.Join(keep, ",")
}

func (ix *refIndex) add(r *refNetRule, freq map[string]int) {
	if r.host != "" {
		ix.hosts[r.host] = append(ix.hosts[r.host], r)
		return
	}
	best, bestScore := "", 0
	for _, t := range r.tokens {
		score := freq[t]
		if refBadTokens[t] {
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
	h := refTokenHash(best)
	ix.tokens[h] = append(ix.tokens[h], r)
}

// Stats reports what the list loaded and skipped.
func (l *refList) Stats() refStats {
	if l == nil {
		return refStats{}
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
func (l *refList) Match(req refRequest) bool {
	block, _ := l.MatchRule(req)
	return block
}

// MatchRule is Match that also returns the rule that decided, as written in the list: the
// blocking rule, or the exception that overrode one ("" when nothing matched).
func (l *refList) MatchRule(req refRequest) (bool, string) {
	if l == nil {
		return false, ""
	}
	var c refMatchCtx
	if !c.init(req) {
		return false, ""
	}
	var v refVerdict
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

// refVerdict collects, over the candidates of one request, the first matching rule of each kind.
type refVerdict struct {
	block, important, allow *refNetRule
}

// consider checks r unless a rule of its kind already matched; true ends the scan (an
// important rule decides alone).
func (v *refVerdict) consider(r *refNetRule, c *refMatchCtx) bool {
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
func (l *refList) pageAllowed(c *refMatchCtx) *refNetRule {
	if len(l.docAllow) == 0 || c.pageURL == "" {
		return nil
	}
	var pc refMatchCtx
	if !pc.init(refRequest{URL: c.pageURL, ResourceType: "document"}) {
		return nil
	}
	for _, r := range l.docAllow {
		if r.matches(&pc) {
			return r
		}
	}
	return nil
}

// refMatchCtx is a request prepared for matching; the party is worked out only when a rule asks.
type refMatchCtx struct {
	url, lurl string // as given, and ASCII lower-cased
	hs, he    int    // host bounds in both
	host      string // lower-cased, no trailing dot
	typ       refTypeMask
	pageURL   string
	pageHost  string
	third     int8 // 0 unknown, 1 third-party, -1 first-party
}

func (c *refMatchCtx) init(req refRequest) bool {
	hs, he, ok := splitURL(req.URL)
	if !ok {
		return false
	}
	c.url, c.lurl, c.hs, c.he = req.URL, refAsciiLower(req.URL), hs, he
	c.host = strings.TrimSuffix(c.lurl[hs:he], ".")
	c.pageURL = req.PageURL
	c.typ = refResourceType(req)
	if c.typ == refTDocument {
		// The top document is its own page: first-party, and $domain= is about its host.
		c.pageHost = c.host
	} else {
		c.pageHost = hostOf(req.PageURL)
	}
	return true
}

// refResourceType maps a CDP resource type to an Adblock Plus one. A document is the top document
// when it has no page or is the page; otherwise it is a frame (subdocument). ABP names are
// accepted as well.
func refResourceType(req refRequest) refTypeMask {
	switch strings.ToLower(req.ResourceType) {
	case "document", "main_frame":
		if req.PageURL == "" || req.PageURL == req.URL {
			return refTDocument
		}
		return refTSubdocument
	case "subdocument", "sub_frame":
		return refTSubdocument
	case "stylesheet":
		return refTStylesheet
	case "image", "imageset":
		return refTImage
	case "media":
		return refTMedia
	case "font":
		return refTFont
	case "script":
		return refTScript
	case "xhr", "fetch", "xmlhttprequest":
		return refTXHR
	case "websocket":
		return refTWebsocket
	case "ping", "beacon":
		return refTPing
	case "object":
		return refTObject
	default: // texttrack, eventsource, manifest, prefetch, signedexchange, preflight, other ...
		return refTOther
	}
}

// thirdParty compares registrable domains. A page without a host (html source, about:blank)
// is an opaque origin: everything it loads is third-party.
func (c *refMatchCtx) thirdParty() bool {
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
func (ix *refIndex) scan(c *refMatchCtx, v *refVerdict) {
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
			if !refIsTokenChar(u[i]) {
				i++
				continue
			}
			h := uint32(2166136261)
			for ; i < len(u) && refIsTokenChar(u[i]); i++ {
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
func (r *refNetRule) matches(c *refMatchCtx) bool {
	return r.types&c.typ != 0 && r.matchesURL(c)
}

// matchesURL checks everything but the request type.
func (r *refNetRule) matchesURL(c *refMatchCtx) bool {
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
