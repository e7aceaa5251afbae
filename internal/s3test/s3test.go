package s3test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/freeport"
	"github.com/shotd/shotd/internal/proc"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

const (
	AccessKey = "shotdtestaccess"
	SecretKey = "shotdtestsecret0123456789"
	Region    = "us-east-1"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of versitygw, building it at the first call of the process. Concurrent
// test binaries serialise the build with a lock file beside it.
func Binary() (string, error) {
	buildOnce.Do(func() {
		if p := os.Getenv("SHOTD_TEST_VERSITYGW"); p != "" {
			binPath = p
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "shotd-test", "versitygw-"+Version)
		binPath = filepath.Join(dir, "versitygw")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			buildErr = err
			return
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			buildErr = err
			return
		}
		if _, err := os.Stat(binPath); err == nil {
			return
		}
		// go install with a version builds outside this module: versitygw's dependencies never
		// enter shotd's go.mod. nice: the build machine is shared.
		cmd := exec.Command("nice", "-n", "15", "go", "install", "github.com/versity/versitygw/cmd/versitygw@"+Version)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("s3test: build versitygw %s: %v\n%s", Version, err, out)
		}
	})
	return binPath, buildErr
}

// Options change how a Server listens.
type Options struct {
	// TLS serves https with a certificate for 127.0.0.1 and localhost, signed by a CA of the
	// test written to Server.CAFile.
	TLS bool
	// VirtualDomain accepts virtual-host requests (bucket.VirtualDomain:port), as with
	// "localhost", which resolves to loopback for every subdomain.
	VirtualDomain string
}

// Server is one versitygw process serving the buckets under Root.
type Server struct {
	Root   string // one directory per bucket
	CAFile string // with Options.TLS: the PEM of the CA that signed the server's certificate
	opts   Options
	args   []string
	t      testing.TB

	mu    sync.Mutex
	addr  string      // 127.0.0.1:port
	group *proc.Group // nil when stopped
}

// Addr is the address the server listens on (127.0.0.1:port); Restart may change it.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start builds (once) and starts versitygw on a free loopback port with a fresh root, and stops
// it when the test ends. buckets are created empty.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	return StartWith(t, Options{}, buckets...)
}

// StartWith is Start with opts.
func StartWith(t testing.TB, opts Options, buckets ...string) *Server {
	t.Helper()
	s := &Server{Root: t.TempDir(), t: t, opts: opts}
	if opts.TLS {
		dir := t.TempDir()
		cert, key, ca := writeCerts(t, dir)
		s.CAFile = ca
		s.args = append(s.args, "--cert", cert, "--key", key)
	}
	if opts.VirtualDomain != "" {
		s.args = append(s.args, "--virtual-domain", opts.VirtualDomain)
	}
	for _, b := range buckets {
		s.CreateBucket(b)
	}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Endpoint is the server's endpoint, https with Options.TLS.
func (s *Server) Endpoint() string {
	if s.opts.TLS {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// CreateBucket makes an empty bucket: with the posix backend a bucket is a directory.
func (s *Server) CreateBucket(name string) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Join(s.Root, name), 0o755); err != nil {
		s.t.Fatal(err)
	}
}

// Restart starts the server again (on a new port when the old one is taken), after Stop.
func (s *Server) Restart() {
	s.t.Helper()
	bin, err := Binary()
	if err != nil {
		s.t.Fatal(err)
	}
	addr := s.Addr()
	if addr == "" {
		addr = freePort(s.t)
	}
	for try := 0; ; try++ {
		if err := s.start(bin, addr); err == nil {
			return
		} else if try == 2 {
			s.t.Fatalf("s3test: versitygw did not start: %v", err)
		}
		addr = freePort(s.t)
	}
}

func (s *Server) start(bin, addr string) error {
	args := append([]string{"--port", addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--quiet"}, s.args...)
	cmd := exec.Command(bin, append(args, "posix", "--nometa", s.Root)...)
	cmd.Stdout, cmd.Stderr = io.Discard, &prefixWriter{t: s.t}
	g, err := proc.Start(cmd) // its own group, which dies with the test binary
	if err != nil {
		return err
	}
	done := g.Exited()
	// Ready when it answers HTTP at all (an anonymous request is refused with 403: still up).
	// No certificate check: this only waits for the port to answer.
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		select {
		case <-done:
			return errors.New("exited at start")
		default:
		}
		scheme := "http://"
		if s.opts.TLS {
			scheme = "https://"
		}
		if resp, err := client.Get(scheme + addr + "/"); err == nil {
			resp.Body.Close()
			s.mu.Lock()
			s.group, s.addr = g, addr
			s.mu.Unlock()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.Kill()
	<-done
	return errors.New("not answering")
}

// Stop kills the server (its own process group, which it alone is in) and waits for it. The
// files stay; Restart serves them again.
func (s *Server) Stop() {
	s.mu.Lock()
	g := s.group
	s.group = nil
	s.mu.Unlock()
	if g == nil {
		return
	}
	g.Kill()
	<-g.Exited()
}

// Object reads an object straight from the backend directory.
func (s *Server) Object(bucket, key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.Root, bucket, filepath.FromSlash(key)))
}

func freePort(t testing.TB) string { return freeport.Addr(t) }

// prefixWriter sends what versitygw prints on stderr to the test log.
type prefixWriter struct{ t testing.TB }

func (w *prefixWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.t.Logf("versitygw: %s", s)
	}
	return len(p), nil
}

// Relay is a loopback TCP relay in front of a Server that calls OnBytes once a connection has
// carried more than After bytes towards the server: a test stops the server there, in the middle
// of an upload, for real.
type Relay struct {
	Addr    string
	ln      net.Listener
	target  func() string
	after   int64
	onBytes func()
	once    sync.Once
	wg      sync.WaitGroup
}

// StartRelay relays to target() (read at each connection) and calls onBytes once, when a
// connection has sent more than after bytes. It closes when the test ends.
func StartRelay(t testing.TB, target func() string, after int64, onBytes func()) *Relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Addr: ln.Addr().String(), ln: ln, target: target, after: after, onBytes: onBytes}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(func() { ln.Close(); r.wg.Wait() })
	return r
}

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.pipe(c)
		}()
	}
}

func (r *Relay) pipe(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", r.target())
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(c, up); c.Close() }()
	var sent int64
	buf := make([]byte, 16<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
			sent += int64(n)
			if sent > r.after && r.onBytes != nil {
				r.once.Do(r.onBytes)
			}
		}
		if err != nil {
			return
		}
	}
}
