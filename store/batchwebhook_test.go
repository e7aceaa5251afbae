package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// TestBatchWebhookStateSurvivesRestart: a pending batch delivery keeps its next attempt time,
// its signing and its last error across a restart (real bbolt, closed and opened again), and
// none of them shows in the batch's JSON that clients see.
func TestBatchWebhookStateSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	j := newJob("acc_a", false)
	b := shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a", Webhook: &shotd.WebhookState{URL: "http://127.0.0.1:9/b", Sign: true}}
	if err := s.CreateJobs([]shotd.Job{j}, &b); err != nil {
		t.Fatal(err)
	}
	updateJob(t, s, j.JobID, func(j *shotd.Job) { j.Status = shotd.JobSucceeded })
	next := time.Now().Add(time.Hour).UTC().Round(0)
	if _, err := s.UpdateBatch(b.BatchID, func(b *shotd.Batch, _ []shotd.Job) error {
		b.Webhook.Status, b.Webhook.Attempts, b.Webhook.NextAttemptAt, b.Webhook.LastError = shotd.WebhookPending, 1, next, "503"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	defer func() { _ = s.Close(context.Background()) }()
	due, err := s.BatchWebhooksDue()
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].BatchID != b.BatchID || !due[0].At.Equal(next) {
		t.Fatalf("due after a restart: %+v, want %s at %s", due, b.BatchID, next)
	}
	got, _, err := s.Batch("acc_a", b.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	w := got.Webhook
	if w == nil || !w.Sign || w.LastError != "503" || !w.NextAttemptAt.Equal(next) || w.Attempts != 1 || w.Status != shotd.WebhookPending {
		t.Fatalf("webhook after a restart: %+v", w)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "503") || strings.Contains(string(out), "sign") {
		t.Fatalf("the client's JSON shows the hidden state: %s", out)
	}
}
