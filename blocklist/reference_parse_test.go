package blocklist

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// refTypeMask is a set of Adblock Plus request types.
type refTypeMask uint16

const (
	refTOther refTypeMask = 1 << iota
	refTScript
	refTImage
	refTStylesheet
	refTObject
	refTXHR
	refTSubdocument
	refTPing
	refTMedia
	refTFont
	refTWebsocket
	refTDocument
	refTPopup

	// refDefaultTypes is what a rule without type options applies to: every subresource, not the
	// top document (blocking the page asked for takes an explicit $document) and not popups.
	refDefaultTypes = refTOther | refTScript | refTImage | refTStylesheet | refTObject | refTXHR | refTSubdocument |
		refTPing | refTMedia | refTFont | refTWebsocket
	refAllTypes = refDefaultTypes | refTDocument | refTPopup
)

var refTypeOptions = map[string]refTypeMask{
	"other":          refTOther,
	"script":         refTScript,
	"image":          refTImage,
	"stylesheet":     refTStylesheet,
	"css":            refTStylesheet,
	"object":         refTObject,
	"xmlhttprequest": refTXHR,
	"xhr":            refTXHR,
	"subdocument":    refTSubdocument,
	"frame":          refTSubdocument,
	"ping":           refTPing,
	"beacon":         refTPing,
	"media":          refTMedia,
	"font":           refTFont,
	"websocket":      refTWebsocket,
	"document":       refTDocument,
	"doc":            refTDocument,
	"popup":          refTPopup,
	"popunder":       refTPopup,
	"all":            refAllTypes,
}

// refUnsupportedOptions are options whose rules are skipped whole: each changes what a match does
// (rewrites, redirects, headers, CSP) or narrows it by something a Request does not carry
// (method, CNAME, sitekey), so blocking on the pattern alone would block wrongly.
var refUnsupportedOptions = map[string]bool{
	"csp": true, "redirect": true, "redirect-rule": true, "removeparam": true, "queryprune": true,
	"rewrite": true, "replace": true, "header": true, "permissions": true, "uritransform": true,
	"urlskip": true, "method": true, "to": true, "denyallow": true, "cname": true, "sitekey": true,
	"empty": true, "mp4": true, "inline-script": true, "inline-font": true, "webrtc": true,
	"genericblock": true, "strict1p": true, "strict3p": true, "strict-first-party": true,
	"strict-third-party": true, "object-subrequest": true, "elemhide-popup": true, "reason": true,
}

// Hide-control bits of `@@...$generichide`, `$elemhide` and `$specifichide`.
const (
	refHideGeneric uint8 = 1 << iota
	refHideSpecific
)

// refNetRule is one compiled network rule.
type refNetRule struct {
	text      string // as written, for MatchRule and $badfilter
	pat       refPattern
	re        *regexp.Regexp
	hostOnly  bool   // `||host^` and nothing else: the host index look-up is the whole match
	host      string // the host the rule is indexed under, for `||host^...` rules
	tokens    []string
	types     refTypeMask
	party     int8 // 1: third-party only, -1: first-party only
	domains   *domainSet
	matchCase bool
	important bool
	exception bool
	docAllow  bool  // `@@...$document`: nothing is blocked on a matching page
	hideCtl   uint8 // hideGeneric and/or hideSpecific, on exceptions only
	badfilter bool
}

// refCosRule is one `##` or `#@#` rule.
type refCosRule struct {
	sel       string
	domains   *domainSet
	exception bool
}

// refParser accumulates the rules of one or more lists.
type refParser struct {
	net     []*refNetRule
	cos     []*refCosRule
	skipped map[string]int
}

func (p *refParser) skip(reason string) {
	if p.skipped == nil {
		p.skipped = map[string]int{}
	}
	p.skipped[reason]++
}

// line parses one line of a filter list.
func (p *refParser) line(s string) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] == '!' || s[0] == '[' || strings.HasPrefix(s, "# ") || s == "#" {
		return // blank, comment, or the `[Adblock Plus 2.0]` header
	}
	if i, marker := refCosmeticMarker(s); i >= 0 {
		if marker == "" {
			p.skip("unsupported cosmetic domain")
			return
		}
		p.cosmetic(s[:i], marker, s[i+len(marker):])
		return
	}
	p.network(s)
}

// refCosmeticMarkers are the separators of element rules, longest first so that `#@#` is not read
// as `#`.
var refCosmeticMarkers = []string{"#@?#", "#@$#", "#@%#", "##", "#@#", "#?#", "#$#", "#%#"}

