package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/objstore"
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
			// A hit (nothing billed, no render), whose failed upload counts as a failure, not a hit.
			if u := usageNow(t, a); u.Quota.Used != 1 || u.Renders.CacheHits != 5 || u.Renders.Failed != 1 {
				t.Errorf("usage %+v %+v after the failed upload: want 1 billed render, 5 cache hits, 1 failure", u.Quota, u.Renders)
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

// slowS3 is a loopback proxy in front of srv that holds every upload (PUT) until release is
// called: started is closed when the first one arrives.
func slowS3(t *testing.T, srv *s3test.Server) (endpoint string, started <-chan struct{}, release func()) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host the client signed
	arrived, free := make(chan struct{}), make(chan struct{})
	var once, freeOnce sync.Once
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			once.Do(func() { close(arrived) })
			select {
			case <-free:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	release = func() { freeOnce.Do(func() { close(free) }) }
	t.Cleanup(ps.Close)
	t.Cleanup(release) // runs first
	return ps.URL, arrived, release
}

// storedQuery is tiny's render with cache=true, uploaded to bucket "user" of endpoint as key.
func storedQuery(a account, endpoint, key string) url.Values {
	return tiny(a, "cache", "true", "store", "true", "storage_bucket", "user", "storage_endpoint", endpoint,
		"storage_access_key_id", s3test.AccessKey, "storage_secret_access_key", s3test.SecretKey, "storage_path", key)
}

// TestStoreFromCacheLimits: a store=true hit, which uploads, holds a concurrency slot while it
// does: a second one of an account whose plan allows one at a time is refused
// concurrency_limit, and a hit without store, which uploads nothing, is not.
func TestStoreFromCacheLimits(t *testing.T) {
	srv := s3test.Start(t, "user")
	endpoint, started, release := slowS3(t, srv)
	a := newAccount(t, "lim_conc", true)
	getMiss(t, tiny(a, "cache", "true"))

	first := make(chan answer, 1)
	go func() { first <- get(t, "/api/v1/screenshot", storedQuery(a, endpoint, "limits/first")) }()
	select {
	case <-started:
	case r := <-first:
		t.Fatalf("the first hit answered before its upload arrived: %d %s", r.status, codeOf(r))
	}
	wantError(t, get(t, "/api/v1/screenshot", storedQuery(a, endpoint, "limits/second")), 429, shotd.CodeConcurrencyLimit)
	if r := get(t, "/api/v1/screenshot", tiny(a, "cache", "true")); r.status != 200 || r.header.Get("X-Cache") != "HIT" {
		t.Errorf("a hit without store while the upload runs: %d %s X-Cache %q", r.status, codeOf(r), r.header.Get("X-Cache"))
	}
	release()
	if r := <-first; r.status != 200 || r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("the first hit: %d %s X-Cache %q", r.status, codeOf(r), r.header.Get("X-Cache"))
	}
	if _, err := srv.Object("user", "limits/first.png"); err != nil {
		t.Errorf("the first hit was not uploaded: %v", err)
	}
}

// TestStoreFromCacheShutdown: a graceful shutdown waits for a store=true hit's upload under way,
// which completes, rather than aborting it.
func TestStoreFromCacheShutdown(t *testing.T) {
	srv := s3test.Start(t, "user")
	endpoint, started, release := slowS3(t, srv)
	a := newAccount(t, "default", true)
	getMiss(t, tiny(a, "cache", "true"))

	api := httpd.New(httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, FileTTL: time.Hour},
		httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: env.renderer, Gate: env.accounts, Files: env.st, Records: env.st,
			Uploader: &objstore.Uploader{Dial: env.guard.DialContext, Attempts: 1, Timeout: time.Minute}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- api.Serve(ln) }()
	hit := make(chan answer, 1)
	go func() {
		hit <- do(t, http.MethodGet, "http://"+ln.Addr().String()+"/api/v1/screenshot?"+storedQuery(a, endpoint, "shutdown/hit").Encode(), nil, nil)
	}()
	select {
	case <-started:
	case r := <-hit:
		t.Fatalf("the hit answered before its upload arrived: %d %s", r.status, codeOf(r))
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- api.Shutdown(ctx)
	}()
	// The shutdown has begun once the listener refuses: the upload is let go only then.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	release()
	if r := <-hit; r.status != 200 || r.header.Get("X-Cache") != "HIT" {
		t.Errorf("the hit during a graceful shutdown: %d %s X-Cache %q, want 200 HIT", r.status, codeOf(r), r.header.Get("X-Cache"))
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	<-served
	if _, err := srv.Object("user", "shutdown/hit.png"); err != nil {
		t.Errorf("the hit was not uploaded: %v", err)
	}
}

// closedFiles hands out every file it opens closed: reading it fails, as a disk error would.
type closedFiles struct{ httpd.Files }

func (c closedFiles) OpenFile(rec shotd.FileRecord) (*os.File, error) {
	f, err := c.Files.OpenFile(rec)
	if err == nil {
		f.Close()
	}
	return f, err
}

// TestStoreFromCacheUnreadable: a store=true hit whose cached file cannot be read is the
// service's trouble, not the client's: the request renders afresh (a miss, billed as a render)
// and uploads that render, as a job does; neither a failure of the account nor a hit.
func TestStoreFromCacheUnreadable(t *testing.T) {
	srv := s3test.Start(t, "user")
	up := &objstore.Uploader{Dial: env.guard.DialContext, Attempts: 1, Timeout: time.Minute}
	base := startServer(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, FileTTL: time.Hour},
		httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: up.Wrap(env.renderer), Gate: env.accounts,
			Files: closedFiles{env.st}, Records: env.st, Uploader: up})
	a := newAccount(t, "default", true)
	getMiss(t, tiny(a, "cache", "true"))
	r := do(t, http.MethodGet, base+"/api/v1/screenshot?"+storedQuery(a, srv.Endpoint(), "unreadable/hit").Encode(), nil, nil)
	if r.status != 200 || r.header.Get("X-Cache") != "MISS" {
		t.Fatalf("%d X-Cache %q, want 200 MISS: %.300s", r.status, r.header.Get("X-Cache"), r.body)
	}
	if u := usageNow(t, a); u.Quota.Used != 2 || u.Renders.Failed != 0 || u.Renders.CacheHits != 0 {
		t.Errorf("usage %+v %+v: want two renders, no failure, no hit", u.Quota, u.Renders)
	}
	obj, err := srv.Object("user", "unreadable/hit.png")
	if err != nil {
		t.Fatalf("the render was not uploaded: %v", err)
	}
	if !bytes.Equal(obj, r.body) {
		t.Error("the upload is not the answer's render")
	}
}
