package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

var nopLogger = zerolog.Nop()

func deleteRecord(t *testing.T, s *Store, bucket []byte, key string) {
	t.Helper()
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Delete([]byte(key)) }); err != nil {
		t.Fatal(err)
	}
}

func countKeys(t *testing.T, s *Store, bucket []byte) int {
	t.Helper()
	var n int
	if err := s.db.View(func(tx *bbolt.Tx) error { n = tx.Bucket(bucket).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepNow(t *testing.T) {
	s, _ := openStore(t)
	start := time.Now()
	hour, err := s.PutCachedFile("acc_a", pngOutput("1h"), time.Hour, keyA, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	twoHours := putFile(t, s, "acc_b", "2h", 2*time.Hour)

	steps := []struct {
		name        string
		at          time.Duration // after start
		wantRemoved int
		wantFiles   []string
		wantEntries int
	}{
		{"nothing expired", 0, 0, []string{hour.FileID, twoHours.FileID}, 1},
		{"cache entry expired", 45 * time.Minute, 1, []string{hour.FileID, twoHours.FileID}, 0},
		{"first file expired", 90 * time.Minute, 1, []string{twoHours.FileID}, 0},
		{"again: nothing left to do", 90 * time.Minute, 0, []string{twoHours.FileID}, 0},
		{"all expired", 3 * time.Hour, 1, nil, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			n, err := s.SweepNow(start.Add(st.at))
			if err != nil || n != st.wantRemoved {
				t.Fatalf("SweepNow = %d, %v; want %d removed", n, err, st.wantRemoved)
			}
			want := slices.Clone(st.wantFiles)
			slices.Sort(want)
			if names := dirNames(t, s); !slices.Equal(names, want) {
				t.Fatalf("files on disk %v, want %v", names, want)
			}
			for _, id := range want {
				var rec shotd.FileRecord
				err := s.db.View(func(tx *bbolt.Tx) error {
					ok, err := getJSON(tx.Bucket(bucketFiles), id, &rec)
					if err == nil && !ok {
						err = fmt.Errorf("record %s gone with its file still wanted", id)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := countKeys(t, s, bucketFiles); n != len(want) {
				t.Fatalf("%d file records, want %d", n, len(want))
			}
			if n := countKeys(t, s, bucketCache); n != st.wantEntries {
				t.Fatalf("%d cache entries, want %d", n, st.wantEntries)
			}
		})
	}
}

// TestSweepManyBatches: more expired records than one batch holds all go; records without a
// file on disk are no error.
func TestSweepManyBatches(t *testing.T) {
	s, _ := openStore(t)
	const n = 2*sweepBatch + 17
	past := time.Now().Add(-time.Minute).UTC()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for i := range n {
			id := fmt.Sprintf("f_%022d", i)
			if err := putJSON(tx.Bucket(bucketFiles), id, shotd.FileRecord{FileID: id, AccountID: "acc_a", ExpiresAt: past}); err != nil {
				return err
			}
			if err := putJSON(tx.Bucket(bucketCache), fmt.Sprintf("%064x", i), cacheEntry{FileID: id, ExpiresAt: past}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keep := putFile(t, s, "acc_a", "kept", time.Hour)
	removed, err := s.SweepNow(time.Now())
	if err != nil || removed != 2*n {
		t.Fatalf("SweepNow = %d, %v; want %d", removed, err, 2*n)
	}
	if got := countKeys(t, s, bucketFiles); got != 1 {
		t.Fatalf("%d file records left, want 1", got)
	}
	if _, err := s.File("acc_a", keep.FileID); err != nil {
		t.Fatalf("unexpired file swept: %v", err)
	}
}

func TestSweepOrphans(t *testing.T) {
	s, _ := openStore(t)
	recorded := putFile(t, s, "acc_a", "recorded", time.Hour)
	old := time.Now().Add(-orphanAge - time.Minute)
	files := []struct {
		name     string
		file     string
		age      time.Time // zero: just written
		wantKept bool
	}{
		{"old temp file", tempPrefix + "123", old, false},
		{"fresh temp file: a PutFile in progress", tempPrefix + "456", time.Time{}, true},
		{"old file without a record", "f_" + strings.Repeat("D", 22), old, false},
		{"fresh file without a record: record not yet committed", "f_" + strings.Repeat("E", 22), time.Time{}, true},
		{"old file with an unexpired record", recorded.FileID, old, true},
		{"a file the store does not name", "notes.txt", old, true},
	}
	for _, f := range files {
		path := filepath.Join(s.filesDir, f.file)
		if err := os.WriteFile(path, []byte(f.name), 0o600); err != nil && f.file != recorded.FileID {
			t.Fatal(err)
		}
		if !f.age.IsZero() {
			if err := os.Chtimes(path, f.age, f.age); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := s.SweepNow(time.Now())
	if err != nil || n != 2 {
		t.Fatalf("SweepNow = %d, %v; want 2 orphans removed", n, err)
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			_, err := os.Stat(filepath.Join(s.filesDir, f.file))
			if kept := err == nil; kept != f.wantKept {
				t.Fatalf("%s kept: %v, want %v", f.file, kept, f.wantKept)
			}
		})
	}
}

// TestSweeperRuns: the goroutine that Open starts sweeps on its own, and Close stops it (the
// package's TestMain fails on a leaked goroutine).
func TestSweeperRuns(t *testing.T) {
	defer func(d time.Duration) { sweepInterval = d }(sweepInterval)
	sweepInterval = 10 * time.Millisecond
	s, _ := openStore(t)
	rec := putFile(t, s, "acc_a", "short-lived", 30*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for countKeys(t, s, bucketFiles) > 0 || len(dirNames(t, s)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sweeper did not remove %s: files %v", rec.FileID, dirNames(t, s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.sw.done:
	default:
		t.Fatal("Close returned before the sweeper stopped")
	}
}
