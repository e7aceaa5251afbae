package store

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/objstore"
)

// remoteStore is a store whose files live in a real S3 server's bucket "files" under "shotd/".
func remoteStore(t *testing.T) (*Store, *s3test.Server) {
	t.Helper()
	srv := s3test.Start(t, "files")
	g := egress.NewGuard(egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}), nil)
	c, err := objstore.New(objstore.Config{Endpoint: srv.Endpoint(), Region: s3test.Region, Bucket: "files",
		Prefix: "shotd/", Addressing: objstore.AddressingPath, AccessKeyID: s3test.AccessKey,
		SecretAccessKey: s3test.SecretKey, Attempts: 2, Backoff: 50 * time.Millisecond}, g.DialContext)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, _ := openStore(t)
	s.UseRemote(c)
	return s, srv
}

func httpGet(t *testing.T, link string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestRemoteFiles: with a bucket, a stored result is an object of the bucket (not a file of
// data_dir), its url a presigned GET that works until expires_at and then is refused, the files
// endpoint's OpenFile reads it back, and the sweeper removes it with its record.
func TestRemoteFiles(t *testing.T) {
	s, srv := remoteStore(t)
	rec, err := s.PutFile("acc1", pngOutput("remote bytes"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Remote {
		t.Fatal("record not marked remote")
	}
	if got, err := srv.Object("files", "shotd/"+rec.FileID); err != nil || string(got) != "remote bytes" {
		t.Fatalf("object: %v %q", err, got)
	}
	if _, err := os.Stat(filepath.Join(s.filesDir, rec.FileID)); !os.IsNotExist(err) {
		t.Fatalf("a copy was left in data_dir: %v", err)
	}

	// The result links to the object itself, not to the files endpoint.
	res := s.ResultOf(rec, "MISS")
	if !strings.HasPrefix(res.URL, srv.Endpoint()+"/files/shotd/"+rec.FileID+"?") || !strings.Contains(res.URL, "X-Amz-Signature=") {
		t.Fatalf("url is not a presigned link of the bucket: %s", res.URL)
	}
	if st, body := httpGet(t, res.URL); st != 200 || string(body) != "remote bytes" {
		t.Fatalf("presigned link: %d %q", st, body)
	}

	f, err := s.OpenFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "remote bytes" {
		t.Fatalf("OpenFile: %q", b)
	}

	// Wait until the link expires (the deadline only bounds a broken server).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		st, _ := httpGet(t, res.URL)
		if st == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the link still answers %d after expires_at", st)
		}
	}
	if n, err := s.SweepNow(rec.ExpiresAt.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := srv.Object("files", "shotd/"+rec.FileID); !os.IsNotExist(err) {
		t.Fatalf("the sweeper left the object: %v", err)
	}
}

// TestRemotePutFails: a bucket that does not answer is storage_failed and leaves no record.
func TestRemotePutFails(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(*s3test.Server)
		msg     string
	}{
		{"server down", func(s *s3test.Server) { s.Stop() }, "could not be reached"},
		{"bucket gone", func(s *s3test.Server) {
			if err := os.RemoveAll(filepath.Join(s.Root, "files")); err != nil {
				t.Fatal(err)
			}
		}, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, srv := remoteStore(t)
			c.breakIt(srv)
			_, err := s.PutFile("acc1", pngOutput("x"), time.Hour)
			e := shotd.AsError(shotd.StoredError(err))
			if e.Code != shotd.CodeStorageFailed || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v, want storage_failed with %q", err, c.msg)
			}
			if recs := countFiles(t, s); recs != 0 {
				t.Fatalf("%d records left", recs)
			}
		})
	}
}

func countFiles(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.View(func(tx *bbolt.Tx) error { n = tx.Bucket(bucketFiles).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRemoteOpen: an object gone from the bucket is a missing file (file_not_found); a bucket
// that does not answer is not (storage_failed: the file may well be there).
func TestRemoteOpen(t *testing.T) {
	cases := []struct {
		name     string
		breakIt  func(*s3test.Server, shotd.FileRecord)
		notFound bool
	}{
		{"object removed", func(s *s3test.Server, rec shotd.FileRecord) {
			if err := os.Remove(filepath.Join(s.Root, "files", "shotd", rec.FileID)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"server down", func(s *s3test.Server, _ shotd.FileRecord) { s.Stop() }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, srv := remoteStore(t)
			rec, err := s.PutFile("acc1", pngOutput("x"), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c.breakIt(srv, rec)
			f, err := s.OpenFile(rec)
			if err == nil {
				f.Close()
				t.Fatal("opened")
			}
			if got := errors.Is(err, shotd.ErrNotFound); got != c.notFound {
				t.Fatalf("ErrNotFound %v, want %v: %v", got, c.notFound, err)
			}
			if !c.notFound && shotd.CodeOf(shotd.StoredError(err)) != shotd.CodeStorageFailed {
				t.Fatalf("got %v, want storage_failed", err)
			}
		})
	}
}
