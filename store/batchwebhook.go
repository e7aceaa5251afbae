package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

// UpdateBatch applies fn to the batch batchID and its jobs in one transaction and writes the
// batch back (fn may change its Webhook only). An error of fn leaves it as it was.
func (s *Store) UpdateBatch(batchID string, fn func(b *shotd.Batch, jobs []shotd.Job) error) (shotd.Batch, error) {
	var out shotd.Batch
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, ok, err := getBatch(tx.Bucket(bucketBatches), batchID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("store: batch %s: %w", batchID, shotd.ErrNotFound)
		}
		jobs := make([]shotd.Job, 0, len(b.JobIDs))
		for _, id := range b.JobIDs {
			r, err := getJob(tx, id)
			if errors.Is(err, shotd.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			jobs = append(jobs, r.job())
		}
		nb := b
		if b.Webhook != nil {
			w := *b.Webhook
			nb.Webhook = &w
		}
		if err := fn(&nb, jobs); err != nil {
			return err
		}
		b.Webhook = nb.Webhook
		out = b
		return putBatch(tx.Bucket(bucketBatches), b)
	})
	return out, err
}

// DueBatch is a batch whose webhook delivery is to resume, at At (zero: now).
type DueBatch struct {
	BatchID string
	At      time.Time
}

// BatchWebhooksDue lists the batches whose webhook is pending, or waits for jobs that have all
// ended (a stop came between the last job's end and the delivery): the webhook actor resumes
// them at start. It scans the batches.
func (s *Store) BatchWebhooksDue() ([]DueBatch, error) {
	var out []DueBatch
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketBatches).ForEach(func(k, v []byte) error {
			b, err := decodeBatch(v)
			if err != nil || b.Webhook == nil {
				return nil
			}
			switch b.Webhook.Status {
			case shotd.WebhookPending:
				out = append(out, DueBatch{BatchID: string(k), At: b.Webhook.NextAttemptAt})
			case "":
				for _, id := range b.JobIDs {
					if r, err := getJob(tx, id); err == nil && !finalStatus(r.Status) {
						return nil
					}
				}
				out = append(out, DueBatch{BatchID: string(k)})
			}
			return nil
		})
	})
	return out, err
}
