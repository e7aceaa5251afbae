package store

import (
	"fmt"
	"os"
	"time"

	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
)

var bucketCache = []byte("cache") // cache key -> cacheEntry

// maxCacheKeyLen bounds keys: a SHA-512 in hex is 128 characters.
const maxCacheKeyLen = 128

// cacheEntry points a cache key at a stored file. The file record is the truth about the data;
// the entry only says until when the file may be served for this key.
type cacheEntry struct {
	FileID    string    `json:"file_id"`
	AccountID string    `json:"account_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CacheGet returns the file stored under key for a request whose cache_ttl is maxAge. ok is true
// only when the entry and its file record are unexpired, belong to the same account, the file is
// on disk, and the copy was made less than maxAge ago (freshFor): the entry's own expiry is the
// cache_ttl of the request that stored it, which may be longer. It is one read transaction and
// one stat, so a hit costs microseconds. The key is a hex hash of the account and the options,
// computed by the caller; a key that is not hex is an error.
//
// A hit can still race the sweeper at the instant of expiry: OpenFile then returns ErrNotFound
// and the caller renders as on a miss.
func (s *Store) CacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error) {
	rec, ok, err := s.cacheGet(key, maxAge)
	if f := s.cacheObserver.Load(); f != nil && err == nil {
		(*f)(ok)
	}
	return rec, ok, err
}

// ObserveCache makes every CacheGet that does not fail call f with whether it hit: the sync and
// the job paths both look up here, so /metrics counts both.
func (s *Store) ObserveCache(f func(hit bool)) { s.cacheObserver.Store(&f) }

func (s *Store) cacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error) {
	if err := checkCacheKey(key); err != nil {
		return shotd.FileRecord{}, false, err
	}
	var rec shotd.FileRecord
	var ok bool
	t := time.Now()
	err := s.db.View(func(tx *bbolt.Tx) error {
		var e cacheEntry
		found, err := getJSON(tx.Bucket(bucketCache), key, &e)
		if err != nil || !found || !t.Before(e.ExpiresAt) {
			return err
		}
		found, err = getJSON(tx.Bucket(bucketFiles), e.FileID, &rec)
		if err != nil || !found || rec.Expired(t) || rec.AccountID != e.AccountID || !freshFor(rec, maxAge, t) {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return shotd.FileRecord{}, false, fmt.Errorf("store: cache get: %w", err)
	}
	if !ok {
		return shotd.FileRecord{}, false, nil
	}
	if _, err := os.Stat(s.filePath(rec.FileID)); err != nil {
		return shotd.FileRecord{}, false, nil
	}
	return rec, true, nil
}

// freshFor reports whether r, found in the response cache, may answer at t a request whose
// cache_ttl is maxAge: whether it was made less than maxAge before t. CreatedAt is when the
// render was stored, in the transaction that entered it in the cache. A copy that old or older
// is a miss for this request even if its entry, stored with a longer cache_ttl, has not
// expired: the request renders, and its result replaces the entry.
func freshFor(r shotd.FileRecord, maxAge time.Duration, t time.Time) bool {
	return t.Before(r.CreatedAt.Add(maxAge))
}

func checkCacheKey(key string) error {
	if key == "" || len(key) > maxCacheKeyLen {
		return fmt.Errorf("store: cache key of %d bytes: want 1 to %d hex digits", len(key), maxCacheKeyLen)
	}
	for i := 0; i < len(key); i++ {
		b := key[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
			return fmt.Errorf("store: cache key %.16q: want hex digits", key)
		}
	}
	return nil
}
