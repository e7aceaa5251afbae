package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shotd/shotd"
)

func TestBatch(t *testing.T) {
	s, _ := openStore(t)
	b, jobs := createBatch(t, s, "acc_a", 5, false)
	other, _ := createBatch(t, s, "acc_b", 1, false)
	// Change jobs out of order: the batch keeps request order whatever happens to its jobs.
	updateJob(t, s, jobs[3].JobID, func(j *shotd.Job) { j.Status = shotd.JobRendering })
	updateJob(t, s, jobs[0].JobID, fail)

	tests := []struct {
		name      string
		accountID string
		batchID   string
		wantErr   bool
	}{
		{"owner", "acc_a", b.BatchID, false},
		{"another account", "acc_b", b.BatchID, true},
		{"unknown id", "acc_a", NewBatchID(), true},
		{"a job id is not a batch id", "acc_a", jobs[0].JobID, true},
		{"the other account's batch", "acc_a", other.BatchID, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotJobs, err := s.Batch(tt.accountID, tt.batchID)
			if tt.wantErr {
				if !errors.Is(err, shotd.ErrNotFound) {
					t.Fatalf("Batch = %v; want not found", err)
				}
				if want := fmt.Sprintf("store: batch %s: %v", tt.batchID, shotd.ErrNotFound); err.Error() != want {
					t.Fatalf("error %q, want %q: a foreign batch must read like an unknown one", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.BatchID != b.BatchID || got.AccountID != "acc_a" || !slices.Equal(got.JobIDs, b.JobIDs) {
				t.Fatalf("batch %+v, want %+v", got, b)
			}
			var ids []string
			for i, j := range gotJobs {
				if j.Index != i || j.BatchID != b.BatchID {
					t.Fatalf("job %d: index %d batch %s", i, j.Index, j.BatchID)
				}
				ids = append(ids, j.JobID)
			}
			if !slices.Equal(ids, b.JobIDs) {
				t.Fatalf("jobs %v, want request order %v", ids, b.JobIDs)
			}
			if gotJobs[0].Status != shotd.JobFailed || gotJobs[3].Status != shotd.JobRendering || gotJobs[1].Status != shotd.JobQueued {
				t.Fatalf("states %s %s %s", gotJobs[0].Status, gotJobs[1].Status, gotJobs[3].Status)
			}
		})
	}
}
