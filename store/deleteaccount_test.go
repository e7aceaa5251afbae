package store

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// TestDeleteAccount removes an account with its keys, jobs, batch, files and usage, once its
// jobs ended, and leaves another account alone.
func TestDeleteAccount(t *testing.T) {
	s, _ := openStore(t)
	a, err := s.CreateAccount("gone@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateAccount("stays@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	ka, _ := s.CreateKey(a.ID, "a", false)
	kb, _ := s.CreateKey(b.ID, "b", false)
	if _, _, err := s.KeyCache().Lookup(ka.AccessKey); err != nil { // cached before the delete
		t.Fatal(err)
	}
	single := createJob(t, s, a.ID, false)
	batch, members := createBatch(t, s, a.ID, 2, false)
	other := createJob(t, s, b.ID, false)
	fa := putFile(t, s, a.ID, "a's file", time.Hour)
	fb := putFile(t, s, b.ID, "b's file", time.Hour)
	if _, _, err := s.RecordUsage(a, time.Now(), shotd.UsageDelta{Succeeded: 1}, 100); err != nil {
		t.Fatal(err)
	}

	if _, err := s.DeleteAccount(a.ID); !errors.Is(err, ErrAccountBusy) {
		t.Fatalf("delete with queued jobs: %v, want ErrAccountBusy", err)
	}
	for _, j := range append([]shotd.Job{single}, members...) {
		updateJob(t, s, j.JobID, func(j *shotd.Job) { j.Status = shotd.JobSucceeded })
	}
	page, next, err := s.JobsOf(a.ID, "", 2)
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("JobsOf first page: %d jobs, next %q, %v", len(page), next, err)
	}
	if rest, next2, _ := s.JobsOf(a.ID, next, 2); len(rest) != 1 || next2 != "" || rest[0].JobID == page[0].JobID || rest[0].JobID == page[1].JobID {
		t.Fatalf("JobsOf second page: %v, next %q", rest, next2)
	}

	d, err := s.DeleteAccount(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d != (Deleted{Keys: 1, Jobs: 3, Batches: 1, Files: 1}) {
		t.Errorf("deleted %+v", d)
	}
	if _, err := s.Account(a.ID); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("account: %v", err)
	}
	if _, _, err := s.KeyCache().Lookup(ka.AccessKey); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("the deleted key still authenticates: %v", err)
	}
	if _, err := s.JobByID(single.JobID); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("job: %v", err)
	}
	if _, _, err := s.BatchByID(batch.BatchID); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("batch: %v", err)
	}
	if _, err := os.Stat(s.filePath(fa.FileID)); !os.IsNotExist(err) {
		t.Errorf("a's file is still on disk: %v", err)
	}
	if _, err := s.DeleteAccount(a.ID); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	// b is untouched.
	if _, _, err := s.KeyCache().Lookup(kb.AccessKey); err != nil {
		t.Errorf("b's key: %v", err)
	}
	if _, err := s.JobByID(other.JobID); err != nil {
		t.Errorf("b's job: %v", err)
	}
	if _, err := s.File(b.ID, fb.FileID); err != nil {
		t.Errorf("b's file: %v", err)
	}
}

// TestBatchWebhooksDue: a batch's webhook is due at start once all its jobs ended (waiting) or
// while pending; not before, not once delivered, never without a webhook.
func TestBatchWebhooksDue(t *testing.T) {
	s, _ := openStore(t)
	jobs := []shotd.Job{newJob("acc_a", false), newJob("acc_a", false)}
	b := shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a", Webhook: &shotd.WebhookState{URL: "http://127.0.0.1:9/b"}}
	if err := s.CreateJobs(jobs, &b); err != nil {
		t.Fatal(err)
	}
	createBatch(t, s, "acc_a", 1, false) // no webhook: never due
	due := func() []DueBatch {
		ids, err := s.BatchWebhooksDue()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := due(); len(ids) != 0 {
		t.Fatalf("due with jobs queued: %v", ids)
	}
	for _, j := range jobs {
		updateJob(t, s, j.JobID, func(j *shotd.Job) { j.Status = shotd.JobSucceeded })
	}
	if ids := due(); len(ids) != 1 || ids[0].BatchID != b.BatchID || !ids[0].At.IsZero() {
		t.Fatalf("due once ended: %v", ids)
	}
	if _, err := s.UpdateBatch(b.BatchID, func(b *shotd.Batch, js []shotd.Job) error {
		if len(js) != 2 {
			t.Errorf("UpdateBatch gave %d jobs", len(js))
		}
		b.Webhook.Status = shotd.WebhookDelivered
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ids := due(); len(ids) != 0 {
		t.Fatalf("due once delivered: %v", ids)
	}
}
