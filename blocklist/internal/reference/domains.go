package reference

import (
	"net/netip"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// splitURL finds the scheme and the host of an absolute URL without allocating. hs:he are the
// host's bounds in u (no user info, no port, brackets kept for IPv6); ok is false for URLs that
// are not http, https, ws or wss, which no network rule is meant for (data:, blob:, about: ...).
func splitURL(u string) (hs, he int, ok bool) {
	i := strings.Index(u, "://")
	if i <= 0 {
		return 0, 0, false
	}
	switch strings.ToLower(u[:i]) {
	case "http", "https", "ws", "wss":
	default:
		return 0, 0, false
	}
	hs = i + 3
	end := len(u)
	if k := strings.IndexAny(u[hs:], "/?#"); k >= 0 {
		end = hs + k
	}
	if at := strings.LastIndexByte(u[hs:end], '@'); at >= 0 {
		hs += at + 1
	}
	he = end
	if hs < end && u[hs] == '[' {
		if k := strings.IndexByte(u[hs:end], ']'); k >= 0 {
			he = hs + k + 1
		}
	} else if k := strings.IndexByte(u[hs:end], ':'); k >= 0 {
		he = hs + k
	}
	return hs, he, true
}

// hostOf returns the lower-cased host of an absolute URL, "" when it has none.
func hostOf(u string) string {
	hs, he, ok := splitURL(u)
	if !ok {
		return ""
	}
	return normHost(u[hs:he])
}

// normHost lower-cases a host and drops a trailing dot.
func normHost(h string) string {
	return strings.TrimSuffix(asciiLower(h), ".")
}

// isIP reports whether host is an IP literal (IPv6 in brackets or not).
func isIP(host string) bool {
	if strings.HasPrefix(host, "[") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// registrable returns the eTLD+1 of host, or host itself for IP literals, single labels and
// public suffixes, so that two hosts are the same party when their registrable domains match.
func registrable(host string) string {
	if host == "" || isIP(host) {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// domainMatches reports whether host is d or one of its subdomains. d may be an entity,
// `name.*`, which stands for name under any public suffix (google.* is google.com, google.co.uk
// and their subdomains); suffix is the host's public suffix, computed by the caller once.
func domainMatches(host, d string, suffix *string) bool {
	if base, ok := strings.CutSuffix(d, ".*"); ok {
		if *suffix == "" {
			*suffix, _ = publicsuffix.PublicSuffix(host)
		}
		if len(host) <= len(*suffix)+1 {
			return false
		}
		rest := host[:len(host)-len(*suffix)-1]
		return rest == base || strings.HasSuffix(rest, "."+base)
	}
	return host == d || len(host) > len(d) && strings.HasSuffix(host, d) && host[len(host)-len(d)-1] == '.'
}

// domainSet is the value of `$domain=` or the domain list before `##`. The most specific entry
// that matches decides, so `a.com|~b.a.com` applies on a.com but not on b.a.com; with no entry
// matching, the set applies only when it has no positive entry.
type domainSet struct {
	incl, excl []string
	// Long lists (EasyList has rules with hundreds of domains) are looked up by the host and
	// its parents in a map instead; incl and excl then keep only the entities.
	inclMap, exclMap map[string]bool
	hasIncl          bool
}

// mapThreshold is the list length from which a map beats a scan.
const mapThreshold = 8

func (d *domainSet) compact() {
	d.hasIncl = len(d.incl) > 0
	if len(d.incl)+len(d.excl) < mapThreshold {
		return
	}
	d.inclMap, d.incl = splitEntities(d.incl)
	d.exclMap, d.excl = splitEntities(d.excl)
}

func splitEntities(list []string) (map[string]bool, []string) {
	m := make(map[string]bool, len(list))
	var ents []string
	for _, e := range list {
		if strings.HasSuffix(e, ".*") {
			ents = append(ents, e)
		} else {
			m[e] = true
		}
	}
	return m, ents
}

func (d *domainSet) match(host string) bool {
	if d == nil {
		return true
	}
	if host == "" {
		return !d.hasIncl
	}
	var suffix string
	best, bestIncl := -1, false
	if d.inclMap != nil || d.exclMap != nil {
		// The first parent found is the longest, hence the most specific, match.
		for h := host; h != ""; {
			if d.exclMap[h] {
				best = len(h)
				break
			}
			if d.inclMap[h] {
				best, bestIncl = len(h), true
				break
			}
			i := strings.IndexByte(h, '.')
			if i < 0 {
				break
			}
			h = h[i+1:]
		}
	}
	for _, e := range d.incl {
		if len(e) > best && domainMatches(host, e, &suffix) {
			best, bestIncl = len(e), true
		}
	}
	for _, e := range d.excl {
		if len(e) >= best && domainMatches(host, e, &suffix) {
			best, bestIncl = len(e), false
		}
	}
	if best < 0 {
		return !d.hasIncl
	}
	return bestIncl
}

// parseDomains reads a `|`- or `,`-separated domain list; ok is false when an entry is not a
// plain domain or entity (uBO's regex domains, for example).
func parseDomains(s string, sep byte) (*domainSet, bool) {
	d := &domainSet{}
	for _, e := range strings.Split(s, string(sep)) {
		e = strings.TrimSpace(e)
		neg := strings.HasPrefix(e, "~")
		if neg {
			e = e[1:]
		}
		e = normHost(e)
		if e == "" {
			continue
		}
		if !validDomain(e) {
			return nil, false
		}
		if neg {
			d.excl = append(d.excl, e)
		} else {
			d.incl = append(d.incl, e)
		}
	}
	if len(d.incl) == 0 && len(d.excl) == 0 {
		return nil, true
	}
	d.compact()
	return d, true
}

// validDomain accepts host names, IP literals and `name.*` entities; non-ASCII labels are
// accepted as written (they then only match hosts written the same way).
func validDomain(e string) bool {
	base := strings.TrimSuffix(e, ".*")
	if base == "" {
		return false
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_', c >= 0x80:
		case c == '[' || c == ']' || c == ':':
		default:
			return false
		}
	}
	return true
}

// hostKeys calls fn with host and each of its parent domains (a.b.c, b.c, c), then with the
// entity keys `name.*` the host can match, for index look-ups; fn returns false to stop.
func hostKeys(host string, fn func(key string) bool) {
	for h := host; h != ""; {
		if !fn(h) {
			return
		}
		i := strings.IndexByte(h, '.')
		if i < 0 {
			break
		}
		h = h[i+1:]
	}
	if isIP(host) {
		return
	}
	suffix, _ := publicsuffix.PublicSuffix(host)
	if len(host) <= len(suffix)+1 {
		return
	}
	for rest := host[:len(host)-len(suffix)-1]; rest != ""; {
		if !fn(rest + ".*") {
			return
		}
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
}

// included lists the positive entries, entities included.
func (d *domainSet) included() []string {
	out := append([]string(nil), d.incl...)
	for e := range d.inclMap {
		out = append(out, e)
	}
	return out
}
