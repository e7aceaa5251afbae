package store

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	keyA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	keyB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func TestCacheGet(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, s *Store, rec FileRecord) // after CachePutFile(keyA, rec, time.Hour)
		key     string
		wantHit bool
		wantErr bool
	}{
		{"hit", nil, keyA, true, false},
		{"upper-case hex is a different key", nil, strings.ToUpper(keyA), false, false},
		{"miss", nil, keyB, false, false},
		{"entry expired", func(t *testing.T, s *Store, rec FileRecord) {
			rewrite(t, s, bucketCache, keyA, func(e *cacheEntry) { e.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, keyA, false, false},
		{"file expired", func(t *testing.T, s *Store, rec FileRecord) {
			rewrite(t, s, bucketFiles, rec.FileID, func(r *FileRecord) { r.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, keyA, false, false},
		{"file record gone", func(t *testing.T, s *Store, rec FileRecord) {
			deleteRecord(t, s, bucketFiles, rec.FileID)
		}, keyA, false, false},
		{"file gone from disk", func(t *testing.T, s *Store, rec FileRecord) {
			if err := os.Remove(s.filePath(rec.FileID)); err != nil {
				t.Fatal(err)
			}
		}, keyA, false, false},
		{"entry of another account than the file", func(t *testing.T, s *Store, rec FileRecord) {
			rewrite(t, s, bucketCache, keyA, func(e *cacheEntry) { e.AccountID = "acc_b" })
		}, keyA, false, false},
		{"empty key", nil, "", false, true},
		{"not hex", nil, "../" + keyA[:10], false, true},
		{"too long", nil, strings.Repeat("a", 129), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			rec := putFile(t, s, "acc_a", "cached", time.Hour)
			if _, err := s.CachePutFile(keyA, rec, time.Hour); err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, s, rec)
			}
			got, hit, err := s.CacheGet(tt.key)
			if (err != nil) != tt.wantErr || hit != tt.wantHit {
				t.Fatalf("CacheGet = %+v, %v, %v; want hit %v, error %v", got, hit, err, tt.wantHit, tt.wantErr)
			}
			if hit && (got.FileID != rec.FileID || got.AccountID != "acc_a" || got.ContentType != "image/png") {
				t.Fatalf("hit returned %+v, want the file %s", got, rec.FileID)
			}
			if !hit && got != (FileRecord{}) {
				t.Fatalf("miss returned a record: %+v", got)
			}
		})
	}
}

func TestCachePutRules(t *testing.T) {
	s, _ := openStore(t)
	rec := putFile(t, s, "acc_a", "data", time.Hour)
	expired := putFile(t, s, "acc_a", "old", time.Hour)
	rewrite(t, s, bucketFiles, expired.FileID, func(r *FileRecord) { r.ExpiresAt = time.Now().Add(-time.Millisecond) })
	foreign := rec
	foreign.AccountID = "acc_b"
	unknown := rec
	unknown.FileID = "f_" + strings.Repeat("C", 22)

	tests := []struct {
		name    string
		key     string
		rec     FileRecord
		ttl     time.Duration
		wantErr error // errAny: some error
	}{
		{"stored", keyA, rec, time.Hour, nil},
		{"replaced", keyA, rec, 2 * time.Hour, nil},
		{"expired file", keyB, expired, time.Hour, ErrNotFound},
		{"another account's file", keyB, foreign, time.Hour, ErrNotFound},
		{"unknown file", keyB, unknown, time.Hour, ErrNotFound},
		{"zero ttl", keyB, rec, 0, errAny},
		{"bad key", "xyz", rec, time.Hour, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CachePutFile(tt.key, tt.rec, tt.ttl)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("CachePutFile: %v", err)
			case tt.wantErr == errAny && err == nil,
				tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("CachePutFile = %v, want %v", err, tt.wantErr)
			}
			_, hit, _ := s.CacheGet(tt.key)
			if hit != (err == nil) {
				t.Fatalf("hit %v after CachePutFile error %v", hit, err)
			}
		})
	}
}

