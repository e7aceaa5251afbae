package store

import (
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// TestJobUsageCountedOnce: a job's end leaves a mark of the usage it is to count (none for a
// released outcome, none for an update that does not end it); its usage is written once, with
// the mark, by the account's settle or by a start's BillEndedJobs, whichever comes first.
func TestJobUsageCountedOnce(t *testing.T) {
	s, _ := openStore(t)
	acc, err := s.CreateAccount("u@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	quota := func(string) (int, bool) { return 100, true }
	end := func(o shotd.Outcome) shotd.Job {
		t.Helper()
		j := createJob(t, s, acc.ID, false)
		updateJob(t, s, j.JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
		j, err := s.EndJob(j.JobID, func(j *shotd.Job) error { succeed(j); return nil }, o)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	used := func() shotd.Usage {
		t.Helper()
		u, err := s.Usage(acc, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	settled := end(shotd.OutcomeSucceeded)
	for range 2 { // the second finds no mark: counted already
		if _, _, err := s.RecordJobUsage(acc, time.Now(), shotd.UsageDelta{Succeeded: 1}, 100, settled.JobID); err != nil {
			t.Fatal(err)
		}
	}
	if u := used(); u.Used != 1 || u.Succeeded != 1 {
		t.Fatalf("a settled job's usage %+v, want it once", u)
	}
	end(shotd.OutcomeSucceeded) // killed before its settle
	end(shotd.OutcomeFailed)
	end(shotd.OutcomeReleased) // the service's own trouble: nothing to count
	if n, err := s.BillEndedJobs(quota); err != nil || n != 2 {
		t.Fatalf("counted at start: %d %v, want the 2 ends not settled", n, err)
	}
	if u := used(); u.Used != 2 || u.Succeeded != 2 || u.Failed != 1 {
		t.Fatalf("usage %+v, want 2 billed successes and a failure", u)
	}
	if n, err := s.BillEndedJobs(quota); err != nil || n != 0 {
		t.Fatalf("counted again: %d %v", n, err)
	}

	kept := end(shotd.OutcomeSucceeded)
	if n, err := s.BillEndedJobs(func(string) (int, bool) { return 0, false }); err != nil || n != 0 {
		t.Fatalf("counted without the account's plan: %d %v", n, err)
	}
	if _, _, err := s.RecordJobUsage(acc, time.Now(), shotd.UsageDelta{Succeeded: 1}, 100, kept.JobID); err != nil {
		t.Fatal(err)
	}
	if u := used(); u.Used != 3 {
		t.Fatalf("the mark kept for a start with the plan was not counted once: %+v", u)
	}
}

// TestSweepKeepsBatchWithPendingWebhook: a batch whose jobs are past their retention is kept
// while its own webhook's delivery is pending (or due and not started), as a job is.
func TestSweepKeepsBatchWithPendingWebhook(t *testing.T) {
	s, _ := openStore(t)
	j := newJob("acc_a", false)
	b := shotd.Batch{BatchID: NewBatchID(), AccountID: "acc_a", Webhook: &shotd.WebhookState{URL: "http://127.0.0.1:9/b", Sign: true}}
	if err := s.CreateJobs([]shotd.Job{j}, &b); err != nil {
		t.Fatal(err)
	}
	updateJob(t, s, j.JobID, succeed)
	if _, err := s.SweepNow(time.Now().Add(JobRetention + time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BatchByID(b.BatchID); err != nil {
		t.Fatalf("a batch whose webhook is due was swept: %v", err)
	}
	if _, err := s.UpdateBatch(b.BatchID, func(b *shotd.Batch, _ []shotd.Job) error {
		b.Webhook.Status, b.Webhook.Attempts, b.Webhook.NextAttemptAt = shotd.WebhookPending, 3, time.Now().Add(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepNow(time.Now().Add(JobRetention + time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BatchByID(b.BatchID); err != nil {
		t.Fatalf("a batch whose webhook is pending was swept: %v", err)
	}
	if _, err := s.UpdateBatch(b.BatchID, func(b *shotd.Batch, _ []shotd.Job) error {
		b.Webhook.Status = shotd.WebhookDelivered
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepNow(time.Now().Add(JobRetention + time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BatchByID(b.BatchID); err == nil {
		t.Fatal("a batch delivered and past its retention was kept")
	}
}
