package sign

import (
	"crypto/hmac"
	"strings"
)

// RenderPaths are the endpoints that also accept ScreenshotOne's signature form: their SDKs sign
// only take and animate, so the form is not offered where a ScreenshotOne client never sends it.
// The form covers the query alone, so a link signed for one of them also works on the other;
// /api/v1/screenshot, shotd's own name, takes shotd's form alone, which binds the path.
var RenderPaths = []string{"/api/v1/take", "/api/v1/animate", "/take", "/animate"}

// UnsignedQuery is the raw query string as sent, without its signature parameters: the bytes
// ScreenshotOne's SDKs sign (they build the query, sign its text, then append &signature=...).
// Parameters are compared by their raw name, so an encoded "signature" is kept, and then fails.
func UnsignedQuery(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	first := true
	for _, part := range strings.Split(raw, "&") {
		name, _, _ := strings.Cut(part, "=")
		if name == "signature" {
			continue
		}
		if !first {
			b.WriteByte('&')
		}
		first = false
		b.WriteString(part)
	}
	return b.String()
}

// SignQueryS1 is ScreenshotOne's signature of a raw query: the lower-case hex HMAC-SHA256 of the
// query text, without its signature, keyed with the secret. It covers neither the path nor the
// method: the query alone.
func SignQueryS1(secret, rawQuery string) string {
	return hexHMAC(secret, UnsignedQuery(rawQuery))
}

// VerifyQueryS1 compares a ScreenshotOne-form signature in constant time.
func VerifyQueryS1(secret, rawQuery, signature string) bool {
	return hmac.Equal([]byte(SignQueryS1(secret, rawQuery)), []byte(strings.ToLower(signature)))
}

// SignWebhookS1 is X-ScreenshotOne-Signature of a webhook body: the lower-case hex HMAC-SHA256
// of the raw body, keyed with the secret, as ScreenshotOne signs theirs.
func SignWebhookS1(secret string, body []byte) string { return hexHMAC(secret, string(body)) }
