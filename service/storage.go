package service

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/store"
)

// storage wires S3: the service's own bucket under the store when [storage.s3] is set, and the
// store=true uploads around the renders, all dialled through guard.
type storage struct {
	sealer *objstore.Sealer
	sync   *objstore.Uploader // a client waits: few, short tries
	jobs   *objstore.Uploader // nobody waits: a job retries its upload longer before it fails
	bucket *objstore.Client   // nil without [storage.s3]
}

func openStorage(cfg *config.Config, st *store.Store, guard *egress.Guard, log zerolog.Logger) (*storage, error) {
	sealer, err := objstore.OpenSealer(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	log = log.With().Str("component", "storage").Logger()
	s := &storage{sealer: sealer,
		sync: &objstore.Uploader{Dial: guard.DialContext, Attempts: 2, Backoff: time.Second, Timeout: time.Minute, Log: log},
		jobs: &objstore.Uploader{Dial: guard.DialContext, Attempts: 6, Backoff: 2 * time.Second, Timeout: 5 * time.Minute, Log: log}}
	if c := cfg.Storage.S3; c.Enabled() {
		s.bucket, err = objstore.New(objstore.Config{Endpoint: c.Endpoint, Region: c.Region, Bucket: c.Bucket, Prefix: c.Prefix,
			Addressing: c.Addressing, CAFile: c.CAFile, AccessKeyID: shotd.Secret(c.AccessKeyID),
			SecretAccessKey: shotd.Secret(c.SecretAccessKey), Attempts: 3, Backoff: time.Second}, guard.DialContext)
		if err != nil {
			return nil, fmt.Errorf("storage.s3: %w", err)
		}
		st.UseRemote(s.bucket)
		log.Info().Str("endpoint", c.Endpoint).Str("bucket", c.Bucket).Str("prefix", c.Prefix).Msg("stored results go to the bucket")
	}
	return s, nil
}

func (s *storage) close() {
	if s.bucket != nil {
		s.bucket.Close()
	}
}

// storingRenderer is the renderer of the public API with store=true's upload after each render.
type storingRenderer struct {
	*actors.Renderer
	render objstore.RenderFunc
}

func (r storingRenderer) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	return r.render(ctx, o)
}
