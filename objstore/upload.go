package objstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// Uploader carries out store=true: it uploads a render to the bucket its options name.
type Uploader struct {
	Dial Dialer // the egress guard's DialContext; required
	// Attempts and Backoff: see Config. A job is given more attempts than a request that a
	// client waits for.
	Attempts int
	Backoff  time.Duration
	Timeout  time.Duration // one upload with its retries; 0: 2 minutes
	Log      zerolog.Logger
}

// Wrap returns render followed, for store=true, by the upload: the output's StorageLocation
// tells where it went. A failed upload fails the render with storage_failed (host_not_allowed
// when the guard refuses the endpoint), which the account counts as a failed render.
func (u *Uploader) Wrap(r shotd.Renderer) shotd.Renderer {
	return shotd.RenderFunc(func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
		out, err := r.Render(ctx, o)
		if err != nil || !o.Store {
			return out, err
		}
		loc, err := u.Upload(ctx, o, out)
		if err != nil {
			return nil, err
		}
		c := *out
		c.StorageLocation = loc
		return &c, nil
	})
}

// UploadStored is Upload of a file rendered before and kept (a response-cache hit): the
// rec.SizeBytes bytes of f, the format and type of rec, streamed from f rather than read into
// memory. A hit of a store=true request uploads too: the cache saves the render, not the
// delivery the request asks for. A file that cannot be read is internal_error (the service's
// trouble, shotd.OutcomeOfHit), never storage_failed.
func (u *Uploader) UploadStored(ctx context.Context, o *shotd.Options, rec shotd.FileRecord, f io.ReaderAt) (string, error) {
	kf := &keptFile{r: f}
	h := sha256.New() // {{hash}}; and a file that cannot be read fails here, before any upload
	n, err := io.Copy(h, io.NewSectionReader(kf, 0, rec.SizeBytes))
	if err == nil && n != rec.SizeBytes {
		err = fmt.Errorf("the file has %d bytes, its record %d", n, rec.SizeBytes)
	}
	if err != nil {
		return "", unreadable(err)
	}
	p := payload{format: rec.Format, contentType: rec.ContentType, r: kf, size: rec.SizeBytes, sum: [sha256.Size]byte(h.Sum(nil))}
	loc, err := u.upload(ctx, o, p)
	if rerr := kf.failed(); err != nil && rerr != nil {
		return "", unreadable(rerr)
	}
	return loc, err
}

func unreadable(err error) error {
	return shotd.Wrap(shotd.CodeInternalError, fmt.Errorf("%w: %w", shotd.ErrFileUnreadable, err), "the cached file could not be read")
}

// keptFile remembers a failure to read the file during an upload, which the storage client
// would report as its own.
type keptFile struct {
	r   io.ReaderAt
	mu  sync.Mutex
	err error
}

func (k *keptFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := k.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		k.mu.Lock()
		k.err = cmp.Or(k.err, err)
		k.mu.Unlock()
	}
	return n, err
}

func (k *keptFile) failed() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// payload is what an upload sends: a render in memory or a kept file.
type payload struct {
	format, contentType string
	r                   io.ReaderAt
	size                int64
	sum                 [sha256.Size]byte
}

// Upload puts out where o.Storage says and returns the object's location (upload).
func (u *Uploader) Upload(ctx context.Context, o *shotd.Options, out *shotd.Output) (string, error) {
	return u.upload(ctx, o, payload{format: out.Format, contentType: out.ContentType, r: bytes.NewReader(out.Data),
		size: int64(len(out.Data)), sum: sha256.Sum256(out.Data)})
}

// maxUserAnswer caps each answer of a user's storage endpoint: S3 answers an upload, and the
// region it is asked for, with a few hundred bytes of XML.
const maxUserAnswer = 1 << 20

// upload puts p where o.Storage says and returns the object's location. It has a budget of its
// own: the render may have used up most of ctx's deadline, and its bytes would be lost for
// want of a few seconds. Only a cancellation of ctx (a shutdown) stops it early.
func (u *Uploader) upload(ctx context.Context, o *shotd.Options, p payload) (string, error) {
	if u.Dial == nil {
		return "", errors.New("objstore: the uploader has no dialer")
	}
	st := o.Storage
	endpoint := st.Endpoint
	if endpoint == "" {
		endpoint = shotd.DefaultStorageEndpoint
	}
	c, err := New(Config{Endpoint: endpoint, Bucket: st.Bucket, AccessKeyID: st.Credentials.AccessKeyID,
		SecretAccessKey: st.Credentials.SecretAccessKey, Attempts: u.Attempts, Backoff: u.Backoff,
		MaxAnswerBytes: maxUserAnswer}, u.Dial)
	if err != nil {
		return "", shotd.Wrap(shotd.CodeStorageFailed, err, "the storage endpoint cannot be used")
	}
	defer c.Close()
	timeout := u.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	key := objectKey(st.Path, p.format, p.sum, time.Now())
	start := time.Now()
	err = c.PutFrom(uctx, key, p.r, p.size, PutOptions{ContentType: p.contentType, ACL: st.ACL, Class: st.Class})
	log := u.Log.With().Str("bucket", st.Bucket).Str("key", key).Int64("bytes", p.size).Logger()
	if err != nil {
		log.Warn().Err(err).Msg("store: upload failed")
		return "", err
	}
	log.Info().Dur("took", time.Since(start)).Msg("store: uploaded")
	return c.Location(key), nil
}
