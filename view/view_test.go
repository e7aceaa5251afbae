package view_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/view"
)

// keysOf decodes a JSON object and returns its field names, sorted.
func keysOf(t *testing.T, data []byte) (map[string]any, []string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return m, slices.Sorted(maps.Keys(m))
}

func TestJobViewJSON(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	base := shotd.Job{
		JobID: "job_abc", AccountID: "acc_a", AccessKey: "ak_secret_holder", Status: shotd.JobQueued,
		CreatedAt: created, UpdatedAt: created.Add(time.Second), Options: json.RawMessage(`{"url":"https://example.com","format":"png"}`),
	}
	png := &shotd.JobResult{FileID: "f_file", ExpiresAt: created.Add(time.Hour), Format: "png", ContentType: "image/png",
		SizeBytes: 1234, RenderMs: 56, Cache: "MISS", Width: 1280, Height: 720}
	pdf := &shotd.JobResult{FileID: "f_pdf", ExpiresAt: created.Add(time.Hour), Format: "pdf", ContentType: "application/pdf",
		SizeBytes: 99, RenderMs: 7, Cache: "HIT"}
	record := []string{"created_at", "job_id", "status", "updated_at"}
	result := []string{"cache", "content_type", "expires_at", "file_id", "format", "height", "render_ms", "size_bytes", "url", "width"}

	tests := []struct {
		name       string
		edit       func(*shotd.Job)
		publicURL  string
		wantKeys   []string
		wantResult []string // result's keys; nil: no result
		wantURL    string
		wantHook   map[string]any
	}{
		{"queued, no webhook", func(*shotd.Job) {}, "https://shots.example", record, nil, "", nil},
		{"queued with webhook shows the delivery as pending", func(j *shotd.Job) {
			j.Webhook = &shotd.WebhookState{URL: "https://hooks.example/x", Sign: true, NextAttemptAt: created, LastError: "never shown"}
		}, "https://shots.example", append(slices.Clone(record), "webhook"), nil, "",
			map[string]any{"url": "https://hooks.example/x", "status": "pending", "attempts": 0.0}},
		{"succeeded image in a batch", func(j *shotd.Job) {
			j.Status, j.BatchID, j.Index, j.Result = shotd.JobSucceeded, "bat_x", 2, png
			j.Webhook = &shotd.WebhookState{URL: "https://hooks.example/x", Status: shotd.WebhookDelivered, Attempts: 2}
		}, "https://shots.example/", slices.Sorted(slices.Values(append(slices.Clone(record), "batch_id", "result", "webhook"))),
			result, "https://shots.example/api/v1/files/f_file",
			map[string]any{"url": "https://hooks.example/x", "status": "delivered", "attempts": 2.0}},
		{"succeeded pdf: no width or height", func(j *shotd.Job) { j.Status, j.Result = shotd.JobSucceeded, pdf },
			"http://127.0.0.1:8080", append(slices.Clone(record), "result"),
			slices.DeleteFunc(slices.Clone(result), func(k string) bool { return k == "width" || k == "height" }),
			"http://127.0.0.1:8080/api/v1/files/f_pdf", nil},
		{"failed", func(j *shotd.Job) {
			j.Status, j.ErrorCode, j.ErrorMessage = shotd.JobFailed, "navigation_timeout", "The page did not load in time."
		}, "https://shots.example",
			slices.Sorted(slices.Values(append(slices.Clone(record), "error_code", "error_message"))), nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := base
			tt.edit(&j)
			data, err := json.Marshal(view.NewJobView(j, tt.publicURL))
			if err != nil {
				t.Fatal(err)
			}
			m, keys := keysOf(t, data)
			want := slices.Sorted(slices.Values(tt.wantKeys))
			if !slices.Equal(keys, want) {
				t.Fatalf("fields %v, want %v\n%s", keys, want, data)
			}
			if m["created_at"] != "2025-03-01T11:00:00Z" || m["updated_at"] != "2025-03-01T11:00:01Z" {
				t.Fatalf("times %v %v, want UTC", m["created_at"], m["updated_at"])
			}
			if m["job_id"] != "job_abc" || m["status"] != j.Status {
				t.Fatalf("job_id %v status %v", m["job_id"], m["status"])
			}
			if tt.wantResult != nil {
				res, _ := json.Marshal(m["result"])
				rm, rkeys := keysOf(t, res)
				if !slices.Equal(rkeys, tt.wantResult) {
					t.Fatalf("result fields %v, want %v", rkeys, tt.wantResult)
				}
				if rm["url"] != tt.wantURL || rm["expires_at"] != "2025-03-01T12:00:00Z" || rm["file_id"] != j.Result.FileID ||
					rm["size_bytes"] != float64(j.Result.SizeBytes) || rm["cache"] != j.Result.Cache {
					t.Fatalf("result %v", rm)
				}
			}
			if tt.wantHook != nil {
				if hook, _ := m["webhook"].(map[string]any); !maps.Equal(hook, tt.wantHook) {
					t.Fatalf("webhook %v, want %v", m["webhook"], tt.wantHook)
				}
			}
			if j.Status == shotd.JobFailed && (m["error_code"] != "navigation_timeout" || m["error_message"] == "") {
				t.Fatalf("error %v %v", m["error_code"], m["error_message"])
			}
		})
	}
}

