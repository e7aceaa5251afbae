package option

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shotd/shotd"
)

const testSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

func storeParams(kv ...string) Params {
	return q(append([]string{"url", "https://example.com/", "store", "true", "storage_bucket", "shots",
		"storage_access_key_id", "AKIDEXAMPLE", "storage_secret_access_key", testSecret}, kv...)...)
}

func TestStorageOptions(t *testing.T) {
	cases := []struct {
		name  string
		ps    Params
		field string // "" = valid
	}{
		{"minimal", storeParams(), ""},
		{"all", storeParams("storage_path", "shots/{{year}}/{{ uuid }}.{{extension}}", "storage_endpoint", "http://127.0.0.1:9000",
			"storage_acl", "public-read", "storage_class", "standard_ia", "storage_return_location", "true"), ""},
		{"storage option without store", q("url", "https://example.com/", "storage_bucket", "shots"), "storage_bucket"},
		{"store without bucket", without(storeParams(), "storage_bucket"), "storage_bucket"},
		{"store without key id", without(storeParams(), "storage_access_key_id"), "storage_access_key_id"},
		{"store without secret", without(storeParams(), "storage_secret_access_key"), "storage_secret_access_key"},
		{"store with cache", storeParams("cache", "true"), ""}, // a hit uploads the cached file
		{"unknown placeholder", storeParams("storage_path", "a/{{nope}}"), "storage_path"},
		{"absolute path", storeParams("storage_path", "/a"), "storage_path"},
		{"dot-dot path", storeParams("storage_path", "a/../b"), "storage_path"},
		{"endpoint with path", storeParams("storage_endpoint", "https://s3.example.com/bucket"), "storage_endpoint"},
		{"endpoint without scheme", storeParams("storage_endpoint", "s3.example.com"), "storage_endpoint"},
		{"bad bucket", storeParams("storage_bucket", "No_Such"), "storage_bucket"},
		{"bad acl", storeParams("storage_acl", "everyone"), "storage_acl"},
		{"bad class", storeParams("storage_class", "cold storage"), "storage_class"},
		{"secret with a space", q("url", "https://example.com/", "store", "true", "storage_bucket", "shots",
			"storage_access_key_id", "AKID", "storage_secret_access_key", "has space"), "storage_secret_access_key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := ParseOptions(c.ps, Limits{})
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !o.Store || o.Storage.Bucket != "shots" || o.Storage.Credentials.SecretAccessKey.Reveal() != testSecret {
					t.Fatalf("storage not applied: %+v", o.Storage)
				}
				return
			}
			e := wantCode(t, err, shotd.CodeInvalidOptions, c.field)
			if strings.Contains(fmt.Sprint(e.Message, e.Fields), "has space") {
				t.Fatalf("a credential was echoed: %+v", e)
			}
		})
	}
}

// TestStorageCredentialsNeverShown: the credentials are left out of the JSON of a job's options
// and print redacted, whatever prints the options.
func TestStorageCredentialsNeverShown(t *testing.T) {
	o, err := ParseOptions(storeParams(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []string{string(raw), fmt.Sprintf("%v %+v %#v %s", o, o, o, o.Storage.Credentials.SecretAccessKey)} {
		if strings.Contains(shown, testSecret) || strings.Contains(shown, "AKIDEXAMPLE") {
			t.Fatalf("credentials shown: %s", shown)
		}
	}
	if key := o.ResponseCacheKey("acc"); key != mustOptions(t, q("url", "https://example.com/")).ResponseCacheKey("acc") {
		t.Fatalf("storage options changed the cache key")
	}
}

func mustOptions(t *testing.T, ps Params) *shotd.Options {
	t.Helper()
	o, err := ParseOptions(ps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestExpandStoragePath(t *testing.T) {
	vals := map[string]string{"year": "2026", "extension": "png", "uuid": "u1"}
	cases := []struct{ name, tmpl, want string }{
		{"plain", "a/b", "a/b"},
		{"spaces", "{{ year }}/{{uuid}}.{{extension}}", "2026/u1.png"},
		{"unknown left", "{{hash}}", "{{hash}}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ExpandStoragePath(c.tmpl, vals); got != c.want {
				t.Fatalf("got %q want %q", got, c.want)
			}
		})
	}
}
