package blocklist

import (
	"iter"
	"strings"
)

// refPattern is a compiled Adblock Plus URL pattern (not a regex rule): `*` splits it into
// segments, `^` inside a segment is the separator class, and the anchors say where the first
// refSegment must start and whether the last one must reach the end of the URL.
type refPattern struct {
	hostAnchor  bool // `||`: the first segment starts at the host or after a dot inside it
	startAnchor bool // `|` at the start: the first segment starts at the start of the URL
	endAnchor   bool // `|` at the end: the last segment ends at the end of the URL
	segs        []refSegment
}

// refSegment is a run of pattern text between two `*`. lit is the literal text before the first
// `^` (all of s when it has none), the part strings.Index can look for.
type refSegment struct {
	s      string
	lit    string
	hasSep bool
}

// refCompilePattern splits a pattern whose `||`, `|` anchors the caller already took off.
func refCompilePattern(p string, hostAnchor, startAnchor, endAnchor bool) refPattern {
	// A wildcard next to an anchor cancels it: `|*foo` is `foo`, and `||*foo` can start
	// anywhere from the host on, which the unanchored search covers.
	if strings.HasPrefix(p, "*") {
		hostAnchor, startAnchor = false, false
	}
	if strings.HasSuffix(p, "*") {
		endAnchor = false
	}
	pat := refPattern{hostAnchor: hostAnchor, startAnchor: startAnchor, endAnchor: endAnchor}
	for _, s := range strings.Split(p, "*") {
		if s == "" {
			continue
		}
		seg := refSegment{s: s, lit: s}
		if i := strings.IndexByte(s, '^'); i >= 0 {
			seg.hasSep = true
			seg.lit = s[:i]
		}
		pat.segs = append(pat.segs, seg)
	}
	return pat
}

// refIsSep reports whether c matches `^`: anything but a letter, a digit or one of `_-.%`. The end of
// the URL also matches `^`; segAt handles that.
func refIsSep(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return false
	case c == '_', c == '-', c == '.', c == '%':
		return false
	}
	return true
}

// refSegAt matches seg at exactly pos and returns where the match ends.
func refSegAt(u string, pos int, seg string) (int, bool) {
	i := pos
	for j := 0; j < len(seg); j++ {
		c := seg[j]
		if c == '^' {
			if i == len(u) {
				continue // `^` matches the end of the URL, zero wide
			}
			if !refIsSep(u[i]) {
				return 0, false
			}
			i++
			continue
		}
		if i >= len(u) || u[i] != c {
			return 0, false
		}
		i++
	}
	return i, true
}

// refSegFind finds the leftmost match of seg at or after pos. For `*`-separated segments of
// fixed-width parts, taking the leftmost match of each in turn never loses a match.
func refSegFind(u string, pos int, seg refSegment) (start, end int) {
	if !seg.hasSep {
		i := strings.Index(u[pos:], seg.s)
		if i < 0 {
			return -1, -1
		}
		return pos + i, pos + i + len(seg.s)
	}
	if seg.lit == "" {
		for s := pos; s <= len(u); s++ {
			if e, ok := refSegAt(u, s, seg.s); ok {
				return s, e
			}
		}
		return -1, -1
	}
	for from := pos; from <= len(u); {
		i := strings.Index(u[from:], seg.lit)
		if i < 0 {
			return -1, -1
		}
		s := from + i
		if e, ok := refSegAt(u, s, seg.s); ok {
			return s, e
		}
		from = s + 1
	}
	return -1, -1
}

// match reports whether the pattern matches u, whose host is u[hs:he].
func (p *refPattern) match(u string, hs, he int) bool {
	switch {
	case p.hostAnchor:
		if hs >= he {
			return false
		}
		if p.matchFrom(u, hs, true) {
			return true
		}
		for i := hs + 1; i < he; i++ {
			if u[i-1] == '.' && p.matchFrom(u, i, true) {
				return true
			}
		}
		return false
	case p.startAnchor:
		return p.matchFrom(u, 0, true)
	default:
		return p.matchFrom(u, 0, false)
	}
}

func (p *refPattern) matchFrom(u string, pos int, anchored bool) bool {
	n := len(p.segs)
	if n == 0 {
		return !p.endAnchor || !anchored || pos == len(u)
	}
	for i, seg := range p.segs {
		last := i == n-1
		if last && p.endAnchor {
			if i == 0 && anchored {
				e, ok := refSegAt(u, pos, seg.s)
				return ok && e == len(u)
			}
			// The last segment must end at the end: try the few starts that could.
			from := len(u) - len(seg.s)
			if from < pos {
				from = pos
			}
			for s := from; s <= len(u); s++ {
				if e, ok := refSegAt(u, s, seg.s); ok && e == len(u) {
					return true
				}
			}
			return false
		}
		if i == 0 && anchored {
			e, ok := refSegAt(u, pos, seg.s)
			if !ok {
				return false
			}
			pos = e
			continue
		}
		_, e := refSegFind(u, pos, seg)
		if e < 0 {
			return false
		}
		pos = e
	}
	return true
}

// refIsTokenChar is the alphabet of index tokens, on lower-cased text.
func refIsTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '%'
}

// refPatternTokens lists the tokens of a lower-cased pattern body that any matching URL must hold
// as a whole token: runs of token characters bounded on both sides by something that is neither
// a token character nor `*` (or by an anchor).
func refPatternTokens(p string, leftAnchored, endAnchor bool) []string {
	var toks []string
	for i, j := range refTokenRuns(p) {
		leftOK := i == 0 && leftAnchored || i > 0 && p[i-1] != '*'
		rightOK := j == len(p) && endAnchor || j < len(p) && p[j] != '*'
		if leftOK && rightOK {
			toks = append(toks, p[i:j])
		}
	}
	return toks
}

// refTokenRuns yields the start and end of every run of token characters in s, in order. The
// matcher's own scan of a URL (blocklist.go) hashes as it goes instead.
func refTokenRuns(s string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for i := 0; i < len(s); {
			if !refIsTokenChar(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && refIsTokenChar(s[j]) {
				j++
			}
			if !yield(i, j) {
				return
			}
			i = j
		}
	}
}

// refAsciiLower lower-cases ASCII letters only, so that byte offsets stay those of s; it returns s
// itself when there is nothing to change.
func refAsciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