func TestBatchView(t *testing.T) {
	b := shotd.Batch{BatchID: "bat_x", AccountID: "acc_a", JobIDs: []string{"job_1", "job_2", "job_3"}}
	jobs := func(states ...string) []shotd.Job {
		var js []shotd.Job
		for i, st := range states {
			js = append(js, shotd.Job{JobID: b.JobIDs[i], BatchID: b.BatchID, Index: i, Status: st})
		}
		return js
	}
	tests := []struct {
		name       string
		jobs       []shotd.Job
		wantStatus string
		wantCounts view.BatchCounts
	}{
		{"all queued", jobs(shotd.JobQueued, shotd.JobQueued, shotd.JobQueued), shotd.BatchQueued, view.BatchCounts{Queued: 3}},
		{"one rendering", jobs(shotd.JobQueued, shotd.JobRendering, shotd.JobQueued), shotd.BatchRunning, view.BatchCounts{Queued: 2, Rendering: 1}},
		{"one ended", jobs(shotd.JobSucceeded, shotd.JobQueued, shotd.JobQueued), shotd.BatchRunning, view.BatchCounts{Queued: 2, Succeeded: 1}},
		{"all ended", jobs(shotd.JobSucceeded, shotd.JobFailed, shotd.JobSucceeded), shotd.BatchDone, view.BatchCounts{Succeeded: 2, Failed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := view.NewBatchView(b, tt.jobs, "https://shots.example")
			if v.Status != tt.wantStatus || v.Counts != tt.wantCounts || v.Total != 3 || len(v.Jobs) != 3 {
				t.Fatalf("view %+v; want %s %+v", v, tt.wantStatus, tt.wantCounts)
			}
			data, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			m, keys := keysOf(t, data)
			if want := []string{"batch_id", "counts", "jobs", "status", "total"}; !slices.Equal(keys, want) {
				t.Fatalf("fields %v, want %v", keys, want)
			}
			counts, _ := json.Marshal(m["counts"])
			if _, ck := keysOf(t, counts); !slices.Equal(ck, []string{"failed", "queued", "rendering", "succeeded"}) {
				t.Fatalf("counts fields %v", ck)
			}
			for i, j := range m["jobs"].([]any) {
				if j.(map[string]any)["job_id"] != b.JobIDs[i] || j.(map[string]any)["batch_id"] != "bat_x" {
					t.Fatalf("job %d: %v", i, j)
				}
			}
		})
	}
}

