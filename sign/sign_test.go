package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

func TestCanonicalQuery(t *testing.T) {
	cases := []struct {
		name string
		ps   option.Params
		want string
	}{
		{"sorted, signature left out", q("url", "https://a.example/?x=1 2", "access_key", "k", "signature", "abc"),
			"access_key=k&url=https%3A%2F%2Fa.example%2F%3Fx%3D1%202"},
		{"unreserved kept", q("cache_key", "A-z.0_9~"), "cache_key=A-z.0_9~"},
		{"repeated sorted by value", option.Params{{Name: "headers", Values: []string{"b: 2", "a: 1"}}}, "headers=a%3A%201&headers=b%3A%202"},
		{"utf-8 bytes", q("html", "é"), "html=%C3%A9"},
		{"empty", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CanonicalQuery(c.ps); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestSignature(t *testing.T) {
	ps := q("url", "https://a.example/", "access_key", "ak", "expires", "2000000000")
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte("/api/v1/screenshot?access_key=ak&expires=2000000000&url=https%3A%2F%2Fa.example%2F"))
	want := hex.EncodeToString(mac.Sum(nil))
	if got := Sign("secret", "/api/v1/take", ps); got != want {
		t.Fatalf("take must sign as screenshot: got %s want %s", got, want)
	}
	cases := []struct {
		name   string
		secret string
		path   string
		ps     option.Params
		sig    string
		ok     bool
	}{
		{"valid", "secret", "/api/v1/screenshot", ps, want, true},
		{"valid on alias", "secret", "/api/v1/take", ps, want, true},
		{"upper-case hex", "secret", "/api/v1/screenshot", ps, hexUpper(want), true},
		{"other secret", "other", "/api/v1/screenshot", ps, want, false},
		{"other endpoint", "secret", "/api/v1/usage", ps, want, false},
		{"param added", "secret", "/api/v1/screenshot", append(ps, option.Param{Name: "full_page", Values: []string{"true"}}), want, false},
		{"param edited", "secret", "/api/v1/screenshot", q("url", "https://b.example/", "access_key", "ak", "expires", "2000000000"), want, false},
		{"param removed", "secret", "/api/v1/screenshot", q("url", "https://a.example/", "access_key", "ak"), want, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := VerifySignature(c.secret, c.path, c.ps, c.sig); got != c.ok {
				t.Fatalf("VerifySignature = %v, want %v", got, c.ok)
			}
		})
	}
}

func hexUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func TestSignWebhook(t *testing.T) {
	mac := hmac.New(sha256.New, []byte("s"))
	mac.Write([]byte("1700000000.{\"a\":1}"))
	if got, want := SignWebhook("s", 1700000000, []byte(`{"a":1}`)), hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

// TestSignatureOneMeaning: a signed query link re-sent as a POST body signs alike:
// `block_requests=*ads*,*track*` (two patterns) and ["*ads*,*track*"] (one, a JSON array's
// items being whole). So the signed JSON form is refused rather than given another meaning.
func TestSignatureOneMeaning(t *testing.T) {
	cases := []struct {
		name, option, query, json string
	}{
		{"patterns", "block_requests", "*ads*,*track*", `["*ads*,*track*"]`},
		{"patterns with spaces", "block_requests", "*ads* , *track*", `["*ads* , *track*"]`},
		{"selectors", "hide_selectors", ".a,.b", `[".a,.b"]`},
		{"resource kinds", "block_resources", "image,font", `["image,font"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := c.option
			fromQuery := q("url", "https://a.example/", name, c.query, "signature", "00")
			fromJSON, err := option.ParamsFromJSON([]byte(`{"url":"https://a.example/","` + name + `":` + c.json + `,"signature":"00"}`))
			if err != nil {
				t.Fatal(err)
			}
			if CanonicalQuery(fromQuery) != CanonicalQuery(fromJSON) {
				t.Fatalf("the forms sign differently: %q, %q", CanonicalQuery(fromQuery), CanonicalQuery(fromJSON))
			}
			if o := mustParse(t, fromQuery); len(o.BlockRequests)+len(o.HideSelectors)+len(o.BlockResources) != 2 {
				t.Fatalf("the query's value is not two items: %+v", o)
			}
			_, err = option.ParseOptions(fromJSON, option.Limits{})
			if e := shotd.AsError(err); e == nil || e.Code != shotd.CodeInvalidOptions || len(e.Fields) != 1 || e.Fields[0].Field != name {
				t.Fatalf("the signed JSON form: %v, want invalid_options on %s", err, name)
			}
		})
	}
}

func q(kv ...string) option.Params {
	var ps option.Params
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, option.Param{Name: kv[i], Values: []string{kv[i+1]}})
	}
	return ps
}

func mustParse(t *testing.T, ps option.Params) *shotd.Options {
	t.Helper()
	o, err := option.ParseOptions(ps, option.Limits{})
	if err != nil {
		t.Fatalf("ParseOptions(%v): %v", ps, err)
	}
	return o
}
