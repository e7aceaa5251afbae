package shotd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ResponseCacheKey is the response-cache key of a render for an account: a hash of the account and
// of every option that changes the output. Authentication, async, webhook, response_type and the
// cache controls themselves are left out (cache_key is kept: changing it forces a fresh render). It
// hashes the validated values, so an option given at its default and one left out agree.
func (o *Options) ResponseCacheKey(accountID string) string {
	c := *o
	c.AccessKey, c.Signature, c.Expires, c.HasExpires = "", "", 0, false
	c.Async, c.WebhookURL, c.WebhookSign = false, "", false
	c.ResponseType, c.Cache, c.CacheTTL, c.Given = "", false, 0, nil
	if o.Slices && o.ResponseType != "json" && !o.Async {
		c.ResponseType = "zip" // the slices are a zip in any other answer than JSON
	}
	c.ExternalIdentifier, c.NoWebhookErrors = "", false // not part of the file
	c.Store, c.Storage = false, StorageTarget{}         // where a file goes does not change its bytes
	b, err := json.Marshal(&c)
	if err != nil {
		panic("shotd: options do not marshal: " + err.Error()) // plain data; cannot happen
	}
	h := sha256.New()
	h.Write([]byte(accountID))
	h.Write([]byte{0})
	h.Write(b)
	if p := o.Proxy; p != nil {
		// Left out of JSON, the proxy's user can still pick what the page sees (providers
		// encode a country or a session in it); the password cannot.
		h.Write([]byte{0})
		h.Write([]byte(p.Username.Reveal()))
	}
	return hex.EncodeToString(h.Sum(nil))
}
