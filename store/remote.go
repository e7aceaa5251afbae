package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shotd/shotd"
)

// Remote is the service's own bucket ([storage.s3]): objstore.Client implements it. Keys are
// file ids; the client adds its prefix.
type Remote interface {
	PutContent(ctx context.Context, key string, data []byte, contentType string) error
	// Download returns the object in an unlinked temporary file in dir, at offset 0; an error
	// wrapping shotd.ErrNotFound when it is not there (objstore.ErrNoSuchKey is).
	Download(ctx context.Context, key, dir string) (*os.File, error)
	Remove(ctx context.Context, key string) error
	Presign(ctx context.Context, key string, expiry time.Duration) (string, error)
}

// remoteTimeout bounds one call to the bucket; Put's retries are inside it.
const remoteTimeout = 2 * time.Minute

// UseRemote keeps every file stored from now on in r instead of data_dir/files, with the same
// expiry: records still live in bbolt, the sweeper removes the objects of expired records, and
// Result links to a file with a presigned GET valid until it expires. Files stored before stay
// where they are. Call it once, before the store is used.
func (s *Store) UseRemote(r Remote) { s.remote.Store(&r) }

// bucket is the Remote of UseRemote, nil without one. An atomic: the sweeper reads it from its
// goroutine, which Open started before UseRemote.
func (s *Store) bucket() Remote {
	if r := s.remote.Load(); r != nil {
		return *r
	}
	return nil
}

func (s *Store) putRemote(rec shotd.FileRecord, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	if err := s.bucket().PutContent(ctx, rec.FileID, data, rec.ContentType); err != nil {
		// Already storage_failed (or host_not_allowed) with a safe message: keep its code.
		return fmt.Errorf("store: put file %s: %w", rec.FileID, err)
	}
	return nil
}

// removeRemote takes back an upload whose record was not written.
func (s *Store) removeRemote(rec shotd.FileRecord) {
	r := s.bucket()
	if !rec.Remote || r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	if err := r.Remove(ctx, rec.FileID); err != nil {
		s.log.Warn().Err(err).Str("file", rec.FileID).Msg("remove an upload without its record")
	}
}

func (s *Store) openRemote(rec shotd.FileRecord) (*os.File, error) {
	r := s.bucket()
	if r == nil {
		return nil, fmt.Errorf("store: file %s is in a bucket and [storage.s3] is not configured: %w", rec.FileID, shotd.ErrNotFound)
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	f, err := r.Download(ctx, rec.FileID, s.filesDir)
	if errors.Is(err, shotd.ErrNotFound) {
		return nil, fmt.Errorf("store: file %s: %w: %w", rec.FileID, shotd.ErrNotFound, err)
	}
	if err != nil {
		// The bucket did not answer: not a missing file, which a client would take for good.
		return nil, fmt.Errorf("store: file %s: %w", rec.FileID, err)
	}
	return f, nil
}

// sweepRemote removes the object of an expired record; removing one that is not there (a file
// of data_dir, or one already gone) is no error.
func (s *Store) sweepRemote(fileID string) error {
	r := s.bucket()
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	if err := r.Remove(ctx, fileID); err != nil {
		return fmt.Errorf("store: sweep object %s: %w", fileID, err)
	}
	return nil
}

// ResultOf describes rec as a render result (shotd.ResultOf), linking to a file
// of the service's bucket with a presigned GET valid until the file expires (at most 7 days,
// the longest a SigV4 link lives; a cache hit later gets a fresh one). When the link cannot be
// made, the result keeps the files endpoint, which serves the object too.
func (s *Store) ResultOf(rec shotd.FileRecord, cache string) shotd.JobResult {
	r := shotd.ResultOf(rec, cache)
	bucket := s.bucket()
	if !rec.Remote || bucket == nil {
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	link, err := bucket.Presign(ctx, rec.FileID, time.Until(rec.ExpiresAt))
	if err != nil {
		s.log.Warn().Err(err).Str("file", rec.FileID).Msg("presign; the result links to the files endpoint")
		return r
	}
	r.URL = link
	return r
}
