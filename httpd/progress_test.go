package httpd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/testkit"
)

// progressRecord is what a job and a batch tell of their progress.
type progressRecord struct {
	Status        string     `json:"status"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	StartedAt     *time.Time `json:"started_at"`
	QueuePosition int        `json:"queue_position"`
	Progress      *struct {
		Ended, Total, Percent int
	} `json:"progress"`
}

func getProgress(t *testing.T, accessKey, path string) progressRecord {
	t.Helper()
	r := get(t, path, url.Values{"access_key": {accessKey}})
	var p progressRecord
	if err := json.Unmarshal(r.body, &p); err != nil || r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	return p
}

// TestJobQueuePosition: jobs that wait for a slot of their account (a plan that never grants
// one) tell their place in its queue, in the order they came; a batch of them is at 0%.
func TestJobQueuePosition(t *testing.T) {
	a := newAccount(t, "bench-accept", true)
	opts := map[string]any{"html": "<p>wait</p>"}
	ids := []string{submit(t, a.key.AccessKey, opts), submit(t, a.key.AccessKey, opts), submit(t, a.key.AccessKey, opts)}
	for i, id := range ids {
		p := getProgress(t, a.key.AccessKey, "/api/v1/jobs/"+id)
		if p.Status != "queued" || p.QueuePosition != i+1 || p.StartedAt != nil {
			t.Errorf("job %d: %+v; want queued at place %d, not started", i, p, i+1)
		}
	}
	batch, _ := bulk(t, a.key.AccessKey, map[string]any{"requests": []any{opts, opts}})
	if p := getProgress(t, a.key.AccessKey, "/api/v1/batches/"+batch); p.Progress == nil || p.Progress.Ended != 0 || p.Progress.Total != 2 || p.Progress.Percent != 0 {
		t.Errorf("queued batch progress %+v", p.Progress)
	}
}

// TestJobStartedAndBatchProgress: an ended job tells when its render started, and a done batch
// is at 100%.
func TestJobStartedAndBatchProgress(t *testing.T) {
	a := newAccount(t, "jobs", true)
	opts := map[string]any{"html": "<p>progress</p>", "viewport_width": 320, "viewport_height": 200}
	batch, ids := bulk(t, a.key.AccessKey, map[string]any{"requests": []any{opts, opts}})
	waitBatch(t, a.key.AccessKey, batch, ids)
	for _, id := range ids {
		p := getProgress(t, a.key.AccessKey, "/api/v1/jobs/"+id)
		if p.StartedAt == nil || p.StartedAt.Before(p.CreatedAt) || p.StartedAt.After(p.UpdatedAt) || p.QueuePosition != 0 {
			t.Errorf("job %s: %+v; want started between created_at and updated_at", id, p)
		}
	}
	if p := getProgress(t, a.key.AccessKey, "/api/v1/batches/"+batch); p.Progress == nil || p.Progress.Ended != 2 || p.Progress.Total != 2 || p.Progress.Percent != 100 {
		t.Errorf("done batch progress %+v", p.Progress)
	}
}

// TestBatchWebhook: a bulk request with a webhook_url gets one signed batch.done delivery, with
// the batch record at 100%, once every job ended; a webhook_url that is not an address is
// refused before anything is queued.
func TestBatchWebhook(t *testing.T) {
	a := newAccount(t, "jobs", true)
	var mu sync.Mutex
	var got []testkit.Delivery
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, testkit.Delivery{Header: r.Header.Clone(), Body: body,
			Err: testkit.VerifySignature(a.key.SecretKey, r.Header, body, time.Now())})
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer srv.Close()
	if r := postJSON(t, "/api/v1/bulk", a.key.AccessKey, mustJSON(t, map[string]any{"requests": []any{map[string]any{"html": "<p>x</p>"}},
		"webhook_url": "ftp://nope"})); r.status != 400 || !strings.Contains(string(r.body), "webhook_url") {
		t.Fatalf("bad batch webhook_url: %d %s", r.status, r.body)
	}
	opts := map[string]any{"html": "<p>batch</p>", "viewport_width": 320, "viewport_height": 200}
	batch, ids := bulk(t, a.key.AccessKey, map[string]any{"requests": []any{opts, opts}, "webhook_url": srv.URL + "/batch"})
	waitBatch(t, a.key.AccessKey, batch, ids)
	var rec struct {
		Webhook *struct{ Status string } `json:"webhook"`
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := get(t, "/api/v1/batches/"+batch, url.Values{"access_key": {a.key.AccessKey}})
		if err := json.Unmarshal(r.body, &rec); err != nil || rec.Webhook == nil {
			t.Fatalf("batch record without webhook: %s", r.body)
		}
		if rec.Webhook.Status != "pending" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the batch webhook is still pending")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if rec.Webhook.Status != "delivered" || len(got) != 1 {
		t.Fatalf("batch webhook %s after %d deliveries", rec.Webhook.Status, len(got))
	}
	d := got[0]
	var body struct {
		Event    string
		BatchID  string `json:"batch_id"`
		Status   string
		Progress struct{ Ended, Total, Percent int }
	}
	if err := json.Unmarshal(d.Body, &body); err != nil {
		t.Fatal(err)
	}
	if d.Err != nil || d.Header.Get("x-webhook-event") != "batch.done" || d.Header.Get("x-batch-id") != batch ||
		body.Event != "batch.done" || body.BatchID != batch || body.Status != "done" || body.Progress.Percent != 100 {
		t.Errorf("delivery %v %v: %s", d.Err, d.Header, d.Body)
	}
}
