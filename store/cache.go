package store

import (
	"fmt"
	"os"
	"time"

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

// CacheGet returns the file stored under key. ok is true only when the entry and its file
// record are unexpired, belong to the same account and the file is on disk. It is one read
// transaction and one stat, so a hit costs microseconds. The key is a hex hash of the account
// and the options, computed by the caller; a key that is not hex is an error.
//
// A hit can still race the sweeper at the instant of expiry: OpenFile then returns ErrNotFound
// and the caller renders as on a miss.
func (s *Store) CacheGet(key string) (FileRecord, bool, error) {
	if err := checkCacheKey(key); err != nil {
		return FileRecord{}, false, err
	}
	var rec FileRecord
	var ok bool
	t := time.Now()
	err := s.db.View(func(tx *bbolt.Tx) error {
		var e cacheEntry
		found, err := getJSON(tx.Bucket(bucketCache), key, &e)
		if err != nil || !found || !t.Before(e.ExpiresAt) {
			return err
		}
		found, err = getJSON(tx.Bucket(bucketFiles), e.FileID, &rec)
		if err != nil || !found || rec.expired(t) || rec.AccountID != e.AccountID {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return FileRecord{}, false, fmt.Errorf("store: cache get: %w", err)
	}
	if !ok {
		return FileRecord{}, false, nil
	}
	if _, err := os.Stat(s.filePath(rec.FileID)); err != nil {
		return FileRecord{}, false, nil
	}
	return rec, true, nil
}

// CachePutFile stores rec's file under key for ttl, replacing any earlier entry, and extends the
// file's expiry to at least the entry's in the same transaction, so that a cached file is never
// swept before its entry. The file record must exist, belong to rec.AccountID and be unexpired
// (ErrNotFound otherwise). The file's own TTL is not shortened. It returns the file record as
// the put left it: its ExpiresAt is the file's real expiry, later than rec's when the entry
// outlives the file's own TTL.
func (s *Store) CachePutFile(key string, rec FileRecord, ttl time.Duration) (FileRecord, error) {
	if err := checkCacheKey(key); err != nil {
		return FileRecord{}, err
	}
	if ttl <= 0 {
		return FileRecord{}, fmt.Errorf("store: cache put: ttl %v must be positive", ttl)
	}
	t := now()
	e := cacheEntry{FileID: rec.FileID, AccountID: rec.AccountID, ExpiresAt: t.Add(ttl)}
	var stored FileRecord
	err := s.db.Update(func(tx *bbolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketFiles), rec.FileID, &stored)
		if err != nil {
			return err
		}
		if !ok || stored.AccountID != rec.AccountID || stored.expired(t) {
			return fmt.Errorf("store: cache put: file %s: %w", rec.FileID, ErrNotFound)
		}
		if stored, err = extendFile(tx, rec.FileID, e.ExpiresAt); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketCache), key, e)
	})
	if err != nil {
		return FileRecord{}, err
	}
	return stored, nil
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
