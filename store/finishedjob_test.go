package store

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// TestCreateFinishedJobNotRequeued: a sync render's job is stored ended, its webhook pending,
// and a reopened store neither requeues it (it would render again) nor forgets its delivery.
func TestCreateFinishedJobNotRequeued(t *testing.T) {
	s, dir := openStore(t)
	j := shotd.Job{JobID: NewJobID(), AccountID: "acc_1", AccessKey: "ak", Status: shotd.JobSucceeded,
		Options: []byte(`{"url":"http://127.0.0.1/"}`), Result: &shotd.JobResult{FileID: "f_1", Format: "png"},
		Webhook: &shotd.WebhookState{URL: "http://127.0.0.1/hook", Sign: true}}
	if err := s.CreateFinishedJob(&j); err != nil {
		t.Fatal(err)
	}
	if j.Webhook.Status != shotd.WebhookPending || j.Status != shotd.JobSucceeded {
		t.Fatalf("stored %+v, webhook %+v", j, j.Webhook)
	}
	if err := s.CreateFinishedJob(&j); err == nil {
		t.Fatal("a second job with the same id was stored")
	}
	queued := shotd.Job{JobID: NewJobID(), AccountID: "acc_1", Status: shotd.JobQueued, Options: []byte(`{}`),
		Webhook: &shotd.WebhookState{URL: "http://127.0.0.1/hook"}}
	if err := s.CreateFinishedJob(&queued); err == nil {
		t.Fatal("a queued job was stored as finished")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	q, failed, err := s2.RequeueUnfinished()
	if err != nil || len(q) != 0 || len(failed) != 0 {
		t.Fatalf("RequeueUnfinished = %d queued, %d failed, %v; want none", len(q), len(failed), err)
	}
	pending, err := s2.PendingWebhooks()
	if err != nil || len(pending) != 1 || pending[0].JobID != j.JobID {
		t.Fatalf("PendingWebhooks = %v, %v; want %s", pending, err, j.JobID)
	}
	got, err := s2.JobByID(j.JobID)
	if err != nil || got.Status != shotd.JobSucceeded || got.Result == nil || got.Result.FileID != "f_1" {
		t.Fatalf("JobByID = %+v, %v", got, err)
	}
}
