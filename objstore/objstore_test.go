package objstore

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/option"
)

// guard lets 127.0.0.1 through, as network.allow_private = ["127.0.0.1"] would, and nothing else
// private: 127.0.0.3 stays refused.
func guard() *egress.Guard {
	return egress.NewGuard(egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}), nil)
}

func storeOptions(t *testing.T, endpoint string, kv ...string) *shotd.Options {
	t.Helper()
	ps := option.Params{}
	all := append([]string{"url", "https://example.com/", "store", "true", "storage_bucket", "shots",
		"storage_endpoint", endpoint, "storage_access_key_id", s3test.AccessKey,
		"storage_secret_access_key", s3test.SecretKey}, kv...)
	for i := 0; i+1 < len(all); i += 2 {
		ps = append(ps, option.Param{Name: all[i], Values: []string{all[i+1]}})
	}
	// A later pair replaces an earlier one of the same name.
	seen := map[string]int{}
	var out option.Params
	for _, p := range ps {
		if i, ok := seen[p.Name]; ok {
			out[i] = p
			continue
		}
		seen[p.Name] = len(out)
		out = append(out, p)
	}
	o, err := option.ParseOptions(out, option.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func output(data []byte) *shotd.Output {
	return &shotd.Output{Data: data, Format: "png", ContentType: "image/png"}
}

func uploader(attempts int) *Uploader {
	return &Uploader{Dial: guard().DialContext, Attempts: attempts, Backoff: 50 * time.Millisecond, Log: zerolog.Nop()}
}

func TestUploadAndPlaceholders(t *testing.T) {
	srv := s3test.Start(t, "shots")
	data := []byte("\x89PNG fake but bytes are bytes")
	cases := []struct {
		name string
		path string
		want string // regexp of the key
	}{
		{"default uuid and extension", "", `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.png$`},
		{"plain name gets the extension", "shots/home", `^shots/home\.png$`},
		{"extension already there", "home.png", `^home\.png$`},
		{"date placeholders", "{{year}}/{{month}}/{{day}}/{{hour}}{{minute}}{{second}}-{{millisecond}}", `^\d{4}/\d{2}/\d{2}/\d{6}-\d{3}\.png$`},
		{"explicit extension", "a/{{timestamp}}.{{extension}}", `^a/\d{10,}\.png$`},
		{"hash", "{{hash}}", `^[0-9a-f]{64}\.png$`},
		{"format without dot", "x-{{format}}", `^x-png\.png$`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var kv []string
			if c.path != "" {
				kv = []string{"storage_path", c.path}
			}
			o := storeOptions(t, srv.Endpoint(), kv...)
			loc, err := uploader(1).Upload(context.Background(), o, output(data))
			if err != nil {
				t.Fatal(err)
			}
			prefix := srv.Endpoint() + "/shots/"
			if !strings.HasPrefix(loc, prefix) {
				t.Fatalf("location %q does not start with %q", loc, prefix)
			}
			key := strings.TrimPrefix(loc, prefix)
			if !regexp.MustCompile(c.want).MatchString(key) {
				t.Fatalf("key %q does not match %s", key, c.want)
			}
			got, err := srv.Object("shots", key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("object %q: %v, %d bytes", key, err, len(got))
			}
		})
	}
}

func TestUploadRefusals(t *testing.T) {
	srv := s3test.Start(t, "shots")
	stopped := s3test.Start(t, "shots")
	stopped.Stop()
	_, port, _ := strings.Cut(srv.Addr(), ":")
	cases := []struct {
		name string
		o    *shotd.Options
		code shotd.Code
		msg  string
	}{
		{"wrong secret", storeOptions(t, srv.Endpoint(), "storage_secret_access_key", "not-the-secret"),
			shotd.CodeStorageFailed, "refused the credentials"},
		{"unknown key id", storeOptions(t, srv.Endpoint(), "storage_access_key_id", "nobody"),
			shotd.CodeStorageFailed, "refused the credentials"},
		{"missing bucket", storeOptions(t, srv.Endpoint(), "storage_bucket", "no-such-bucket"),
			shotd.CodeStorageFailed, `"no-such-bucket" does not exist`},
		{"endpoint the guard refuses", storeOptions(t, "http://127.0.0.3:"+port),
			shotd.CodeHostNotAllowed, "private"},
		{"server down", storeOptions(t, stopped.Endpoint()),
			shotd.CodeStorageFailed, "could not be reached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := uploader(2).Upload(context.Background(), c.o, output([]byte("data")))
			e := shotd.AsError(err)
			if err == nil || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v, want %s containing %q", err, c.code, c.msg)
			}
			if strings.Contains(e.Message, "not-the-secret") || strings.Contains(e.Message, s3test.SecretKey) {
				t.Fatalf("a credential was echoed: %q", e.Message)
			}
		})
	}
}