// refCosmeticMarker finds the separator of an element rule: a marker whose prefix is a plain domain
// list. A `#` elsewhere (a URL fragment in a network rule) does not count. A marker after a
// uBO regex domain (`/re/##sel`) gives the index with an empty marker: an element rule that
// cannot be honoured, and must not be read as a network rule.
func refCosmeticMarker(s string) (int, string) {
	for i := strings.IndexByte(s, '#'); i >= 0; {
		for _, m := range refCosmeticMarkers {
			if strings.HasPrefix(s[i:], m) {
				switch {
				case refDomainListLike(s[:i]):
					return i, m
				case i > 1 && s[0] == '/' && s[i-1] == '/':
					return i, ""
				}
				return -1, ""
			}
		}
		j := strings.IndexByte(s[i+1:], '#')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return -1, ""
}

func refDomainListLike(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == '_', c == ',', c == '~', c == '*', c >= 0x80:
		default:
			return false
		}
	}
	return true
}

// refProceduralMarkers are uBO/ABP extended selectors that are not CSS; a rule that holds one is
// skipped, since a stylesheet cannot run it and one bad selector would void its chunk.
var refProceduralMarkers = []string{
	":has-text(", ":-abp-", ":contains(", ":xpath(", ":upward(", ":remove(", ":style(",
	":matches-css", ":min-text-length(", ":watch-attr(", ":watch-attrs(", ":matches-path(",
	":matches-attr(", ":matches-prop(", ":matches-media(", ":nth-ancestor(", ":if(", ":if-not(",
	":others(", ":shadow(", ":remove-attr(", ":remove-class(", ":spath(", ":-ext-",
}

func (p *refParser) cosmetic(domains, marker, sel string) {
	switch marker {
	case "#?#", "#@?#":
		p.skip("procedural cosmetic (#?#)")
		return
	case "#$#", "#@$#":
		p.skip("snippet or CSS injection (#$#)")
		return
	case "#%#", "#@%#":
		p.skip("scriptlet (#%#)")
		return
	}
	sel = strings.TrimSpace(sel)
	switch {
	case sel == "":
		p.skip("malformed cosmetic")
		return
	case strings.HasPrefix(sel, "+js("):
		p.skip("scriptlet (##+js)")
		return
	case sel[0] == '^':
		p.skip("HTML filter (##^)")
		return
	}
	if strings.HasSuffix(sel, "}") && strings.Contains(sel, " {") {
		p.skip("CSS injection (sel {style})")
		return
	}
	lower := strings.ToLower(sel)
	for _, m := range refProceduralMarkers {
		if strings.Contains(lower, m) {
			p.skip("procedural cosmetic")
			return
		}
	}
	if !refBalancedSelector(sel) {
		p.skip("malformed cosmetic")
		return
	}
	ds, ok := parseDomains(domains, ',')
	if !ok {
		p.skip("unsupported cosmetic domain")
		return
	}
	p.cos = append(p.cos, &refCosRule{sel: sel, domains: ds, exception: marker == "#@#"})
}

