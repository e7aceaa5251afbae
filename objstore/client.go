package objstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// Addressing says how a bucket is named in a request.
const (
	AddressingAuto    = "auto"    // virtual-host for the endpoints known to want it (AWS, GCS ...), path otherwise
	AddressingPath    = "path"    // https://s3.example.com/bucket/key: MinIO, Garage, SeaweedFS, versitygw
	AddressingVirtual = "virtual" // https://bucket.s3.example.com/key
)

// Config is one bucket on one S3 endpoint.
type Config struct {
	Endpoint        string // http(s)://host[:port]
	Region          string // "" = asked of the endpoint before the first request
	Bucket          string
	AccessKeyID     shotd.Secret
	SecretAccessKey shotd.Secret
	Addressing      string // AddressingAuto when ""
	CAFile          string // PEM roots trusted for an https endpoint besides the system's
	Prefix          string // put before every key, such as "shotd/"
	// Attempts is how many times Put tries (1 = once); a refusal by the guard or an answer of the
	// storage that another try cannot change (credentials, bucket) is not tried again.
	Attempts int
	Backoff  time.Duration // pause before the second try, doubled after each
	// MaxAnswerBytes caps the body of every answer of the endpoint (0: no cap). A user's
	// endpoint is only written to, and answers small XML documents; one that answers without
	// end (the region asked when none is set) must not fill the service's memory.
	MaxAnswerBytes int64
}

// ErrNoSuchKey is wrapped in the error of a Download whose object is not in the bucket. It is
// shotd.ErrNotFound too (errors.Is), so that the store, which reads the bucket through an
// interface, tells a missing object from a bucket that did not answer without importing objstore.
var ErrNoSuchKey error = noSuchKey{}

type noSuchKey struct{}

func (noSuchKey) Error() string        { return "objstore: no such key" }
func (noSuchKey) Is(target error) bool { return target == shotd.ErrNotFound }

// Dialer dials a TCP connection: the egress guard's DialContext, so that every connection to an
// endpoint is checked against the address policy and dials only the checked address.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Client talks to one bucket. It is safe for concurrent use.
type Client struct {
	cfg      Config
	mc       *minio.Client
	tr       *http.Transport
	endpoint *url.URL
	virtual  bool
}