// TestServerStopsMidUpload kills the server after part of the body went through: with one
// attempt the upload fails and leaves no object; with more, and the server back, the next
// attempt lands the whole file.
func TestServerStopsMidUpload(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	cases := []struct {
		name     string
		attempts int
		restart  bool
	}{
		{"one attempt fails", 1, false},
		{"a retry after the restart lands it", 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := s3test.Start(t, "shots")
			relay := s3test.StartRelay(t, srv.Addr, 64<<10, func() {
				srv.Stop()
				if c.restart {
					srv.Restart()
				}
			})
			o := storeOptions(t, "http://"+relay.Addr, "storage_path", "big")
			loc, err := uploader(c.attempts).Upload(context.Background(), o, output(data))
			if !c.restart {
				if shotd.CodeOf(err) != shotd.CodeStorageFailed {
					t.Fatalf("got %v, want storage_failed", err)
				}
				if _, err := srv.Object("shots", "big.png"); !os.IsNotExist(err) {
					t.Fatalf("a partial object was left: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(loc, "/shots/big.png") {
				t.Fatalf("location %q", loc)
			}
			got, err := srv.Object("shots", "big.png")
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("object: %v, %d of %d bytes", err, len(got), len(data))
			}
		})
	}
}

// TestPresign: a presigned link opens the object without credentials, and after its expiry the
// server refuses it.
func TestPresign(t *testing.T) {
	srv := s3test.Start(t, "files")
	c, err := New(Config{Endpoint: srv.Endpoint(), Region: s3test.Region, Bucket: "files", Addressing: AddressingPath,
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, guard().DialContext)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Put(ctx, "p/f_1", []byte("hello"), PutOptions{ContentType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	link, err := c.Presign(ctx, "p/f_1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	get := func() (int, string) {
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get(); st != 200 || body != "hello" {
		t.Fatalf("fresh link: %d %q", st, body)
	}
	// Wait for the server to refuse the link; the deadline only bounds a broken server.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		st, _ := get()
		if st == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the link still answers %d after its expiry", st)
		}
	}
	f, err := c.Download(ctx, "p/f_1", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Fatalf("download: %q", b)
	}
	if err := c.Remove(ctx, "p/f_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Object("files", "p/f_1"); !os.IsNotExist(err) {
		t.Fatalf("removed object still there: %v", err)
	}
}

func TestAddressingLocation(t *testing.T) {
	cases := []struct {
		name, endpoint, addressing, want string
	}{
		{"path", "http://127.0.0.1:9000", AddressingPath, "http://127.0.0.1:9000/b1/a%20b/c.png"},
		{"virtual", "https://s3.example.com", AddressingVirtual, "https://b1.s3.example.com/a%20b/c.png"},
		{"auto on aws", "https://s3.amazonaws.com", AddressingAuto, "https://b1.s3.amazonaws.com/a%20b/c.png"},
		{"auto elsewhere", "https://minio.example.com:9000", "", "https://minio.example.com:9000/b1/a%20b/c.png"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Config{Endpoint: c.endpoint, Bucket: "b1", Addressing: c.addressing}, guard().DialContext)
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.Location("a b/c.png"); got != c.want {
				t.Fatalf("got %s want %s", got, c.want)
			}
		})
	}
	if _, err := New(Config{Endpoint: "https://s3.example.com", Bucket: "b1"}, nil); err == nil {
		t.Fatal("a client without the guard's dialer was built")
	}
}

