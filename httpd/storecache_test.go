package httpd_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shotd/shotd/internal/s3test"
)

// TestStoreFromCache: a store=true request answered from the response cache still uploads, the
// cached file to the path it names, and is answered as a fresh render would be (their store
// headers on ScreenshotOne's paths, store.location in a JSON result), unbilled; a hit of a
// request without store says nothing of where another request stored the file. On shotd's path
// and on theirs, whose schema accepts store=true with cache=true.
func TestStoreFromCache(t *testing.T) {
	srv := s3test.Start(t, "user")
	for _, path := range []string{"/api/v1/screenshot", "/take"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			a := newAccount(t, "default", true)
			dir := strings.TrimPrefix(path, "/") + "/" // the objects' keys
			// The same render each time: only where it goes, and whether, differs.
			render := func(kv ...string) []string {
				return append([]string{"url", page("/"), "format", "png", "viewport_width", "200", "viewport_height", "150", "cache", "true"}, kv...)
			}
			stored := func(key string, kv ...string) []string {
				return render(append([]string{"store", "true", "storage_bucket", "user", "storage_endpoint", srv.Endpoint(),
					"storage_access_key_id", s3test.AccessKey, "storage_secret_access_key", s3test.SecretKey,
					"storage_path", key, "storage_return_location", "true"}, kv...)...)
			}
			call := func(cache string, kv []string) answer {
				t.Helper()
				r := get(t, path, a.q(kv...))
				if r.status != 200 || r.header.Get("X-Cache") != cache {
					t.Fatalf("%d X-Cache %q, want 200 %s: %.300s", r.status, r.header.Get("X-Cache"), cache, r.body)
				}
				return r
			}
			object := func(key string) []byte {
				t.Helper()
				obj, err := srv.Object("user", key)
				if err != nil {
					t.Fatalf("%s was not uploaded: %v", key, err)
				}
				return obj
			}
			storeKey := func(r answer, want string) {
				t.Helper()
				if path != "/take" {
					return // shotd's path has no such headers
				}
				if b, k := r.header.Get("X-ScreenshotOne-Store-Bucket"), r.header.Get("X-ScreenshotOne-Store-Key"); want != "" && (b != "user" || k != want) ||
					want == "" && (b != "" || k != "") {
					t.Errorf("store headers: bucket %q key %q, want key %q", b, k, want)
				}
			}
			location := func(r answer, want string) {
				t.Helper()
				if got := storeLocation(t, r.body); want == "" && got != "" || want != "" && !strings.HasSuffix(got, "/user/"+want) {
					t.Errorf("store.location %q, want that of %q", got, want)
				}
			}

			miss := call("MISS", stored(dir+"first"))
			first := object(dir + "first.png")
			if !bytes.Equal(first, miss.body) {
				t.Fatal("the object is not the rendered file")
			}
			storeKey(miss, dir+"first.png")

			hit := call("HIT", stored(dir+"second"))
			if !bytes.Equal(object(dir+"second.png"), first) || !bytes.Equal(hit.body, first) {
				t.Error("the hit's object or answer is not the cached file")
			}
			storeKey(hit, dir+"second.png")

			j := call("HIT", stored(dir+"third", "response_type", "json"))
			object(dir + "third.png")
			location(j, dir+"third.png")
			storeKey(j, dir+"third.png")

			storeKey(call("HIT", stored(dir+"fourth", "response_type", "empty")), dir+"fourth.png")
			object(dir + "fourth.png")

			// Without store: the same entry, nothing of the uploads.
			storeKey(call("HIT", render()), "")
			location(call("HIT", render("response_type", "json")), "")

			if u := usageNow(t, a); u.Quota.Used != 1 || u.Renders.CacheHits != 5 {
				t.Errorf("usage %+v %+v: want 1 billed render and 5 cache hits", u.Quota, u.Renders)
			}

			// A hit whose upload fails is answered as a render's failed upload is.
			want := map[string]string{"/api/v1/screenshot": `"storage_failed"`, "/take": `"storage_returned_transient_error"`}[path]
			q := a.q(stored(dir + "fifth")...)
			q.Set("storage_bucket", "nosuch")
			if r := get(t, path, q); r.status < 400 || !strings.Contains(string(r.body), want) {
				t.Errorf("upload to a missing bucket: %d %.300s, want %s", r.status, r.body, want)
			}
		})
	}
}

// TestStoreFromCacheJobs: a store=true job answered from the response cache uploads too, and its
// result names its own upload; a job without store names none.
func TestStoreFromCacheJobs(t *testing.T) {
	srv := s3test.Start(t, "user")
	a := newAccount(t, "default", true)
	job := func(cache string, kv ...any) string {
		t.Helper()
		o := map[string]any{"url": page("/"), "viewport_width": 200, "viewport_height": 150, "cache": true}
		for i := 0; i < len(kv); i += 2 {
			o[kv[i].(string)] = kv[i+1]
		}
		id := submit(t, a.key.AccessKey, o)
		if j := waitFinal(t, a.key.AccessKey, id); j.Status != "succeeded" || j.Result.Cache != cache {
			t.Fatalf("job %s: %s %s %+v, want succeeded, %s", id, j.Status, j.ErrorMessage, j.Result, cache)
		}
		r := get(t, "/api/v1/jobs/"+id, a.q())
		var rec struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(r.body, &rec); err != nil {
			t.Fatal(err)
		}
		return storeLocation(t, rec.Result)
	}
	stored := func(key string) []any {
		return []any{"store", true, "storage_bucket", "user", "storage_endpoint", srv.Endpoint(),
			"storage_access_key_id", s3test.AccessKey, "storage_secret_access_key", s3test.SecretKey,
			"storage_path", key, "storage_return_location", true}
	}
	for i, key := range []string{"jobs/first", "jobs/second"} {
		cache := map[int]string{0: "MISS", 1: "HIT"}[i]
		if loc := job(cache, stored(key)...); !strings.HasSuffix(loc, "/user/"+key+".png") {
			t.Errorf("%s: store.location %q", key, loc)
		}
		if _, err := srv.Object("user", key+".png"); err != nil {
			t.Errorf("%s was not uploaded: %v", key, err)
		}
	}
	if loc := job("HIT"); loc != "" {
		t.Errorf("a job without store: store.location %q", loc)
	}
	if u := usageNow(t, a); u.Quota.Used != 1 {
		t.Errorf("usage %+v: want 1 billed render", u.Quota)
	}
}

// storeLocation is store.location of a JSON result ("" when it has none).
func storeLocation(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		Store *struct {
			Location string `json:"location"`
		} `json:"store"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Store == nil {
		return ""
	}
	return r.Store.Location
}