// refBalancedSelector rejects selectors that could break out of their rule in a stylesheet
// (braces, `;` or a comment opener outside quotes, unbalanced brackets or quotes); it is no CSS
// parser.
func refBalancedSelector(s string) bool {
	var stack []byte
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '{', '}', ';':
			return false
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				return false
			}
		case '\\':
			i++
		case '"', '\'':
			quote = c
		case '(', '[':
			stack = append(stack, c)
		case ')', ']':
			want := byte('(')
			if c == ']' {
				want = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != want {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return quote == 0 && len(stack) == 0
}

func (p *refParser) network(s string) {
	r := &refNetRule{text: s}
	body := s
	if strings.HasPrefix(body, "@@") {
		r.exception = true
		body = body[2:]
	}
	body, opts := refSplitOptions(body)
	if opts == "" {
		r.types = refDefaultTypes
	} else if !p.options(r, opts) {
		return
	}
	if strings.Trim(body, "|*^") == "" {
		// `*`, `||`, `|*|` ...: only options can narrow such a rule. Without any, it would
		// block every request.
		if r.domains == nil && r.party == 0 && r.types == refDefaultTypes && r.hideCtl == 0 && !r.docAllow {
			p.skip("matches everything")
			return
		}
		body = ""
	}
	if len(body) > 2 && body[0] == '/' && body[len(body)-1] == '/' {
		if !p.regexRule(r, body[1:len(body)-1]) {
			return
		}
		p.net = append(p.net, r)
		return
	}
	hostAnchor, startAnchor, endAnchor := false, false, false
	switch {
	case strings.HasPrefix(body, "||"):
		hostAnchor, body = true, body[2:]
	case strings.HasPrefix(body, "|"):
		startAnchor, body = true, body[1:]
	}
	if strings.HasSuffix(body, "|") {
		endAnchor, body = true, body[:len(body)-1]
	}
	if strings.ContainsAny(body, " \t") {
		p.skip("malformed network rule")
		return
	}
	if !r.matchCase {
		body = refAsciiLower(body)
	}
	r.pat = refCompilePattern(body, hostAnchor, startAnchor, endAnchor)
	lower := refAsciiLower(body)
	if r.pat.hostAnchor {
		h := lower
		if i := strings.IndexAny(h, "^/*|?:"); i >= 0 {
			if h[i] == '^' || h[i] == '/' || h[i] == ':' {
				h = h[:i]
			} else {
				h = ""
			}
		} else {
			h = "" // `||ads` is a prefix of a host label, not a host
		}
		if h != "" && validDomain(h) && !strings.HasSuffix(h, ".") {
			r.host = h
			r.hostOnly = lower == h+"^" && !endAnchor
		}
	}
	if r.host == "" {
		r.tokens = refPatternTokens(lower, r.pat.hostAnchor || r.pat.startAnchor, r.pat.endAnchor)
	}
	p.net = append(p.net, r)
}

// refSplitOptions cuts `pattern$options`. A regex rule `/.../` may hold `$` itself, so its options
// start only after the closing slash.
func refSplitOptions(s string) (body, opts string) {
	if len(s) > 1 && s[0] == '/' {
		if k := strings.LastIndexByte(s, '/'); k > 0 {
			if k == len(s)-1 {
				return s, ""
			}
			if s[k+1] == '$' {
				return s[:k+1], s[k+2:]
			}
		}
	}
	if i := strings.LastIndexByte(s, '$'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// options reads the options of r; false (and a counted skip) when the rule must be dropped.
func (p *refParser) options(r *refNetRule, opts string) bool {
	var incl, excl refTypeMask
	for _, o := range strings.Split(opts, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		neg := strings.HasPrefix(o, "~")
		if neg {
			o = o[1:]
		}
		name, value, _ := strings.Cut(o, "=")
		name = strings.ToLower(name)
		if t, ok := refTypeOptions[name]; ok {
			if neg {
				excl |= t
			} else {
				incl |= t
			}
			continue
		}
		switch name {
		case "third-party", "3p":
			r.party = 1
			if neg {
				r.party = -1
			}
		case "first-party", "1p":
			r.party = -1
			if neg {
				r.party = 1
			}
		case "match-case":
			r.matchCase = true
		case "important":
			r.important = true
		case "badfilter":
			r.badfilter = true
		case "domain", "from":
			ds, ok := parseDomains(value, '|')
			if !ok {
				p.skip("unsupported $domain value")
				return false
			}
			r.domains = ds
		case "generichide", "ghide":
			r.hideCtl |= refHideGeneric
		case "elemhide", "ehide":
			r.hideCtl |= refHideGeneric | refHideSpecific
		case "specifichide", "shide":
			r.hideCtl |= refHideSpecific
		default:
			if refUnsupportedOptions[name] {
				p.skip("unsupported option $" + name)
			} else {
				p.skip("unknown option")
			}
			return false
		}
	}
	if r.hideCtl != 0 {
		if !r.exception {
			p.skip("hide option on a blocking rule")
			return false
		}
		if incl == 0 && excl == 0 {
			return true // hide control only: r.types stays 0, it excepts no request
		}
	}
	switch {
	case incl != 0:
		r.types = incl &^ excl
	case excl != 0:
		r.types = refDefaultTypes &^ excl
	default:
		r.types = refDefaultTypes
	}
	if r.exception && r.types&refTDocument != 0 && incl&refTDocument != 0 {
		r.docAllow = true
	}
	if r.types&^refTPopup == 0 {
		p.skip("popup only")
		return false
	}
	r.types &^= refTPopup
	return true
}

// regexRule compiles a `/regex/` rule with Go's RE2; lookarounds and backreferences do not
// compile and the rule is skipped.
func (p *refParser) regexRule(r *refNetRule, expr string) bool {
	src := expr
	if !r.matchCase {
		src = "(?i)" + expr
	}
	re, err := regexp.Compile(src)
	if err != nil {
		p.skip("regex RE2 cannot compile")
		return false
	}
	r.re = re
	r.tokens = refRegexTokens(expr)
	return true
}

// refRegexTokens finds tokens every match of expr must contain: whole tokens inside a literal run
// of its top-level concatenation. A regex without one goes to the bucket checked for every URL.
func refRegexTokens(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var toks []string
	for _, s := range subs {
		if s.Op != syntax.OpLiteral {
			continue
		}
		lit := refAsciiLower(string(s.Rune))
		for i, j := range refTokenRuns(lit) {
			if i > 0 && j < len(lit) {
				toks = append(toks, lit[i:j])
			}
		}
	}
	return toks
}
