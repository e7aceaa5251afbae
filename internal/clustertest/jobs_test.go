package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/chaos"
	"github.com/shotd/shotd/view"
	"github.com/shotd/shotd/webhook"
)

// receiver is the webhook receiver: it counts the deliveries of each job and batch whose
// signature is valid for the secret of the key that made them, and keeps the invalid ones.
type receiver struct {
	URL    string
	secret string

	mu      sync.Mutex
	valid   map[string]int // by x-job-id or x-batch-id
	invalid []string
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{secret: secret, valid: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("x-job-id") + req.Header.Get("x-batch-id")
		ts, _ := strconv.ParseInt(req.Header.Get("x-timestamp"), 10, 64)
		r.mu.Lock()
		defer r.mu.Unlock()
		if id == "" || req.Header.Get("x-signature") != webhook.Sign(r.secret, ts, body) {
			r.invalid = append(r.invalid, fmt.Sprintf("%s %q", req.URL.Path, id))
		} else {
			r.valid[id]++
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *receiver) delivered(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.valid[id]
}

// submitBulk posts a bulk of n renders of url, each with a webhook to hook, the batch with one
// to batchHook; it returns the batch id and its job ids.
func submitBulk(ctx context.Context, c *chaos.Client, url string, n int, hook, batchHook string) (string, []string, error) {
	reqs := make([]map[string]any, n)
	for i := range reqs {
		reqs[i] = map[string]any{"url": fmt.Sprintf("%s?n=bulk%d", url, i), "format": "png", "viewport_width": 320,
			"viewport_height": 240, "webhook_url": hook}
	}
	b, _ := json.Marshal(map[string]any{"requests": reqs, "webhook_url": batchHook})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/api/v1/bulk", bytes.NewReader(b))
	req.Header.Set("X-Access-Key", c.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	var r struct {
		BatchID string `json:"batch_id"`
		Jobs    []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusAccepted || len(r.Jobs) != n {
		return "", nil, fmt.Errorf("bulk: status %d, %d jobs, %v", resp.StatusCode, len(r.Jobs), err)
	}
	ids := make([]string, n)
	for i, j := range r.Jobs {
		ids[i] = j.JobID
	}
	return r.BatchID, ids, nil
}

func getBatch(ctx context.Context, c *chaos.Client, id string) (view.BatchRecord, error) {
	var b view.BatchRecord
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/api/v1/batches/"+id, nil)
	req.Header.Set("X-Access-Key", c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return b, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return b, fmt.Errorf("batch %s: status %d", id, resp.StatusCode)
	}
	return b, json.NewDecoder(resp.Body).Decode(&b)
}

// jobsOutcome is how A's jobs ended.
type jobsOutcome struct {
	succeeded, failed int
	codes             map[string]int
}

// checkJobs waits until every job in ids ended, as one live node answers, then checks that every
// live node answers the same status, and that every job's webhook and the batch's arrived with a
// valid signature; it checks the batch's counts against its jobs on every live node.
func checkJobs(t *testing.T, ctx context.Context, clients []*chaos.Client, live func(int) bool, ids []string, batchID string, rcv *receiver, within time.Duration) jobsOutcome {
	t.Helper()
	out := jobsOutcome{codes: map[string]int{}}
	first := 0
	for !live(first) {
		first++
	}
	final := map[string]chaos.Job{}
	deadline := time.Now().Add(within)
	for len(final) < len(ids) {
		for _, id := range ids {
			if _, ok := final[id]; ok {
				continue
			}
			if j, err := clients[first].Job(ctx, id); err == nil && (j.Status == "succeeded" || j.Status == "failed") {
				final[id] = j
			}
		}
		if len(final) == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d jobs not ended after %v", len(ids)-len(final), len(ids), within)
			return out
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, id := range ids {
		j := final[id]
		if j.Status == "succeeded" {
			out.succeeded++
		} else {
			out.failed++
			out.codes[j.ErrorCode]++
		}
		for i, c := range clients {
			if !live(i) {
				continue
			}
			if o, err := c.Job(ctx, id); err != nil || o.Status != j.Status {
				t.Errorf("job %s: node %d answers %q (%v), node %d %q", id, i+1, o.Status, err, first+1, j.Status)
			}
		}
	}
	// Webhooks: at least one valid delivery of every job and of the batch.
	want := append(append([]string(nil), ids...), batchID)
	for end := time.Now().Add(within); ; time.Sleep(250 * time.Millisecond) {
		missing := 0
		for _, id := range want {
			if rcv.delivered(id) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(end) {
			t.Errorf("%d of %d webhooks never arrived", missing, len(want))
			break
		}
	}
	rcv.mu.Lock()
	if len(rcv.invalid) > 0 {
		t.Errorf("webhook deliveries without a valid signature: %v", rcv.invalid)
	}
	rcv.mu.Unlock()
	// The batch: the same counts on every node, right for its jobs.
	for i, c := range clients {
		if !live(i) {
			continue
		}
		b, err := getBatch(ctx, c, batchID)
		if err != nil {
			t.Errorf("node %d: %v", i+1, err)
			continue
		}
		ok, failed := 0, 0
		for _, j := range b.Jobs {
			switch final[j.JobID].Status {
			case "succeeded":
				ok++
			case "failed":
				failed++
			}
		}
		if b.Counts.Succeeded != ok || b.Counts.Failed != failed || b.Counts.Succeeded+b.Counts.Failed != b.Total || len(b.Jobs) != b.Total {
			t.Errorf("node %d: batch %s counts %+v of %d, its jobs: %d succeeded, %d failed", i+1, batchID, b.Counts, b.Total, ok, failed)
		}
	}
	return out
}

// accountJobs lists the ids of every job of an account through the admin API, page by page.
func accountJobs(t *testing.T, ctx context.Context, admin, accountID string) []string {
	t.Helper()
	var ids []string
	before := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/admin/v1/accounts/"+accountID+"/jobs?limit=100&before="+before, nil)
		req.Header.Set("Authorization", "Bearer "+chaos.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Jobs []struct {
				ID string `json:"job_id"`
			} `json:"jobs"`
			Next string `json:"next_before"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("list of the account's jobs: status %d, %v", resp.StatusCode, err)
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.Next == "" {
			return ids
		}
		before = page.Next
	}
}
