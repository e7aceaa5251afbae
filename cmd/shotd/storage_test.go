package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/internal/testkit"
)

// result is the JSON render result with the store part of store=true.
type result struct {
	FileID string `json:"file_id"`
	URL    string `json:"url"`
	Store  *struct {
		Location string `json:"location"`
	} `json:"store"`
	ErrorCode string `json:"error_code"`
}

// TestS3Storage runs the real binary with [storage.s3] on a real S3 server (versitygw on
// loopback): every stored result is an object of the service's bucket linked by a presigned GET,
// store=true uploads to the client's bucket (sync and as a job), its failures answer documented
// codes, and the client's credentials appear neither in the database nor in the log.
func TestS3Storage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Chrome")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s3 := s3test.Start(t, "results")
	// The client's own bucket is on another server: the service's own bucket is refused to
	// every storage_endpoint, as to every page.
	s3user := s3test.Start(t, "user")
	run := newRunRoot(ctx, t, "shotd-s3-")
	fx := testkit.StartPages(t, time.Second)

	cfgPath := filepath.Join(run.root, "shotd.toml")
	cfg := fmt.Sprintf(`listen = "127.0.0.1:0"
admin_listen = "127.0.0.1:0"
data_dir = %q
public_url = "http://127.0.0.1:1"

[browser]
pool_size = 1

[network]
allow_private = ["127.0.0.1/32"]

[storage.s3]
endpoint = %q
bucket = "results"
prefix = "shotd/"
addressing = "path"
access_key_id = %q
secret_access_key = %q

[log]
format = "json"
`, run.dataDir, s3.Endpoint(), s3test.AccessKey, s3test.SecretKey)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := startService(ctx, t, run.bin, cfgPath, run.tmpDir, "s3")
	cl := &client{t: t, ctx: ctx, key: svc.accessKey}
	post := func(opts map[string]any, v any) int {
		b, _ := json.Marshal(opts)
		return cl.do(http.MethodPost, svc.base+"/api/v1/screenshot", b, v)
	}
	// The client's own bucket: another server, another bucket and its own secret in the request.
	const userSecret = s3test.SecretKey
	store := func(kv ...any) map[string]any {
		m := map[string]any{"url": fx.URL("/fast?n=s3"), "response_type": "json", "store": true,
			"storage_bucket": "user", "storage_endpoint": s3user.Endpoint(), "storage_access_key_id": s3test.AccessKey,
			"storage_secret_access_key": userSecret, "storage_path": "shots/{{uuid}}", "storage_return_location": true}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	t.Run("stored result is a presigned object", func(t *testing.T) {
		var r result
		if st := post(map[string]any{"url": fx.URL("/fast?n=json"), "response_type": "json"}, &r); st != 200 {
			t.Fatalf("status %d %+v", st, r)
		}
		if !strings.HasPrefix(r.URL, s3.Endpoint()+"/results/shotd/"+r.FileID+"?") {
			t.Fatalf("url is not a presigned link of the bucket: %s", r.URL)
		}
		resp, err := http.Get(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.HasPrefix(body, []byte("\x89PNG")) {
			t.Fatalf("presigned GET: %d, %d bytes", resp.StatusCode, len(body))
		}
		if obj, err := s3.Object("results", "shotd/"+r.FileID); err != nil || !bytes.Equal(obj, body) {
			t.Fatalf("object: %v", err)
		}
		// The files endpoint serves the same object.
		req, _ := http.NewRequest(http.MethodGet, svc.base+"/api/v1/files/"+r.FileID, nil)
		req.Header.Set("X-Access-Key", svc.accessKey)
		resp, err = httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(got, body) {
			t.Fatalf("files endpoint: %d, %d bytes", resp.StatusCode, len(got))
		}
	})

	t.Run("store=true lands in the client's bucket", func(t *testing.T) {
		var r result
		if st := post(store(), &r); st != 200 || r.Store == nil {
			t.Fatalf("status %d %+v", st, r)
		}
		key, ok := strings.CutPrefix(r.Store.Location, s3user.Endpoint()+"/user/")
		if !ok || !strings.HasPrefix(key, "shots/") || !strings.HasSuffix(key, ".png") {
			t.Fatalf("location %q", r.Store.Location)
		}
		if obj, err := s3user.Object("user", key); err != nil || !bytes.HasPrefix(obj, []byte("\x89PNG")) {
			t.Fatalf("object %s: %v", key, err)
		}
	})

	refusals := []struct {
		name   string
		opts   map[string]any
		status int
		code   string
	}{
		{"wrong credentials", store("storage_secret_access_key", "wrong-secret-value"), 502, "storage_failed"},
		{"missing bucket", store("storage_bucket", "no-such-bucket"), 502, "storage_failed"},
		{"endpoint the guard refuses", store("storage_endpoint", strings.Replace(s3user.Endpoint(), "127.0.0.1", "127.0.0.3", 1)), 403, "host_not_allowed"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			var r result
			if st := post(c.opts, &r); st != c.status || r.ErrorCode != c.code {
				t.Fatalf("got %d %q, want %d %s", st, r.ErrorCode, c.status, c.code)
			}
		})
	}

	t.Run("a job uploads too", func(t *testing.T) {
		id := cl.async(svc.base, store("storage_path", "jobs/{{uuid}}"))
		var j struct {
			Status string  `json:"status"`
			Result *result `json:"result"`
		}
		for end := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			cl.do(http.MethodGet, svc.base+"/api/v1/jobs/"+id, nil, &j)
			if j.Status == "succeeded" || j.Status == "failed" {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("job still %s", j.Status)
			}
		}
		if j.Status != "succeeded" || j.Result == nil || j.Result.Store == nil {
			t.Fatalf("job: %+v", j)
		}
		key, _ := strings.CutPrefix(j.Result.Store.Location, s3user.Endpoint()+"/user/")
		if _, err := s3user.Object("user", key); err != nil || !strings.HasPrefix(key, "jobs/") {
			t.Fatalf("object %q: %v", key, err)
		}
	})

	svc.stop(t, 30*time.Second)
	db, err := os.ReadFile(filepath.Join(run.dataDir, "shotd.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{userSecret, "wrong-secret-value"} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("the database holds a storage secret in clear")
		}
		if strings.Contains(svc.logTail(), secret) {
			t.Errorf("the log shows a storage secret")
		}
	}
}
