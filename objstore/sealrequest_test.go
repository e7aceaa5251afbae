package objstore

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/shotd/shotd"
)

// TestSealRequestOptions: headers, cookies and authorization are sealed like the other
// credentials: absent from the record's JSON, back whole with the same key, internal_error with
// another; the caller's options are untouched.
func TestSealRequestOptions(t *testing.T) {
	s, err := OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := &shotd.Options{URL: "http://127.0.0.1/", Headers: []shotd.Header{{Name: "X-Key", Value: "hdr-s3cret"}},
		Cookies: []shotd.Cookie{{Name: "sid", Value: "cookie-s3cret", Domain: "127.0.0.1"}}, Authorization: "Bearer auth-s3cret"}
	if !o.HasSecrets() {
		t.Fatal("headers, cookies and authorization are no secrets")
	}
	sealed, err := s.SealOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Authorization == "" || o.SealedRequest != nil || len(o.Headers) != 1 {
		t.Fatal("SealOptions changed the caller's options")
	}
	raw, err := json.Marshal(sealed)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hdr-s3cret", "cookie-s3cret", "auth-s3cret", "X-Key"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("the record holds %s in clear: %s", secret, raw)
		}
	}
	var back shotd.Options
	if err := json.Unmarshal(raw, &back); err != nil || !back.HasSecrets() {
		t.Fatalf("the record lost its sealed request (%v)", err)
	}
	if err := s.OpenOptions(&back); err != nil {
		t.Fatal(err)
	}
	if len(back.Headers) != 1 || back.Headers[0] != o.Headers[0] || len(back.Cookies) != 1 || back.Cookies[0] != o.Cookies[0] ||
		back.Authorization != o.Authorization || back.SealedRequest != nil {
		t.Fatalf("opened %+v %+v %q", back.Headers, back.Cookies, back.Authorization)
	}
	other, err := OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	back = shotd.Options{}
	_ = json.Unmarshal(raw, &back)
	if err := other.OpenOptions(&back); shotd.CodeOf(err) != shotd.CodeInternalError {
		t.Fatalf("another key: %v, want internal_error", err)
	}
}
