package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

// ErrAccountBusy is returned by DeleteAccount for an account with jobs still queued or
// rendering: their goroutines and slots would outlive the records.
var ErrAccountBusy = shotd.ErrAccountBusy

// Deleted counts what DeleteAccount removed.
type Deleted = shotd.AccountDeletion

// DeleteAccount removes the account id with its keys, jobs, batches, stored files, cache entries
// and usage, in one write transaction; the files go from disk (and the service's bucket) after it
// committed. An account with jobs queued or rendering is refused (ErrAccountBusy). It scans the
// jobs, batches, files and cache: an operator's rare act, not a request path.
func (s *Store) DeleteAccount(id string) (Deleted, error) {
	var d Deleted
	var keys []string
	var files []shotd.FileRecord
	err := s.db.Update(func(tx *bbolt.Tx) error {
		d, keys, files = Deleted{}, nil, nil
		if tx.Bucket(bucketAccounts).Get([]byte(id)) == nil {
			return fmt.Errorf("store: account %s: %w", id, shotd.ErrNotFound)
		}
		jobs, err := collect(tx.Bucket(bucketJobs), func(r *jobRecord) bool { return r.AccountID == id })
		if err != nil {
			return err
		}
		for _, r := range jobs {
			if !finalStatus(r.Status) {
				return ErrAccountBusy
			}
		}
		for _, r := range jobs {
			if err := deleteJob(tx, r); err != nil {
				return err
			}
			d.Jobs++
		}
		n, err := deleteWhere(tx.Bucket(bucketBatches), func(v []byte) bool {
			var b shotd.Batch
			return json.Unmarshal(v, &b) == nil && b.AccountID == id
		})
		if err != nil {
			return err
		}
		d.Batches = n
		if files, err = collect(tx.Bucket(bucketFiles), func(r *shotd.FileRecord) bool { return r.AccountID == id }); err != nil {
			return err
		}
		for _, rec := range files {
			if err := tx.Bucket(bucketFiles).Delete([]byte(rec.FileID)); err != nil {
				return err
			}
		}
		d.Files = len(files)
		if _, err := deleteWhere(tx.Bucket(bucketCache), func(v []byte) bool {
			var e cacheEntry
			return json.Unmarshal(v, &e) == nil && e.AccountID == id
		}); err != nil {
			return err
		}
		prefix := []byte(id + "/")
		idx := tx.Bucket(bucketAccountKeys)
		for _, k := range prefixKeys(idx, prefix) {
			ak := string(k[len(prefix):])
			if err := tx.Bucket(bucketKeys).Delete([]byte(ak)); err != nil {
				return err
			}
			if err := idx.Delete(k); err != nil {
				return err
			}
			keys = append(keys, ak)
		}
		d.Keys = len(keys)
		for _, b := range [][]byte{bucketUsage, bucketUsageDaily} {
			for _, k := range prefixKeys(tx.Bucket(b), prefix) {
				if err := tx.Bucket(b).Delete(k); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketAccounts).Delete([]byte(id))
	})
	if err != nil {
		return Deleted{}, err
	}
	for _, ak := range keys {
		s.cache.invalidateKey(ak)
	}
	s.cache.invalidateAccount(id)
	var errs []error
	for _, rec := range files {
		if err := os.Remove(s.filePath(rec.FileID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if rec.Remote {
			s.removeRemote(rec)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("store: delete account %s: the records are gone, some files stay: %w", id, err)
	}
	return d, nil
}

// collect decodes the records of b that keep accepts (keep may trim what it accepts); a record
// that does not decode is passed over.
func collect[T any](b *bbolt.Bucket, keep func(*T) bool) ([]T, error) {
	var out []T
	err := b.ForEach(func(_, v []byte) error {
		var r T
		if json.Unmarshal(v, &r) == nil && keep(&r) {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// deleteWhere deletes the entries of b whose value match accepts and returns how many.
func deleteWhere(b *bbolt.Bucket, match func(v []byte) bool) (int, error) {
	var del [][]byte
	if err := b.ForEach(func(k, v []byte) error {
		if match(v) {
			del = append(del, append([]byte(nil), k...))
		}
		return nil
	}); err != nil {
		return 0, err
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(del), nil
}

// prefixKeys copies the keys of b that start with prefix.
func prefixKeys(b *bbolt.Bucket, prefix []byte) [][]byte {
	var out [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, append([]byte(nil), k...))
	}
	return out
}

// JobsOf lists the jobs of an account, newest first, at most limit (1..100), starting after the
// job id before (the cursor of the previous page; "" for the first); next is the cursor of the
// following page, "" on the last. It scans the jobs: for the admin API, not a request path.
func (s *Store) JobsOf(accountID string, before string, limit int) (jobs []shotd.Job, next string, err error) {
	if limit < 1 || limit > 100 {
		limit = 100
	}
	all, err := view(s, func(tx *bbolt.Tx) ([]jobRecord, error) {
		return collect(tx.Bucket(bucketJobs), func(r *jobRecord) bool {
			r.Options = nil // a listing shows none
			return r.AccountID == accountID
		})
	})
	if err != nil {
		return nil, "", err
	}
	// Newest first; equal times by id, so that the order (and the cursor) is stable.
	less := func(a, b jobRecord) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.JobID), []byte(b.JobID))
	}
	sortRecords(all, less)
	start := 0
	if before != "" {
		start = len(all)
		for i, r := range all {
			if r.JobID == before {
				start = i + 1
				break
			}
		}
	}
	for _, r := range all[start:] {
		if len(jobs) == limit {
			next = jobs[len(jobs)-1].JobID
			break
		}
		jobs = append(jobs, r.job())
	}
	return jobs, next, nil
}

func sortRecords(rs []jobRecord, cmp func(a, b jobRecord) int) { slices.SortFunc(rs, cmp) }