// TestResultViewLinks: a result links to its file through the files endpoint under the public URL
// of the moment, unless it carries a link of its own (a presigned GET of the service's bucket);
// the further files of a render (content, slices) always link through the files endpoint.
func TestResultViewLinks(t *testing.T) {
	expires := time.Date(2025, 3, 1, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	base := shotd.JobResult{FileID: "f_main", ExpiresAt: expires, Format: "png", ContentType: "image/png"}
	tests := []struct {
		name      string
		edit      func(*shotd.JobResult)
		publicURL string
		wantURL   string
		wantStore *view.StoreView
	}{
		{"files endpoint", func(*shotd.JobResult) {}, "https://shots.example/", "https://shots.example/api/v1/files/f_main", nil},
		{"own link kept", func(r *shotd.JobResult) { r.URL = "https://bucket.example/f_main?X-Amz-Signature=x" },
			"https://shots.example", "https://bucket.example/f_main?X-Amz-Signature=x", nil},
		{"store location shown", func(r *shotd.JobResult) { r.StorageLocation = "https://s3.example/b/k.png" },
			"http://127.0.0.1:8080", "http://127.0.0.1:8080/api/v1/files/f_main", &view.StoreView{Location: "https://s3.example/b/k.png"}},
		{"extras link through the files endpoint", func(r *shotd.JobResult) {
			r.URL = "https://bucket.example/f_main"
			r.Metadata = &shotd.Metadata{Content: &shotd.FileRef{FileID: "f_content", Expires: expires}}
			r.Slices = []shotd.Slice{{Index: 0, FileRef: shotd.FileRef{FileID: "f_s0", Expires: expires}}}
		}, "https://shots.example", "https://bucket.example/f_main", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			v := view.NewResultView(r, tt.publicURL)
			if v.URL != tt.wantURL {
				t.Fatalf("url %q, want %q", v.URL, tt.wantURL)
			}
			if !v.ExpiresAt.Equal(expires) || v.ExpiresAt.Location() != time.UTC {
				t.Fatalf("expires_at %v, want %v in UTC", v.ExpiresAt, expires)
			}
			if (v.Store == nil) != (tt.wantStore == nil) || v.Store != nil && *v.Store != *tt.wantStore {
				t.Fatalf("store %+v, want %+v", v.Store, tt.wantStore)
			}
			prefix := strings.TrimRight(tt.publicURL, "/") + "/api/v1/files/"
			if r.Metadata != nil {
				if c := v.Metadata.Content; c.URL != prefix+"f_content" || c.Expires.Location() != time.UTC {
					t.Fatalf("content %+v", c)
				}
				if r.Metadata.Content.URL != "" {
					t.Fatal("the view changed the result's metadata")
				}
			}
			for i, sl := range v.Slices {
				if sl.URL != prefix+r.Slices[i].FileID {
					t.Fatalf("slice %d: %+v", i, sl)
				}
			}
		})
	}
}

// TestJobViewStoreLocation: a job's result shows where store=true uploaded its file only when
// its options asked for it (storage_return_location), in the job's view and in its batch's,
// and the record keeps the location either way.
func TestJobViewStoreLocation(t *testing.T) {
	asked, err := json.Marshal(&shotd.Options{Store: true, Storage: shotd.StorageTarget{Bucket: "b", ReturnLocation: true}})
	if err != nil {
		t.Fatal(err)
	}
	notAsked, err := json.Marshal(&shotd.Options{Store: true, Storage: shotd.StorageTarget{Bucket: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	const loc = "https://s3.example/b/shot.png"
	tests := []struct {
		name    string
		options json.RawMessage
		want    string
	}{
		{"asked", asked, loc},
		{"not asked", notAsked, ""},
		{"options that do not decode", json.RawMessage(`{"Storage":{"ReturnLocation":true},`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := shotd.Job{JobID: "job_s", Status: shotd.JobSucceeded, Options: tt.options,
				Result: &shotd.JobResult{FileID: "f_s", Format: "png", ContentType: "image/png", StorageLocation: loc}}
			location := func(v view.JobView) string {
				if v.Result == nil || v.Result.Store == nil {
					return ""
				}
				return v.Result.Store.Location
			}
			if got := location(view.NewJobView(j, "https://shots.example")); got != tt.want {
				t.Errorf("job view: location %q, want %q", got, tt.want)
			}
			b := view.NewBatchRecord(shotd.Batch{BatchID: "bat_s", JobIDs: []string{j.JobID}}, []shotd.Job{j}, "https://shots.example")
			if got := location(b.Jobs[0]); got != tt.want {
				t.Errorf("batch view: location %q, want %q", got, tt.want)
			}
			if j.Result.StorageLocation != loc {
				t.Errorf("the record's location became %q", j.Result.StorageLocation)
			}
		})
	}
}
