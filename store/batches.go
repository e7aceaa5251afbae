package store

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

var bucketBatches = []byte("batches") // batch id -> Batch

// Batch returns the batch batchID of accountID and its jobs in batch order, read in one
// transaction. A batch that does not exist or belongs to another account gives the same error
// wrapping ErrNotFound. The sweeper deletes a batch with all its jobs, never part of them.
func (s *Store) Batch(accountID, batchID string) (shotd.Batch, []shotd.Job, error) {
	notFound := fmt.Errorf("store: batch %s: %w", batchID, shotd.ErrNotFound)
	var (
		b    shotd.Batch
		jobs []shotd.Job
	)
	err := s.db.View(func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		b, ok, err = getBatch(tx.Bucket(bucketBatches), batchID)
		if err != nil {
			return err
		}
		if !ok || b.AccountID != accountID {
			return notFound
		}
		jobs = make([]shotd.Job, 0, len(b.JobIDs))
		for _, id := range b.JobIDs {
			r, err := getJob(tx, id)
			if errors.Is(err, shotd.ErrNotFound) {
				continue // cannot happen: a batch goes with its jobs; show what there is
			}
			if err != nil {
				return err
			}
			jobs = append(jobs, r.job())
		}
		return nil
	})
	if err != nil {
		return shotd.Batch{}, nil, err
	}
	return b, jobs, nil
}

func ResultOf(rec shotd.FileRecord, cache string) shotd.JobResult {
	return shotd.JobResult{FileID: rec.FileID, ExpiresAt: rec.ExpiresAt, Format: rec.Format, ContentType: rec.ContentType,
		SizeBytes: rec.SizeBytes, RenderMs: rec.RenderMs, Cache: cache, Width: rec.Width, Height: rec.Height,
		StorageLocation: rec.StorageLocation, Metadata: rec.Metadata, Slices: rec.Slices}
}

// BatchByID is Batch whatever the batch's account: for the admin API, never for a request.
func (s *Store) BatchByID(batchID string) (shotd.Batch, []shotd.Job, error) {
	var b shotd.Batch
	err := s.db.View(func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		b, ok, err = getBatch(tx.Bucket(bucketBatches), batchID)
		if err == nil && !ok {
			err = fmt.Errorf("store: batch %s: %w", batchID, shotd.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return shotd.Batch{}, nil, err
	}
	return s.Batch(b.AccountID, batchID)
}

// batchRecord is a batch as stored: shotd.Batch's own JSON, which clients see, and its webhook's
// state in full (shotd.Batch's JSON leaves out Sign, NextAttemptAt and LastError), so that a
// restart keeps a pending delivery's schedule and its signature.
type batchRecord struct {
	shotd.Batch
	State *webhookRecord `json:"webhook_state,omitempty"`
}

func putBatch(bucket *bbolt.Bucket, b shotd.Batch) error {
	return putJSON(bucket, b.BatchID, batchRecord{Batch: b, State: newWebhookRecord(b.Webhook)})
}

// getBatch reads the batch id; ok is false when it is absent.
func getBatch(bucket *bbolt.Bucket, id string) (b shotd.Batch, ok bool, err error) {
	data := bucket.Get([]byte(id))
	if data == nil {
		return b, false, nil
	}
	b, err = decodeBatch(data)
	return b, err == nil, err
}

// decodeBatch reads a stored batch; one written before webhook_state keeps what its JSON holds.
func decodeBatch(data []byte) (shotd.Batch, error) {
	var r batchRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return shotd.Batch{}, fmt.Errorf("store: decode a stored batch: %w", err)
	}
	if r.State != nil {
		r.Batch.Webhook = r.State.state()
	}
	return r.Batch, nil
}
