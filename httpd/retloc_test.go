package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/internal/testkit"
)

// TestStorageReturnLocation: store.location, the uploaded object's address, is in a JSON
// answer, a job's result and a webhook body only when storage_return_location=true asked for
// it, on shotd's paths and on ScreenshotOne's, whose binary answer then carries it in
// X-ScreenshotOne-Store-Location, as theirs does. The object is uploaded either way, and their
// bucket and key headers tell it either way. Their executed /bulk item answers as /take does.
func TestStorageReturnLocation(t *testing.T) {
	srv := s3test.Start(t, "user")
	a := newAccount(t, "jobs", true)
	for _, path := range []string{"/api/v1/screenshot", "/take"} {
		for _, ask := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/return_location=%v", strings.TrimPrefix(path, "/"), ask), func(t *testing.T) {
				s1 := path == "/take"
				n := 0
				// stored is a store=true request of a new object, and that object's key.
				stored := func(kv ...string) ([]string, string) {
					n++
					key := fmt.Sprintf("retloc/%s/%v/%d", strings.TrimPrefix(path, "/"), ask, n)
					q := []string{"url", page("/"), "format", "png", "viewport_width", "200", "viewport_height", "150",
						"store", "true", "storage_bucket", "user", "storage_endpoint", srv.Endpoint(),
						"storage_access_key_id", s3test.AccessKey, "storage_secret_access_key", s3test.SecretKey, "storage_path", key}
					if ask {
						q = append(q, "storage_return_location", "true")
					}
					return append(q, kv...), key + ".png"
				}
				check := func(what, got, key string) {
					t.Helper()
					if _, err := srv.Object("user", key); err != nil {
						t.Errorf("%s: %s was not uploaded: %v", what, key, err)
					}
					if ask && !strings.HasSuffix(got, "/user/"+key) || !ask && got != "" {
						t.Errorf("%s: location %q, want that of %s only when asked", what, got, key)
					}
				}
				ok := func(r answer, status int) answer {
					t.Helper()
					if r.status != status {
						t.Fatalf("%d, want %d: %.300s", r.status, status, r.body)
					}
					return r
				}

				q, key := stored("response_type", "json")
				check("sync json", storeLocation(t, ok(get(t, path, a.q(q...)), 200).body), key)

				var s1hooks *s1Receiver
				var hooks *testkit.Receiver
				hookURL := ""
				if s1 {
					s1hooks = newS1Receiver(t, a.key.SecretKey)
					hookURL = s1hooks.srv.URL + "/hook"
					// A binary answer: the location in their header, their bucket and key
					// headers as ever; and the sync webhook's body.
					q, key = stored("webhook_url", hookURL)
					r := ok(get(t, path, a.q(q...)), 200)
					check("X-ScreenshotOne-Store-Location", r.header.Get("X-ScreenshotOne-Store-Location"), key)
					if b, k := r.header.Get("X-ScreenshotOne-Store-Bucket"), r.header.Get("X-ScreenshotOne-Store-Key"); b != "user" || k != key {
						t.Errorf("store headers: bucket %q key %q, want user %s", b, k, key)
					}
					check("sync webhook", storeLocation(t, s1hooks.next(t)), key)

					// Their bulk request, executed: each item's answer is their JSON answer.
					q, key = stored()
					opts := map[string]any{}
					for i := 0; i < len(q); i += 2 {
						opts[q[i]] = q[i+1]
					}
					body := mustJSON(t, map[string]any{"access_key": a.key.AccessKey, "execute": true, "options": opts, "requests": []any{map[string]any{}}})
					var done struct {
						Responses []struct {
							Response json.RawMessage `json:"response"`
						} `json:"responses"`
					}
					r = ok(do(t, http.MethodPost, env.base+"/bulk", body, map[string]string{"Content-Type": "application/json"}), 200)
					if err := json.Unmarshal(r.body, &done); err != nil || len(done.Responses) != 1 {
						t.Fatalf("bulk: %s", r.body)
					}
					check("bulk execute", storeLocation(t, done.Responses[0].Response), key)
				} else {
					hooks = newReceiver(t, a.key.SecretKey, 0)
					hookURL = hooks.URL()
				}

				q, key = stored("async", "true", "webhook_url", hookURL)
				var accepted struct {
					JobID string `json:"job_id"`
				}
				if err := json.Unmarshal(ok(get(t, path, a.q(q...)), map[bool]int{true: 200, false: 202}[s1]).body, &accepted); err != nil {
					t.Fatal(err)
				}
				if j := waitDelivered(t, a.key.AccessKey, accepted.JobID); j.Status != "succeeded" || j.Webhook.Status != "delivered" {
					t.Fatalf("job %s %s, webhook %+v", j.Status, j.ErrorMessage, j.Webhook)
				}
				var rec struct {
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(get(t, "/api/v1/jobs/"+accepted.JobID, a.q()).body, &rec); err != nil {
					t.Fatal(err)
				}
				check("job result", storeLocation(t, rec.Result), key)
				if s1 {
					check("job webhook", storeLocation(t, s1hooks.next(t)), key)
					return
				}
				ds := hooks.Deliveries()
				if len(ds) != 1 || ds[0].Err != nil {
					t.Fatalf("deliveries %+v, want one valid", ds)
				}
				if err := json.Unmarshal(ds[0].Body, &rec); err != nil {
					t.Fatal(err)
				}
				check("job webhook", storeLocation(t, rec.Result), key)
			})
		}
	}
}
