package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/shotd/shotd/option"
)

// SigningPath is the path a signature covers: /api/v1/take signs as /api/v1/screenshot so that one
// signed link works on both aliases.
func SigningPath(path string) string {
	if path == "/api/v1/take" {
		return "/api/v1/screenshot"
	}
	return path
}

// CanonicalQuery is the query a signature covers: every parameter except signature, name and
// value RFC 3986 encoded, pairs sorted by encoded name then encoded value, joined with &.
func CanonicalQuery(ps option.Params) string {
	type pair struct{ k, v string }
	var pairs []pair
	for _, p := range ps {
		if p.Name == "signature" {
			continue
		}
		k := encodeRFC3986(p.Name)
		for _, v := range p.Values {
			pairs = append(pairs, pair{k, encodeRFC3986(v)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// StringToSign is the text a request signature is computed over.
func StringToSign(path string, ps option.Params) string {
	return SigningPath(path) + "?" + CanonicalQuery(ps)
}

// Sign returns the lower-case hex HMAC-SHA256 of the request, keyed with secret.
func Sign(secret, path string, ps option.Params) string {
	return hexHMAC(secret, StringToSign(path, ps))
}

// VerifySignature compares in constant time.
func VerifySignature(secret, path string, ps option.Params, signature string) bool {
	want := Sign(secret, path, ps)
	return hmac.Equal([]byte(want), []byte(strings.ToLower(signature)))
}

// SignWebhook returns x-signature for a webhook body: HMAC-SHA256 of "<timestamp>.<raw body>".
func SignWebhook(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func hexHMAC(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// encodeRFC3986 keeps A-Z a-z 0-9 - . _ ~ and writes every other byte as %XX upper case.
func encodeRFC3986(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
