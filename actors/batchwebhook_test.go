package actors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/store"
)

// TestBatchWebhookWaitsItsTurnAfterRestart: a batch delivery left pending by a run, its next
// attempt a little ahead, is not sent at the next start but at its time (real bbolt, closed and
// opened again).
func TestBatchWebhookWaitsItsTurnAfterRestart(t *testing.T) {
	got := make(chan time.Time, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-batch-id") != "" {
			got <- time.Now()
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	st := storetest.Open(t, dir)
	acc, key := newJobAccount(t, st)
	job := shotd.Job{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: json.RawMessage(`{"url":"http://127.0.0.1/"}`)}
	b := shotd.Batch{BatchID: store.NewBatchID(), AccountID: acc.ID, Webhook: &shotd.WebhookState{URL: srv.URL + "/batch", Sign: true}}
	job.BatchID, b.JobIDs = b.BatchID, []string{job.JobID}
	if err := st.CreateJobs([]shotd.Job{job}, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateJob(job.JobID, func(j *shotd.Job) error { j.Status = shotd.JobSucceeded; return nil }); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(2 * time.Second)
	if _, err := st.UpdateBatch(b.BatchID, func(b *shotd.Batch, _ []shotd.Job) error {
		b.Webhook.Status, b.Webhook.Attempts, b.Webhook.NextAttemptAt = shotd.WebhookPending, 1, at
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = storetest.Open(t, dir)
	startJobs(t, st, (&script{}).render, time.Second)
	select {
	case when := <-got:
		if when.Before(at) {
			t.Fatalf("the pending delivery was sent %s before its next attempt time", at.Sub(when))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pending delivery never came")
	}
}
