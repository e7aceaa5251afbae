package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// sweepInterval is how often the sweeper runs; tests shorten it before Open.
var sweepInterval = time.Minute

// sweepBatch bounds the deletions of one write transaction, so that a large backlog never holds
// the writer lock for long.
const sweepBatch = 1000

// orphanAge: a temporary file this old, or a file without a record this old, is left over from
// a crash or a failed write; a PutFile in progress is never that old.
const orphanAge = time.Hour

// sweeper runs sweeps in a goroutine from Open to Close.
type sweeper struct {
	mu   sync.Mutex // one sweep at a time, so that concurrent sweeps do not count twice
	stop chan struct{}
	done chan struct{}
}

func (s *Store) startSweeper(every time.Duration) {
	s.sw.stop = make(chan struct{})
	s.sw.done = make(chan struct{})
	go func() {
		defer close(s.sw.done)
		// No sweep at start: what expired while the service was down is never served (every
		// read checks expiry) and goes at the first tick.
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.sw.stop:
				return
			case <-t.C:
				s.sweepAndLog()
			}
		}
	}()
}

// stopSweeper tells the sweeper to stop and returns at once; wait on s.sw.done.
func (s *Store) stopSweeper() { close(s.sw.stop) }

func (s *Store) sweepAndLog() {
	start := time.Now()
	n, err := s.SweepNow(start)
	if err != nil {
		s.log.Warn().Err(err).Int("removed", n).Msg("sweep failed")
		return
	}
	if n > 0 {
		s.log.Info().Int("removed", n).Dur("took", time.Since(start)).Msg("swept expired files and cache entries")
	}
}

// SweepNow deletes, as of now, expired file records with their files, expired cache entries,
// files left behind by crashes (temporary files and files without a record, once they are an
// hour old), and finished jobs and batches past JobRetention. It returns how many records and
// files it removed in all. The sweeper goroutine calls it every minute; tests call it with a time
// in the future.
//
// Each batch of deletions is one write transaction; files are removed from disk only after the
// transaction that deleted their records committed, and never while a transaction is open.
func (s *Store) SweepNow(now time.Time) (int, error) {
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	total := 0
	for {
		n, more, err := s.sweepBatch(now)
		total += n
		if err != nil {
			return total, err
		}
		if !more {
			break
		}
	}
	n, err := s.sweepOrphans(now)
	m, jerr := s.sweepJobs(now) // a failing file removal must not keep jobs forever
	return total + n + m, errors.Join(err, jerr)
}

// expiresOnly decodes just the expiry of a file record or a cache entry.
type expiresOnly struct {
	ExpiresAt time.Time `json:"expires_at"`
}

func expiredAt(v []byte, now time.Time) bool {
	var e expiresOnly
	// A record that does not decode is treated as expired: nothing can serve it.
	return json.Unmarshal(v, &e) != nil || !now.Before(e.ExpiresAt)
}

// sweepBatch deletes up to sweepBatch expired file records and cache entries; more is true when
// there may be others.
func (s *Store) sweepBatch(now time.Time) (n int, more bool, err error) {
	var files, entries [][]byte
	// Find candidates without holding the writer lock.
	err = s.db.View(func(tx *bbolt.Tx) error {
		files = collectExpired(tx.Bucket(bucketFiles), now, sweepBatch)
		entries = collectExpired(tx.Bucket(bucketCache), now, sweepBatch)
		return nil
	})
	if err != nil || len(files) == 0 && len(entries) == 0 {
		return 0, false, err
	}
	var removed []string
	err = s.db.Update(func(tx *bbolt.Tx) error {
		removed = removed[:0]
		// Check again: a cache entry may have been replaced under its key since the View.
		fb, cb := tx.Bucket(bucketFiles), tx.Bucket(bucketCache)
		for _, id := range files {
			if v := fb.Get(id); v != nil && expiredAt(v, now) {
				if err := fb.Delete(id); err != nil {
					return err
				}
				removed = append(removed, string(id))
			}
		}
		for _, key := range entries {
			if v := cb.Get(key); v != nil && expiredAt(v, now) {
				if err := cb.Delete(key); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("store: sweep: %w", err)
	}
	n += len(removed)
	var errs []error
	for _, id := range removed {
		if err := os.Remove(s.filePath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if err := s.sweepRemote(id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, false, fmt.Errorf("store: sweep: %w", err)
	}
	return n, len(files) == sweepBatch || len(entries) == sweepBatch, nil
}

// collectExpired returns up to limit keys of b whose records have expired at now; the keys are
// copies, valid after the transaction.
func collectExpired(b *bbolt.Bucket, now time.Time, limit int) [][]byte {
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < limit; k, v = c.Next() {
		if expiredAt(v, now) {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	return keys
}

// sweepOrphans removes temporary files and files without a record that are older than
// orphanAge. The age guard keeps it away from a PutFile in progress, which renames its file
// before it commits the record.
func (s *Store) sweepOrphans(now time.Time) (int, error) {
	dirEntries, err := os.ReadDir(s.filesDir)
	if err != nil {
		return 0, fmt.Errorf("store: sweep orphans: %w", err)
	}
	var old []string
	for _, de := range dirEntries {
		name := de.Name()
		if !strings.HasPrefix(name, tempPrefix) && !strings.HasPrefix(name, FileIDPrefix) {
			continue
		}
		info, err := de.Info()
		if err != nil || info.IsDir() || now.Sub(info.ModTime()) < orphanAge {
			continue
		}
		old = append(old, name)
	}
	if len(old) == 0 {
		return 0, nil
	}
	var orphans []string
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketFiles)
		for _, name := range old {
			if strings.HasPrefix(name, tempPrefix) || b.Get([]byte(name)) == nil {
				orphans = append(orphans, name)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: sweep orphans: %w", err)
	}
	n := 0
	var errs []error
	for _, name := range orphans {
		switch err := os.Remove(s.filePath(name)); {
		case err == nil:
			n++
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("store: sweep orphans: %w", err)
	}
	return n, nil
}
