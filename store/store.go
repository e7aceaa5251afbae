package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors; returned wrapped with the record they are about.
var (
	// ErrConflict: the id exists already, or the change is not allowed on the stored record
	// (changing an id, un-revoking a key).
	ErrConflict = errors.New("store: conflict")
	// ErrRevoked is what KeyCache.Lookup returns for a revoked key. It wraps shotd.ErrNotFound,
	// so a caller that only asks errors.Is(err, shotd.ErrNotFound) treats it as an unknown key.
	ErrRevoked = fmt.Errorf("%w: key revoked", shotd.ErrNotFound)
	// ErrLocked: another process holds the database open.
	ErrLocked = errors.New("store: database is in use by another process")
)

// FileName is the database file inside the data directory.
const FileName = "shotd.db"

// openTimeout bounds the wait for bbolt's file lock: a second shotd on the same data directory
// must fail at once with a clear message, not hang.
var openTimeout = time.Second

// Bucket names. Every bucket is in buckets, so that Open creates it.
var (
	bucketMeta        = []byte("meta")
	bucketAccounts    = []byte("accounts")     // account id -> shotd.Account
	bucketKeys        = []byte("keys")         // access key -> shotd.Key with secret
	bucketAccountKeys = []byte("account_keys") // account id + "/" + access key -> empty

	buckets = [][]byte{bucketMeta, bucketAccounts, bucketKeys, bucketAccountKeys, bucketFiles, bucketCache, bucketUsage,
		bucketJobs, bucketJobsActive, bucketWebhooksPending, bucketJobsDone, bucketBatches, bucketUsageDaily, bucketUnbilled}
)

// Store is the database. Its methods are safe for concurrent use.
type Store struct {
	db    *bbolt.DB
	log   zerolog.Logger
	cache *KeyCache

	filesDir string                 // dataDir/files: rendered files, one per file id
	remote   atomic.Pointer[Remote] // nil: files live in filesDir; see UseRemote
	sw       sweeper                // removes expired files and cache entries

	cacheObserver atomic.Pointer[func(hit bool)] // ObserveCache
	group         groupCommit                    // the job, file and usage writes: concurrent ones share commits

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// Open creates dataDir if needed and opens dataDir/shotd.db, creating the buckets. It returns an
// error wrapping ErrLocked after about a second when another process has the database open.
func Open(dataDir string, log zerolog.Logger) (*Store, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data dir: %w", err)
	}
	filesDir := filepath.Join(dataDir, FilesDir)
	if err := os.MkdirAll(filesDir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create files dir: %w", err)
	}
	path := filepath.Join(dataDir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: openTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		// Before anything is written: a newer binary's database is left exactly as it is.
		if v, err := schemaVersion(tx); err != nil {
			return err
		} else if v > SchemaVersion {
			return &NewerSchemaError{Path: path, Version: v}
		}
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		return tx.Bucket(bucketMeta).Put([]byte(metaSchemaVersion), []byte(strconv.Itoa(SchemaVersion)))
	})
	if err != nil {
		_ = db.Close()
		if errors.Is(err, ErrNewerSchema) {
			return nil, err
		}
		return nil, fmt.Errorf("store: init %s: %w", path, err)
	}
	s := &Store{db: db, log: log, closed: make(chan struct{}), filesDir: filesDir}
	s.group.db = db
	s.cache = newKeyCache(s)
	s.startSweeper(sweepInterval)
	log.Info().Str("path", path).Msg("store opened")
	return s, nil
}

// Close stops the sweeper and closes the database. bbolt waits for open transactions; when ctx
// ends first Close returns ctx's error and the database closes in the background as soon as
// they finish (a later Close waits for that again).
func (s *Store) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.stopSweeper()
		go func() {
			<-s.sw.done // a sweep in progress finishes first
			s.closeErr = s.db.Close()
			close(s.closed)
		}()
	})
	select {
	case <-s.closed:
		return s.closeErr
	case <-ctx.Done():
		return fmt.Errorf("store: close: %w", ctx.Err())
	}
}

// DB is the bbolt handle, for packages that keep their own buckets in the same file.
func (s *Store) DB() *bbolt.DB { return s.db }

// KeyCache is the cache in front of keys and accounts that the Store keeps current.
func (s *Store) KeyCache() *KeyCache { return s.cache }

// getJSON reads key of bucket b into v; ok is false when the key is absent.
func getJSON(b *bbolt.Bucket, key string, v any) (ok bool, err error) {
	data := b.Get([]byte(key))
	if data == nil {
		return false, nil
	}
	// bbolt's slices are valid only inside the transaction; Unmarshal copies.
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("store: decode a stored record: %w", err)
	}
	return true, nil
}

// getRecord decodes the record key of bucket b; a missing one is the error notFound returns.
func getRecord[T any](b *bbolt.Bucket, key string, notFound func() error) (T, error) {
	var v T
	ok, err := getJSON(b, key, &v)
	if err == nil && !ok {
		err = notFound()
	}
	return v, err
}

// view returns what get reads in one read transaction.
func view[T any](s *Store, get func(tx *bbolt.Tx) (T, error)) (T, error) {
	var v T
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		v, err = get(tx)
		return err
	})
	return v, err
}

// update is view's writing twin: in one write transaction it reads a record with get, lets fn
// change a copy, and hands the record as read and the changed copy to save, which checks the
// change and writes it. An error from get, fn or save aborts the change and is returned as it
// is, with the zero T.
func update[T any](s *Store, get func(tx *bbolt.Tx) (T, error), fn func(*T) error, save func(tx *bbolt.Tx, old, v T) error) (T, error) {
	var v T
	err := s.db.Update(func(tx *bbolt.Tx) error {
		old, err := get(tx)
		if err != nil {
			return err
		}
		v = old
		if err := fn(&v); err != nil {
			return err
		}
		return save(tx, old, v)
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func putJSON(b *bbolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode: %w", err)
	}
	return b.Put([]byte(key), data)
}

// now is the creation time of records: UTC, full precision so that listings sort by it, and
// without the monotonic reading, which JSON drops (a record reads back equal).
func now() time.Time { return time.Now().UTC().Round(0) }

func randomHex(nBytes int) string {
	b := make([]byte, nBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+); it crashes the program instead
	return hex.EncodeToString(b)
}

func randomToken(nBytes int) string {
	b := make([]byte, nBytes)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
