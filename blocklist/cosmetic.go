package blocklist

import "strings"

// chunkSize is how many selectors share one CSS rule: an invalid selector voids its whole rule,
// so a bad one costs at most this many others.
const chunkSize = 100

// cosmeticIndex holds the element hiding rules ready for HideCSS.
type cosmeticIndex struct {
	generic    []string        // selectors of domain-less rules, generic exceptions removed
	genericSet map[string]bool //
	genericCSS string          // generic as a stylesheet, built once
	negOnly    []*cosRule      // `~a.com##x`: generic except on the listed domains
	specific   map[string][]*cosRule
	exc        map[string][]*cosRule // `a.com#@#x`, by each included domain
	excNegOnly []*cosRule            // `~a.com#@#x`
}

func buildCosmetic(rules []*cosRule) cosmeticIndex {
	ci := cosmeticIndex{
		genericSet: map[string]bool{},
		specific:   map[string][]*cosRule{},
		exc:        map[string][]*cosRule{},
	}
	// A domain-less `#@#x` disables x everywhere.
	global := map[string]bool{}
	for _, r := range rules {
		if r.exception && r.domains == nil {
			global[r.sel] = true
		}
	}
	for _, r := range rules {
		if global[r.sel] {
			continue
		}
		switch {
		case r.exception && r.domains.hasIncl:
			for _, d := range r.domains.included() {
				ci.exc[d] = append(ci.exc[d], r)
			}
		case r.exception:
			ci.excNegOnly = append(ci.excNegOnly, r)
		case r.domains == nil:
			if !ci.genericSet[r.sel] {
				ci.genericSet[r.sel] = true
				ci.generic = append(ci.generic, r.sel)
			}
		case !r.domains.hasIncl:
			ci.negOnly = append(ci.negOnly, r)
		default:
			for _, d := range r.domains.included() {
				ci.specific[d] = append(ci.specific[d], r)
			}
		}
	}
	ci.genericCSS = writeCSS(nil, ci.generic, nil)
	return ci
}

// writeCSS appends `a,b,...{display:none!important}` rules of at most chunkSize selectors
// each, leaving out those in skip.
func writeCSS(b *strings.Builder, sels []string, skip map[string]bool) string {
	if b == nil {
		b = &strings.Builder{}
	}
	n := 0
	for _, s := range sels {
		if skip[s] {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
		n++
		if n == chunkSize {
			b.WriteString("{display:none!important}\n")
			n = 0
		}
	}
	if n > 0 {
		b.WriteString("{display:none!important}\n")
	}
	return b.String()
}

// HideCSS returns the element hiding stylesheet for a page on pageHost ("" for a page without a
// host, which gets the generic rules only): generic `##` rules, the page's site-specific ones,
// minus the `#@#` exceptions that apply, honouring `@@...$generichide`, `$specifichide`,
// `$elemhide` and `$document`. Each CSS rule holds at most 100 selectors.
func (l *List) HideCSS(pageHost string) string {
	if l == nil {
		return ""
	}
	host := pageHost
	if strings.Contains(host, "://") {
		host = hostOf(host)
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	host = normHost(host)
	ci := &l.cosmetic
	ctl := l.hideControl(host)
	if ctl == hideGeneric|hideSpecific {
		return ""
	}

	var excepted map[string]bool
	except := func(sel string) {
		if excepted == nil {
			excepted = map[string]bool{}
		}
		excepted[sel] = true
	}
	var specific []string
	seen := map[string]bool{}
	if host != "" {
		hostKeys(host, func(key string) bool {
			for _, r := range ci.exc[key] {
				if r.domains.match(host) {
					except(r.sel)
				}
			}
			return true
		})
	}
	for _, r := range ci.excNegOnly {
		if r.domains.match(host) {
			except(r.sel)
		}
	}
	add := func(r *cosRule) {
		if r.domains.match(host) && !excepted[r.sel] && !seen[r.sel] &&
			(ctl&hideGeneric != 0 || !ci.genericSet[r.sel]) {
			seen[r.sel] = true
			specific = append(specific, r.sel)
		}
	}
	if ctl&hideSpecific == 0 && host != "" {
		hostKeys(host, func(key string) bool {
			for _, r := range ci.specific[key] {
				add(r)
			}
			return true
		})
	}
	if ctl&hideGeneric == 0 {
		for _, r := range ci.negOnly {
			add(r)
		}
	}

	var b strings.Builder
	if ctl&hideGeneric == 0 {
		hit := false
		for s := range excepted {
			if ci.genericSet[s] {
				hit = true
				break
			}
		}
		if hit {
			writeCSS(&b, ci.generic, excepted)
		} else {
			if len(specific) == 0 {
				return ci.genericCSS
			}
			b.Grow(len(ci.genericCSS) + 64*len(specific))
			b.WriteString(ci.genericCSS)
		}
	}
	return writeCSS(&b, specific, nil)
}

// hideControl says which kinds of element hiding the page on host opts out of, from
// `@@...$generichide` / `$specifichide` / `$elemhide` rules and `@@...$document` ones.
func (l *List) hideControl(host string) uint8 {
	if host == "" || len(l.hideCtl) == 0 && len(l.docAllow) == 0 {
		return 0
	}
	var c matchCtx
	if !c.init(Request{URL: "https://" + host + "/", ResourceType: "document"}) {
		return 0
	}
	var ctl uint8
	for _, r := range l.hideCtl {
		if r.matchesURL(&c) {
			ctl |= r.hideCtl
		}
	}
	for _, r := range l.docAllow {
		if r.matches(&c) {
			ctl = hideGeneric | hideSpecific
		}
	}
	return ctl
}
