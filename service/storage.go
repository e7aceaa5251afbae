package service

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/store"
)

// storage wires S3: the service's own bucket under the store when [storage.s3] is set, dialled
// by a dialer of its own (bucketDialer), and the store=true uploads around the renders, dialled
// through guard.
type storage struct {
	sealer *objstore.Sealer
	sync   *objstore.Uploader // a client waits: few, short tries
	jobs   *objstore.Uploader // nobody waits: a job retries its upload longer before it fails
	bucket *objstore.Client   // nil without [storage.s3]
}

func openStorage(ctx context.Context, cfg *config.Config, st *store.Store, guard *egress.Guard, log zerolog.Logger) (*storage, error) {
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
			SecretAccessKey: shotd.Secret(c.SecretAccessKey), Attempts: 3, Backoff: time.Second}, bucketDialer(c.Endpoint, c.Bucket))
		if err != nil {
			return nil, fmt.Errorf("storage.s3: %w", err)
		}
		denyBucket(ctx, guard, c.Endpoint, log)
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

// bucketDialer dials the server-wide bucket's endpoint, host:port as configured (or bucket.host
// for virtual-host addressing), and refuses anything else. The operator chose the endpoint: it
// needs no network.allow_private entry, which would open it to every page too.
func bucketDialer(endpoint, bucket string) objstore.Dialer {
	allowed := map[string]bool{}
	if host, port, ok := endpointHostPort(endpoint); ok {
		host = strings.ToLower(host)
		allowed[net.JoinHostPort(host, port)] = true
		allowed[net.JoinHostPort(strings.ToLower(bucket)+"."+host, port)] = true
	}
	d := &net.Dialer{Timeout: 30 * time.Second}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if !allowed[strings.ToLower(address)] {
			return nil, fmt.Errorf("storage.s3: %s is not the bucket's endpoint", address)
		}
		return d.DialContext(ctx, network, address)
	}
}

// denyBucket has the guard refuse the bucket's endpoint to every page, webhook and
// storage_endpoint when it is on a private or local address, even one network.allow_private
// lets through: a page must not reach the service's own bucket. Its name is resolved once, here.
// A public endpoint is left alone: refusing its addresses would refuse sites that share them.
func denyBucket(ctx context.Context, guard *egress.Guard, endpoint string, log zerolog.Logger) {
	host, port, ok := endpointHostPort(endpoint)
	if !ok {
		return
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		log.Warn().Err(err).Str("endpoint", endpoint).Msg("the bucket's endpoint does not resolve: pages are not kept from its addresses")
		return
	}
	public := egress.NewPolicy(nil)
	for _, a := range addrs {
		if a = a.Unmap(); public.Check(a) != nil {
			guard.DenyPort(netip.AddrPortFrom(a, uint16(p)))
		}
	}
}

// endpointHostPort returns the host and the port (the scheme's when none is given) of an
// endpoint URL.
func endpointHostPort(endpoint string) (host, port string, ok bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return "", "", false
	}
	port = u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Hostname(), port, true
}