// New returns a client of cfg that dials through dial, which must not be nil: no connection to an
// endpoint may bypass the egress guard. It does no I/O besides reading CAFile.
func New(cfg Config, dial Dialer) (*Client, error) {
	if dial == nil {
		return nil, errors.New("objstore: a dialer is required (the egress guard)")
	}
	if msg := option.CheckStorageEndpoint(cfg.Endpoint); msg != "" {
		return nil, fmt.Errorf("objstore: endpoint %s", msg)
	}
	u, _ := url.Parse(cfg.Endpoint)
	var lookup minio.BucketLookupType
	switch cfg.Addressing {
	case "", AddressingAuto:
		lookup = minio.BucketLookupAuto
	case AddressingPath:
		lookup = minio.BucketLookupPath
	case AddressingVirtual:
		lookup = minio.BucketLookupDNS
	default:
		return nil, fmt.Errorf("objstore: addressing %q is not one of auto, path, virtual", cfg.Addressing)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("objstore: ca file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("objstore: ca file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	// Proxy nil: an environment proxy would dial the endpoint for us, past the guard.
	tr := &http.Transport{DialContext: dial, Proxy: nil, TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second}
	var rt http.RoundTripper = tr
	if cfg.MaxAnswerBytes > 0 {
		rt = cappedAnswers{rt: tr, max: cfg.MaxAnswerBytes}
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKeyID.Reveal(), cfg.SecretAccessKey.Reveal(), ""),
		Secure:       u.Scheme == "https",
		Transport:    rt,
		Region:       cfg.Region,
		BucketLookup: lookup,
		MaxRetries:   1, // we retry ourselves, with our own budget and our own idea of what is worth it
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	if cfg.Attempts < 1 {
		cfg.Attempts = 1
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	virtual := lookup == minio.BucketLookupDNS || (lookup == minio.BucketLookupAuto && isVirtualHostDefault(u.Hostname()))
	return &Client{cfg: cfg, mc: mc, tr: tr, endpoint: u, virtual: virtual}, nil
}

// isVirtualHostDefault mirrors which endpoints minio-go's auto lookup addresses by virtual host.
func isVirtualHostDefault(host string) bool {
	return strings.HasSuffix(host, ".amazonaws.com") || host == "s3.amazonaws.com" ||
		strings.HasSuffix(host, ".aliyuncs.com") || host == "storage.googleapis.com"
}

// Close drops the idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Bucket is the bucket of c.
func (c *Client) Bucket() string { return c.cfg.Bucket }

// PutOptions are the object settings of an upload.
type PutOptions struct {
	ContentType string
	ACL         string // canned ACL; "" = the bucket's default
	Class       string // storage class; "" = the bucket's default
}

// Put uploads data as key, trying up to Config.Attempts times. Errors are *shotd.Error:
// host_not_allowed when the guard refuses the endpoint, storage_failed otherwise.
func (c *Client) Put(ctx context.Context, key string, data []byte, po PutOptions) error {
	return c.PutFrom(ctx, key, bytes.NewReader(data), int64(len(data)), po)
}

// PutFrom is Put of the size bytes of r from offset 0, read again at each try: a file streams
// to the storage without being held in memory.
func (c *Client) PutFrom(ctx context.Context, key string, r io.ReaderAt, size int64, po PutOptions) error {
	opts := minio.PutObjectOptions{ContentType: po.ContentType, StorageClass: po.Class, DisableMultipart: true}
	if po.ACL != "" {
		opts.UserMetadata = map[string]string{"x-amz-acl": po.ACL} // minio-go sends x-amz-acl as it is
	}
	pause := c.cfg.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		_, err = c.mc.PutObject(ctx, c.cfg.Bucket, c.cfg.Prefix+key, io.NewSectionReader(r, 0, size), size, opts)
		if err == nil {
			return nil
		}
		var again bool
		err, again = c.classify(err, "upload")
		if attempt >= c.cfg.Attempts || !again {
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		}
		pause *= 2
	}
}

// Download copies key into an unlinked temporary file in dir and returns it at offset 0: the
// caller streams it as it streams a file of data_dir, and closing it frees the space.
func (c *Client) Download(ctx context.Context, key, dir string) (*os.File, error) {
	obj, err := c.mc.GetObject(ctx, c.cfg.Bucket, c.cfg.Prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, c.fail(err, "download")
	}
	defer obj.Close()
	f, err := os.CreateTemp(dir, "s3-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // still readable through f until it is closed
	if _, err := io.Copy(f, obj); err != nil {
		f.Close()
		return nil, c.fail(err, "download")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Remove deletes key; a key that is already gone is no error.
func (c *Client) Remove(ctx context.Context, key string) error {
	if err := c.mc.RemoveObject(ctx, c.cfg.Bucket, c.cfg.Prefix+key, minio.RemoveObjectOptions{}); err != nil {
		return c.fail(err, "remove")
	}
	return nil
}

// MaxPresign is the longest validity of a SigV4 presigned link.
const MaxPresign = 7 * 24 * time.Hour

// Presign returns a GET link to key valid for expiry (at most MaxPresign, at least a second).
// With Config.Region set it is computed locally; without, the region is asked once.
func (c *Client) Presign(ctx context.Context, key string, expiry time.Duration) (string, error) {
	expiry = min(max(expiry, time.Second), MaxPresign)
	u, err := c.mc.PresignedGetObject(ctx, c.cfg.Bucket, c.cfg.Prefix+key, expiry.Round(time.Second), nil)
	if err != nil {
		return "", c.fail(err, "presign")
	}
	return u.String(), nil
}

// Location is the address of key in the bucket, as its owner would write it: no signature, so
// it opens only where the object is public.
func (c *Client) Location(key string) string {
	segs := strings.Split(c.cfg.Prefix+key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	path := strings.Join(segs, "/")
	if c.virtual {
		return c.endpoint.Scheme + "://" + c.cfg.Bucket + "." + c.endpoint.Host + "/" + path
	}
	return c.endpoint.Scheme + "://" + c.endpoint.Host + "/" + url.PathEscape(c.cfg.Bucket) + "/" + path
}

func (c *Client) fail(err error, what string) error {
	e, _ := c.classify(err, what)
	return e
}

// classify turns a client error into a catalogue error whose message is safe to show: it names
// the bucket and what the storage said, never a credential; the cause is kept for the log. again
// tells whether another try may do better: no answer, or a 5xx, 429 or 408. A refusal by the
// guard or a 4xx (credentials, bucket, ACL) stays what it is.
func (c *Client) classify(err error, what string) (e *shotd.Error, again bool) {
	var se *shotd.Error
	if errors.As(err, &se) && se.Code == shotd.CodeHostNotAllowed {
		return &shotd.Error{Code: shotd.CodeHostNotAllowed, Cause: err,
			Message: "the storage endpoint is a private, local or internal address",
			Fields:  []shotd.FieldError{{Field: "storage_endpoint", Message: "is not an allowed address"}}}, false
	}
	resp := minio.ToErrorResponse(err)
	var msg string
	switch resp.Code {
	case "":
		msg = fmt.Sprintf("the storage could not be reached for the %s", what)
	case "NoSuchBucket":
		msg = fmt.Sprintf("the bucket %q does not exist", c.cfg.Bucket)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidSecurity", "AuthorizationHeaderMalformed",
		"XAdminUserNotFound": // versitygw's word for an unknown key id
		msg = fmt.Sprintf("the storage refused the credentials for bucket %q (%s)", c.cfg.Bucket, resp.Code)
	case "NoSuchKey":
		msg = "the object is not in the bucket"
		err = fmt.Errorf("%w: %w", ErrNoSuchKey, err)
	}
	if msg == "" && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized) {
		// Other servers name a refused key in their own words.
		msg = fmt.Sprintf("the storage refused the credentials for bucket %q (%s)", c.cfg.Bucket, resp.Code)
	}
	if msg == "" {
		msg = fmt.Sprintf("the storage refused the %s (%s)", what, resp.Code)
	}
	st := resp.StatusCode
	again = resp.Code == "" || st >= 500 || st == http.StatusTooManyRequests || st == http.StatusRequestTimeout
	return &shotd.Error{Code: shotd.CodeStorageFailed, Message: msg, Cause: err}, again
}

// PutContent is Put with a content type alone: store.Remote for the service's bucket, whose keys
// get Config.Prefix.
func (c *Client) PutContent(ctx context.Context, key string, data []byte, contentType string) error {
	return c.Put(ctx, key, data, PutOptions{ContentType: contentType})
}

// Object is one object of List: its key without the client's prefix, and when it was written.
type Object struct {
	Key      string
	Modified time.Time
}

// List calls fn with each object under the client's prefix, in key order; an error of fn stops
// it. The cluster's sweeper uses the listing as its index of stored files.
func (c *Client) List(ctx context.Context, fn func(Object) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops minio's listing goroutine when fn stops early
	for info := range c.mc.ListObjects(ctx, c.cfg.Bucket, minio.ListObjectsOptions{Prefix: c.cfg.Prefix, Recursive: true}) {
		if info.Err != nil {
			return c.fail(info.Err, "list")
		}
		if err := fn(Object{Key: strings.TrimPrefix(info.Key, c.cfg.Prefix), Modified: info.LastModified}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// cappedAnswers cuts every answer's body at max bytes (Config.MaxAnswerBytes): reading past it
// fails (http.MaxBytesReader's error).
type cappedAnswers struct {
	rt  http.RoundTripper
	max int64
}

func (c cappedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil {
		resp.Body = http.MaxBytesReader(nil, resp.Body, c.max)
	}
	return resp, err
}
