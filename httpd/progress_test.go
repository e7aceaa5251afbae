package httpd_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"
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
