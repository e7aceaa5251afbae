package httpd_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shotd/shotd/internal/s3test"
)

// TestScreenshotOneStoreHeaders: a store=true request on their paths is told, in the headers
// their SDK's store() reads, the bucket and the key of the object, whatever the answer's type;
// an answer that stored nothing carries neither.
func TestScreenshotOneStoreHeaders(t *testing.T) {
	srv := s3test.Start(t, "user")
	a := newAccount(t, "jobs", true)
	small := []string{"url", page("/"), "viewport_width", "200", "viewport_height", "150"}
	stored := func(kv ...string) []string {
		return append(append([]string{"store", "true", "storage_bucket", "user", "storage_endpoint", srv.Endpoint(),
			"storage_access_key_id", s3test.AccessKey, "storage_secret_access_key", s3test.SecretKey,
			"storage_path", "shots/{{uuid}}"}, small...), kv...)
	}
	for _, rt := range []string{"by_format", "json", "empty"} {
		r := get(t, "/take", a.q(stored("response_type", rt)...))
		if r.status != 200 {
			t.Fatalf("%s: %d %.300s", rt, r.status, r.body)
		}
		key := r.header.Get("X-ScreenshotOne-Store-Key")
		if b := r.header.Get("X-ScreenshotOne-Store-Bucket"); b != "user" || !strings.HasPrefix(key, "shots/") || !strings.HasSuffix(key, ".jpeg") {
			t.Fatalf("%s: bucket %q key %q", rt, b, key)
		}
		obj, err := srv.Object("user", key)
		if err != nil {
			t.Fatalf("%s: the key does not name the stored object: %v", rt, err)
		}
		if rt == "by_format" && !bytes.Equal(obj, r.body) {
			t.Errorf("the object of %s is not the answer's file", key)
		}
	}
	r := get(t, "/take", a.q(small...))
	if r.status != 200 || r.header.Get("X-ScreenshotOne-Store-Key") != "" || r.header.Get("X-ScreenshotOne-Store-Bucket") != "" {
		t.Errorf("without store: %d %v", r.status, r.header)
	}
}

// TestScreenshotOneMetadataHeaders: a binary answer carries the page's status and headers that
// metadata_http_response_* asked for, the headers as one line of JSON; nothing when not asked,
// and nothing on a JSON answer, whose body has them.
func TestScreenshotOneMetadataHeaders(t *testing.T) {
	a := newAccount(t, "jobs", true)
	small := []string{"url", page("/"), "viewport_width", "200", "viewport_height", "150"}
	for _, path := range []string{"/take", "/animate"} {
		kv := append([]string{"metadata_http_response_status_code", "true", "metadata_http_response_headers", "true"}, small...)
		if path == "/animate" {
			kv = append(kv, "duration", "1")
		}
		r := get(t, path, a.q(kv...))
		if r.status != 200 {
			t.Fatalf("%s: %d %.300s", path, r.status, r.body)
		}
		if st := r.header.Get("X-ScreenshotOne-HTTP-Response-Status-Code"); st != "200" {
			t.Errorf("%s: status header %q", path, st)
		}
		var hs map[string]string
		raw := r.header.Get("X-ScreenshotOne-HTTP-Response-Headers")
		if err := json.Unmarshal([]byte(raw), &hs); err != nil || hs["content-type"] != "text/html" || hs["x-fixture"] != "a \"quoted\" value" {
			t.Errorf("%s: headers header %q (%v)", path, raw, err)
		}
	}
	// A cached render answers its metadata too.
	cached := append([]string{"cache", "true", "metadata_http_response_status_code", "true"}, small...)
	for i := range 2 {
		if r := get(t, "/take", a.q(cached...)); r.header.Get("X-ScreenshotOne-HTTP-Response-Status-Code") != "200" {
			t.Errorf("cache=true, request %d (X-Cache %s): %v", i, r.header.Get("X-Cache"), r.header)
		} else if i == 1 && r.header.Get("X-Cache") != "HIT" {
			t.Errorf("the second request was not a hit: %v", r.header)
		}
	}
	only := get(t, "/take", a.q(append([]string{"metadata_http_response_status_code", "true"}, small...)...))
	if only.header.Get("X-ScreenshotOne-HTTP-Response-Status-Code") != "200" || only.header.Get("X-ScreenshotOne-HTTP-Response-Headers") != "" {
		t.Errorf("status only: %v", only.header)
	}
	for name, kv := range map[string][]string{
		"not asked": small,
		"json":      append([]string{"response_type", "json", "metadata_http_response_status_code", "true", "metadata_http_response_headers", "true"}, small...),
	} {
		r := get(t, "/take", a.q(kv...))
		if r.status != 200 {
			t.Fatalf("%s: %d %.300s", name, r.status, r.body)
		}
		for k := range r.header {
			if strings.HasPrefix(k, "X-Screenshotone-") {
				t.Errorf("%s: %s: %q", name, k, r.header.Get(k))
			}
		}
	}
}
