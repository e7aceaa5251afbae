package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// LocalFiles is a node's own file store (store.Store): httpd.Files.
type LocalFiles interface {
	PutFile(accountID string, out *shotd.Output, ttl time.Duration) (shotd.FileRecord, error)
	File(accountID, fileID string) (shotd.FileRecord, error)
	OpenFile(rec shotd.FileRecord) (*os.File, error)
	CacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error)
	PutCachedFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error)
	ResultOf(rec shotd.FileRecord, cache string) shotd.JobResult
}

// fileRecord is the files bucket's value: a stored file's record, shared so that every node
// answers /api/v1/files/{id} for a file that any node stored in the shared S3 bucket.
type fileRecord struct {
	V      int              `json:"v"`
	Record shotd.FileRecord `json:"record"`
}

// Files is the node's file store with the records of files in the shared bucket published to
// the cluster: File finds a record stored by another node, and OpenFile reads its data from the
// bucket. A record expires from the cluster's bucket with the file (a per-key TTL). What is not
// shared: the response cache, and the extras of a file (content, slices), which only the node
// that rendered them serves.
type Files struct {
	LocalFiles
	kv  jetstream.KeyValue
	js  jetstream.JetStream // lists kv (scan)
	log zerolog.Logger
	now func() time.Time
}

// NewFiles shares the records of local's files in the node's files bucket.
func NewFiles(local LocalFiles, n *Node, log zerolog.Logger) *Files {
	return &Files{LocalFiles: local, kv: n.Files, js: n.js, log: log, now: time.Now}
}

// PutFile stores the file on this node and publishes its record.
func (f *Files) PutFile(accountID string, out *shotd.Output, ttl time.Duration) (shotd.FileRecord, error) {
	rec, err := f.LocalFiles.PutFile(accountID, out, ttl)
	if err == nil {
		f.share(rec)
	}
	return rec, err
}

// PutCachedFile stores the file and its cache entry on this node and publishes the record.
func (f *Files) PutCachedFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error) {
	rec, err := f.LocalFiles.PutCachedFile(accountID, out, ttl, cacheKey, cacheTTL)
	if err == nil {
		f.share(rec)
	}
	return rec, err
}

// share publishes a record of a file in the shared bucket. A failure is logged: the file is
// still served by this node.
func (f *Files) share(rec shotd.FileRecord) {
	if !rec.Remote {
		return // data_dir/files: no other node can read it
	}
	ttl := time.Until(rec.ExpiresAt)
	if ttl < time.Second {
		return
	}
	data, _ := json.Marshal(fileRecord{V: recordVersion, Record: rec})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := f.kv.Create(ctx, rec.FileID, data, jetstream.KeyTTL(ttl.Round(time.Second)+time.Second)); err != nil {
		f.log.Warn().Err(err).Str("file", rec.FileID).Msg("file record not shared; only this node serves it")
	}
}

// File returns the record from this node, else from the cluster: the same not-found error for
// an unknown, expired or foreign file.
func (f *Files) File(accountID, fileID string) (shotd.FileRecord, error) {
	rec, err := f.LocalFiles.File(accountID, fileID)
	if !errors.Is(err, shotd.ErrNotFound) {
		return rec, err
	}
	notFound := err
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e, gerr := f.kv.Get(ctx, fileID)
	switch {
	case errors.Is(gerr, jetstream.ErrKeyNotFound), errors.Is(gerr, jetstream.ErrInvalidKey):
		return shotd.FileRecord{}, notFound
	case gerr != nil:
		return shotd.FileRecord{}, fmt.Errorf("cluster: file %s: %w", fileID, gerr)
	}
	var r fileRecord
	if err := decode(f.log, "file", fileID, e.Value(), &r); err != nil {
		return shotd.FileRecord{}, notFound
	}
	if r.Record.AccountID != accountID || r.Record.FileID != fileID || !r.Record.Remote || r.Record.Expired(f.now()) {
		return shotd.FileRecord{}, notFound
	}
	return r.Record, nil
}
