package store

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

const (
	keyA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	keyB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func TestCacheGet(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, s *Store, rec shotd.FileRecord) // after PutCachedFile(..., keyA, time.Hour)
		key     string
		wantHit bool
		wantErr bool
	}{
		{"hit", nil, keyA, true, false},
		{"upper-case hex is a different key", nil, strings.ToUpper(keyA), false, false},
		{"miss", nil, keyB, false, false},
		{"entry expired", func(t *testing.T, s *Store, rec shotd.FileRecord) {
			rewrite(t, s, bucketCache, keyA, func(e *cacheEntry) { e.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, keyA, false, false},
		{"file expired", func(t *testing.T, s *Store, rec shotd.FileRecord) {
			rewrite(t, s, bucketFiles, rec.FileID, func(r *shotd.FileRecord) { r.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, keyA, false, false},
		{"file record gone", func(t *testing.T, s *Store, rec shotd.FileRecord) {
			deleteRecord(t, s, bucketFiles, rec.FileID)
		}, keyA, false, false},
		{"file gone from disk", func(t *testing.T, s *Store, rec shotd.FileRecord) {
			if err := os.Remove(s.filePath(rec.FileID)); err != nil {
				t.Fatal(err)
			}
		}, keyA, false, false},
		{"entry of another account than the file", func(t *testing.T, s *Store, rec shotd.FileRecord) {
			rewrite(t, s, bucketCache, keyA, func(e *cacheEntry) { e.AccountID = "acc_b" })
		}, keyA, false, false},
		{"empty key", nil, "", false, true},
		{"not hex", nil, "../" + keyA[:10], false, true},
		{"too long", nil, strings.Repeat("a", 129), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			rec, err := s.PutCachedFile("acc_a", pngOutput("cached"), time.Hour, keyA, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, s, rec)
			}
			got, hit, err := s.CacheGet(tt.key, time.Hour)
			if (err != nil) != tt.wantErr || hit != tt.wantHit {
				t.Fatalf("CacheGet = %+v, %v, %v; want hit %v, error %v", got, hit, err, tt.wantHit, tt.wantErr)
			}
			if hit && (got.FileID != rec.FileID || got.AccountID != "acc_a" || got.ContentType != "image/png") {
				t.Fatalf("hit returned %+v, want the file %s", got, rec.FileID)
			}
			if !hit && !reflect.DeepEqual(got, shotd.FileRecord{}) {
				t.Fatalf("miss returned a record: %+v", got)
			}
		})
	}
}

// TestCacheMaxAge: a request is served a cached copy only when the copy is younger than the
// request's own cache_ttl, and, as before, its entry and its file are unexpired. The entry is
// stored with a cache_ttl of a day; the copy is made to look older by moving its CreatedAt.
func TestCacheMaxAge(t *testing.T) {
	tests := []struct {
		name    string
		age     time.Duration // how long ago the copy was made
		prepare func(t *testing.T, s *Store, rec shotd.FileRecord)
		maxAge  time.Duration // the asking request's cache_ttl
		wantHit bool
	}{
		{"fresh copy, short max age", 0, nil, time.Minute, true},
		{"younger than the max age", 59 * time.Second, nil, time.Minute, true},
		{"older than the max age", 2 * time.Minute, nil, time.Minute, false},
		{"old copy, long max age", 2 * time.Minute, nil, time.Hour, true},
		{"entry expired, however long the max age", 0, func(t *testing.T, s *Store, rec shotd.FileRecord) {
			rewrite(t, s, bucketCache, keyA, func(e *cacheEntry) { e.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, 30 * 24 * time.Hour, false},
		{"file expired", 0, func(t *testing.T, s *Store, rec shotd.FileRecord) {
			rewrite(t, s, bucketFiles, rec.FileID, func(r *shotd.FileRecord) { r.ExpiresAt = time.Now().Add(-time.Millisecond) })
		}, time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			rec, err := s.PutCachedFile("acc_a", pngOutput("cached"), time.Hour, keyA, 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			rewrite(t, s, bucketFiles, rec.FileID, func(r *shotd.FileRecord) { r.CreatedAt = r.CreatedAt.Add(-tt.age) })
			if tt.prepare != nil {
				tt.prepare(t, s, rec)
			}
			got, hit, err := s.CacheGet(keyA, tt.maxAge)
			if err != nil {
				t.Fatal(err)
			}
			if hit != tt.wantHit {
				t.Fatalf("CacheGet(max age %v) = %+v, %v; want hit %v", tt.maxAge, got, hit, tt.wantHit)
			}
		})
	}
}

// TestFreshForBoundary: a copy exactly maxAge old is stale, as a record expires at ExpiresAt
// exactly; a record without CreatedAt is never fresh.
func TestFreshForBoundary(t *testing.T) {
	made := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := shotd.FileRecord{CreatedAt: made}
	tests := []struct {
		name string
		rec  shotd.FileRecord
		at   time.Time
		want bool
	}{
		{"just under max age", r, made.Add(time.Minute - time.Nanosecond), true},
		{"exactly max age", r, made.Add(time.Minute), false},
		{"made in the future (clock stepped back)", r, made.Add(-time.Second), true},
		{"no created_at", shotd.FileRecord{}, made, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := freshFor(tt.rec, time.Minute, tt.at); got != tt.want {
				t.Fatalf("freshFor(1m) at %v of a copy made %v = %v, want %v", tt.at, tt.rec.CreatedAt, got, tt.want)
			}
		})
	}
}

func TestPutCachedFileRules(t *testing.T) {
	tests := []struct {
		name      string
		accountID string
		key       string
		ttl       time.Duration
		wantErr   bool
	}{
		{"stored", "acc_a", keyA, time.Hour, false},
		{"zero ttl", "acc_a", keyA, 0, true},
		{"bad key", "acc_a", "xyz", time.Hour, true},
		{"no account", "", keyA, time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			rec, err := s.PutCachedFile(tt.accountID, pngOutput("data"), time.Hour, tt.key, tt.ttl)
			if (err != nil) != tt.wantErr {
				t.Fatalf("PutCachedFile = %v, want error %v", err, tt.wantErr)
			}
			hit, ok, _ := s.CacheGet(tt.key, time.Hour)
			if ok != !tt.wantErr || ok && !reflect.DeepEqual(hit, rec) {
				t.Fatalf("CacheGet = %+v, %v after PutCachedFile %+v, %v", hit, ok, rec, err)
			}
			// A refused put leaves nothing: no record, no file, no entry.
			if tt.wantErr && (len(dirNames(t, s)) != 0 || countKeys(t, s, bucketFiles) != 0 || countKeys(t, s, bucketCache) != 0) {
				t.Fatalf("a refused put left %v on disk, %d records, %d entries", dirNames(t, s), countKeys(t, s, bucketFiles), countKeys(t, s, bucketCache))
			}
		})
	}
	// A second put under the same key replaces the entry.
	s, _ := openStore(t)
	first, err := s.PutCachedFile("acc_a", pngOutput("first"), time.Hour, keyA, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.PutCachedFile("acc_a", pngOutput("second"), time.Hour, keyA, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if hit, ok, err := s.CacheGet(keyA, time.Hour); !ok || err != nil || hit.FileID != second.FileID || hit.FileID == first.FileID {
		t.Fatalf("CacheGet = %+v, %v, %v; want the second file %s", hit, ok, err, second.FileID)
	}
}

// TestCacheKeepsFileAlive: a cache entry that outlives the file's own TTL extends the file, so
// the sweeper keeps it as long as the entry is served; a shorter entry never shortens the file.
func TestCacheKeepsFileAlive(t *testing.T) {
	s, _ := openStore(t)
	start := time.Now()
	short, err := s.PutCachedFile("acc_a", pngOutput("short file, long entry"), time.Hour, keyA, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	long, err := s.PutCachedFile("acc_a", pngOutput("long file, short entry"), 48*time.Hour, keyB, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.File("acc_a", short.FileID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ExpiresAt.Before(start.Add(24 * time.Hour)) {
		t.Fatalf("file expires %v, before its cache entry (24h from %v)", got.ExpiresAt, start)
	}
	if !reflect.DeepEqual(got, short) {
		t.Fatalf("PutCachedFile returned %+v, stored %+v", short, got)
	}
	if long.ExpiresAt.Before(start.Add(48*time.Hour)) || long.ExpiresAt.After(time.Now().Add(48*time.Hour)) {
		t.Fatalf("a shorter cache entry changed the file's expiry: %v", long.ExpiresAt)
	}
	hit, ok, err := s.CacheGet(keyA, time.Hour)
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
				if _, ok, err := s.CacheGet(keyA, time.Hour); !ok || err != nil {
					t.Fatalf("CacheGet after sweep: %v, %v", ok, err)
				}
			}
		})
	}
}

// TestCacheHitIsFast: a hit is one read transaction; its median must stay far below the
// millisecond a cached answer may take, even under -race on a busy machine.
func TestCacheHitIsFast(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.PutCachedFile("acc_a", pngOutput("data"), time.Hour, keyA, time.Hour); err != nil {
		t.Fatal(err)
	}
	d := make([]time.Duration, 501)
	for i := range d {
		start := time.Now()
		_, ok, err := s.CacheGet(keyA, time.Hour)
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
	if _, err := s.PutCachedFile("acc_a", pngOutput("data"), time.Hour, keyA, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.CacheGet(keyA, time.Hour); !ok || err != nil {
			b.Fatalf("CacheGet = %v, %v", ok, err)
		}
	}
}