func TestSealer(t *testing.T) {
	dir := t.TempDir()
	s1, err := OpenSealer(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, fi)
	}
	s2, err := OpenSealer(dir) // the same key, read back
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds := shotd.StorageCredentials{AccessKeyID: "AKID", SecretAccessKey: "s3cr3t-value"}
	sealed, err := s1.Seal(creds)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("s3cr3t-value")) || bytes.Contains(sealed, []byte("AKID")) {
		t.Fatal("sealed bytes hold the credentials in clear")
	}
	cases := []struct {
		name string
		s    *Sealer
		in   []byte
		ok   bool
	}{
		{"same key", s2, sealed, true},
		{"other key", other, sealed, false},
		{"altered", s2, append(append([]byte{}, sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), false},
		{"short", s2, []byte{1, 2}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.s.Open(c.in)
			if c.ok != (err == nil) || (c.ok && got != creds) {
				t.Fatalf("got %v, %v", got, err)
			}
		})
	}
}

// TestTLSAndAddressing uploads over https with a private CA, and by virtual host, to real
// servers.
func TestTLSAndAddressing(t *testing.T) {
	tlsSrv := s3test.StartWith(t, s3test.Options{TLS: true}, "shots")
	vhSrv := s3test.StartWith(t, s3test.Options{VirtualDomain: "localhost"}, "shots")
	_, vhPort, _ := strings.Cut(vhSrv.Addr(), ":")
	// localhost is both loopback addresses: the guard refuses a name if it refuses any of them.
	both := egress.NewGuard(egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}), nil)
	cases := []struct {
		name       string
		srv        *s3test.Server
		endpoint   string
		addressing string
		caFile     string
		dial       Dialer
		location   string // prefix; "" = the upload fails with storage_failed
	}{
		{"https with the private CA", tlsSrv, tlsSrv.Endpoint(), AddressingPath, tlsSrv.CAFile, guard().DialContext, tlsSrv.Endpoint() + "/shots/k"},
		{"https without it", tlsSrv, tlsSrv.Endpoint(), AddressingPath, "", guard().DialContext, ""},
		{"virtual host", vhSrv, "http://localhost:" + vhPort, AddressingVirtual, "", both.DialContext, "http://shots.localhost:" + vhPort + "/k"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := New(Config{Endpoint: c.endpoint, Region: s3test.Region, Bucket: "shots", Addressing: c.addressing, CAFile: c.caFile,
				AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, c.dial)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			err = cl.Put(context.Background(), "k", []byte("v"), PutOptions{ContentType: "text/plain"})
			if c.location == "" {
				if shotd.CodeOf(err) != shotd.CodeStorageFailed {
					t.Fatalf("got %v, want storage_failed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.srv.Object("shots", "k"); err != nil || string(got) != "v" {
				t.Fatalf("object: %v %q", err, got)
			}
			if loc := cl.Location("k"); loc != c.location {
				t.Fatalf("location %s, want %s", loc, c.location)
			}
		})
	}
}

// TestACLAndClass: storage_acl and storage_class travel with the upload.
func TestACLAndClass(t *testing.T) {
	srv := s3test.Start(t, "shots")
	cases := []struct{ name, acl, class string }{
		{"acl private", "private", ""},
		{"class standard", "", "STANDARD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := []string{"storage_path", "acl-" + strings.ReplaceAll(c.name, " ", "-")}
			if c.acl != "" {
				kv = append(kv, "storage_acl", c.acl)
			}
			if c.class != "" {
				kv = append(kv, "storage_class", c.class)
			}
			if _, err := uploader(1).Upload(context.Background(), storeOptions(t, srv.Endpoint(), kv...), output([]byte("x"))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSealProxyOptions: a job record of a render through a proxy with credentials holds them
// only sealed, and they come back whole with the same key; the caller's options are untouched.
func TestSealProxyOptions(t *testing.T) {
	s, err := OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := &shotd.Options{URL: "http://127.0.0.1/"}
	o.Proxy = &shotd.UpstreamProxy{Host: "127.0.0.1:3128", Username: "proxy-user", Password: "proxy-s3cret", Bypass: []string{"a.test"}}
	if !o.HasSecrets() {
		t.Fatal("a proxy with credentials has no secrets")
	}
	sealed, err := s.SealOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Proxy.Password != "proxy-s3cret" || o.Proxy.Sealed != nil {
		t.Fatal("SealOptions changed the caller's options")
	}
	raw, err := json.Marshal(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("proxy-s3cret")) || bytes.Contains(raw, []byte("proxy-user")) {
		t.Fatalf("the record holds the proxy's credentials in clear: %s", raw)
	}
	var back shotd.Options
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !back.HasSecrets() {
		t.Fatal("the record lost the sign of its sealed credentials")
	}
	if err := s.OpenOptions(&back); err != nil {
		t.Fatal(err)
	}
	p := back.Proxy
	if p.Username != "proxy-user" || p.Password != "proxy-s3cret" || p.Host != "127.0.0.1:3128" || p.Sealed != nil || len(p.Bypass) != 1 {
		t.Fatalf("opened %+v", *p)
	}
	other, err := OpenSealer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := other.OpenOptions(&back); shotd.CodeOf(err) != shotd.CodeInternalError {
		t.Fatalf("another key: %v, want internal_error", err)
	}

	plain := &shotd.Options{URL: "http://127.0.0.1/"}
	plain.Proxy = &shotd.UpstreamProxy{Host: "127.0.0.1:3128"}
	raw, _ = json.Marshal(plain)
	back = shotd.Options{}
	if err := json.Unmarshal(raw, &back); err != nil || back.HasSecrets() || back.Proxy.HasCredentials() {
		t.Fatalf("a proxy without credentials came back with some: %+v (%v)", back.Proxy, err)
	}
}

// TestObjectKeyExtension: a key ends with the file's extension, not the format's name, where
// they differ.
func TestObjectKeyExtension(t *testing.T) {
	now := time.Unix(1763774400, 0)
	for format, want := range map[string]string{"gif_still": `^k\.gif$`, "markdown": `^k\.md$`, "png": `^k\.png$`} {
		if key := ObjectKey("k", format, nil, now); !regexp.MustCompile(want).MatchString(key) {
			t.Errorf("%s: key %q does not match %s", format, key, want)
		}
		if key := ObjectKey("k.{{extension}}", format, nil, now); !regexp.MustCompile(want).MatchString(key) {
			t.Errorf("%s: key %q does not match %s", format, key, want)
		}
	}
}

// TestUserEndpointEndlessAnswer: a user's endpoint that answers without end (here the region the
// client asks for first) fails the upload with storage_failed once its answer passes a MiB,
// rather than being read whole into the service's memory.
func TestUserEndpointEndlessAnswer(t *testing.T) {
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.Query().Has("location") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		if _, err := io.WriteString(w, "<LocationConstraint>"); err != nil {
			return
		}
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for written.Load() < 256<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	o := storeOptions(t, srv.URL)
	_, err := uploader(1).Upload(context.Background(), o, output([]byte("png")))
	if shotd.CodeOf(err) != shotd.CodeStorageFailed {
		t.Fatalf("got %v, want storage_failed", err)
	}
	time.Sleep(200 * time.Millisecond) // the server's last writes fail once the client closed
	if n := written.Load(); n > 32<<20 {
		t.Fatalf("the client read %d MiB of the answer", n>>20)
	}
}