// TestCacheKeepsFileAlive: a cache entry that outlives the file's own TTL extends the file, so
// the sweeper keeps it as long as the entry is served; a shorter entry never shortens the file.
func TestCacheKeepsFileAlive(t *testing.T) {
	s, _ := openStore(t)
	start := time.Now()
	short := putFile(t, s, "acc_a", "short file, long entry", time.Hour)
	long := putFile(t, s, "acc_a", "long file, short entry", 48*time.Hour)
	if _, err := s.CachePutFile(keyA, short, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CachePutFile(keyB, long, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := s.File("acc_a", short.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ExpiresAt.Before(start.Add(24 * time.Hour)) {
		t.Fatalf("file expires %v, before its cache entry (24h from %v)", got.ExpiresAt, start)
	}
	if got, err := s.File("acc_a", long.FileID); err != nil || !got.ExpiresAt.Equal(long.ExpiresAt) {
		t.Fatalf("a shorter cache entry changed the file's expiry: %+v, %v", got, err)
	}
	hit, ok, err := s.CacheGet(keyA)
	if err != nil || !ok || !hit.ExpiresAt.Equal(got.ExpiresAt) {
		t.Fatalf("CacheGet = %+v, %v, %v; want the extended record", hit, ok, err)
	}

	steps := []struct {
		name        string
		at          time.Duration // after start
		wantFiles   []string
		wantEntries int
	}{
		// Past the file's own TTL: the entry keeps it. keyB's entry has expired.
		{"after the file ttl", 2 * time.Hour, []string{short.FileID, long.FileID}, 1},
		{"after the entry ttl", 25 * time.Hour, []string{long.FileID}, 0},
		{"after the long file", 49 * time.Hour, nil, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if _, err := s.SweepNow(start.Add(st.at)); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(st.wantFiles)
			slices.Sort(want)
			if names := dirNames(t, s); !slices.Equal(names, want) {
				t.Fatalf("files on disk %v, want %v", names, want)
			}
			if n := countKeys(t, s, bucketFiles); n != len(want) {
				t.Fatalf("%d file records, want %d", n, len(want))
			}
			if n := countKeys(t, s, bucketCache); n != st.wantEntries {
				t.Fatalf("%d cache entries, want %d", n, st.wantEntries)
			}
			if st.wantEntries == 1 {
				// CacheGet uses the real clock: the entry still serves after the sweep.
				if _, ok, err := s.CacheGet(keyA); !ok || err != nil {
					t.Fatalf("CacheGet after sweep: %v, %v", ok, err)
				}
			}
		})
	}
}

// TestCachePutFile: the record CachePutFile returns is the file as stored after the put, with
// the expiry the entry gave it or its own when that is later.
func TestCachePutFile(t *testing.T) {
	s, _ := openStore(t)
	start := time.Now()
	short := putFile(t, s, "acc_a", "short file, long entry", time.Hour)
	long := putFile(t, s, "acc_a", "long file, short entry", 48*time.Hour)
	tests := []struct {
		name string
		key  string
		rec  FileRecord
		ttl  time.Duration
		min  time.Duration // the returned expiry is at least start+min
	}{
		{"extended", keyA, short, 24 * time.Hour, 24 * time.Hour},
		{"not shortened", keyB, long, time.Hour, 48 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.CachePutFile(tt.key, tt.rec, tt.ttl)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := s.File("acc_a", tt.rec.FileID)
			if err != nil {
				t.Fatal(err)
			}
			if got != stored || got.ExpiresAt.Before(start.Add(tt.min)) {
				t.Fatalf("CachePutFile = %+v, stored %+v; want the stored record, expiring after %v", got, stored, start.Add(tt.min))
			}
		})
	}
	if _, err := s.CachePutFile(keyA, FileRecord{FileID: "f_" + strings.Repeat("C", 22), AccountID: "acc_a"}, time.Hour); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown file: %v, want ErrNotFound", err)
	}
}

// TestCacheHitIsFast: a hit is one read transaction; its median must stay far below the
// millisecond the issue allows, even under -race on a busy machine.
func TestCacheHitIsFast(t *testing.T) {
	s, _ := openStore(t)
	rec := putFile(t, s, "acc_a", "data", time.Hour)
	if _, err := s.CachePutFile(keyA, rec, time.Hour); err != nil {
		t.Fatal(err)
	}
	d := make([]time.Duration, 501)
	for i := range d {
		start := time.Now()
		_, ok, err := s.CacheGet(keyA)
		d[i] = time.Since(start)
		if !ok || err != nil {
			t.Fatalf("CacheGet = %v, %v", ok, err)
		}
	}
	slices.Sort(d)
	if p50 := d[len(d)/2]; p50 > 500*time.Microsecond {
		t.Fatalf("cache hit p50 %v, want well under 1ms", p50)
	}
}

func BenchmarkCacheGet(b *testing.B) {
	s, err := Open(b.TempDir(), nopLogger)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(b.Context())
	rec, err := s.PutFile("acc_a", pngOutput("data"), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CachePutFile(keyA, rec, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.CacheGet(keyA); !ok || err != nil {
			b.Fatalf("CacheGet = %v, %v", ok, err)
		}
	}
}
