package objstore

import (
	"context"
	"errors"
	"io"
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

// UploadStored is Upload of a file rendered before and kept (a response-cache hit): the bytes
// read from r, the format and type of rec. A hit of a store=true request uploads too: the cache
// saves the render, not the delivery the request asks for.
func (u *Uploader) UploadStored(ctx context.Context, o *shotd.Options, rec shotd.FileRecord, r io.Reader) (string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", shotd.StoredError(err)
	}
	return u.Upload(ctx, o, &shotd.Output{Data: data, Format: rec.Format, ContentType: rec.ContentType})
}

// Upload puts out where o.Storage says and returns the object's location. It has a budget of its
// own: the render may have used up most of ctx's deadline, and its bytes would be lost for
// want of a few seconds. Only a cancellation of ctx (a shutdown) stops it early.
func (u *Uploader) Upload(ctx context.Context, o *shotd.Options, out *shotd.Output) (string, error) {
	if u.Dial == nil {
		return "", errors.New("objstore: the uploader has no dialer")
	}
	st := o.Storage
	endpoint := st.Endpoint
	if endpoint == "" {
		endpoint = shotd.DefaultStorageEndpoint
	}
	c, err := New(Config{Endpoint: endpoint, Bucket: st.Bucket, AccessKeyID: st.Credentials.AccessKeyID,
		SecretAccessKey: st.Credentials.SecretAccessKey, Attempts: u.Attempts, Backoff: u.Backoff}, u.Dial)
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
	key := ObjectKey(st.Path, out.Format, out.Data, time.Now())
	start := time.Now()
	err = c.Put(uctx, key, out.Data, PutOptions{ContentType: out.ContentType, ACL: st.ACL, Class: st.Class})
	log := u.Log.With().Str("bucket", st.Bucket).Str("key", key).Int("bytes", len(out.Data)).Logger()
	if err != nil {
		log.Warn().Err(err).Msg("store: upload failed")
		return "", err
	}
	log.Info().Dur("took", time.Since(start)).Msg("store: uploaded")
	return c.Location(key), nil
}
