package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

func pngOutput(data string) *shotd.Output {
	return &shotd.Output{Data: []byte(data), Format: "png", ContentType: "image/png", Width: 1280, Height: 720, RenderMs: 42}
}

// putFile stores data for accountID with ttl or fails the test.
func putFile(t *testing.T, s *Store, accountID, data string, ttl time.Duration) shotd.FileRecord {
	t.Helper()
	rec, err := s.PutFile(accountID, pngOutput(data), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// rewrite changes a stored JSON record behind the API's back, to make one that has expired.
func rewrite[T any](t *testing.T, s *Store, bucket []byte, key string, fn func(*T)) {
	t.Helper()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var v T
		if _, err := getJSON(tx.Bucket(bucket), key, &v); err != nil {
			return err
		}
		fn(&v)
		return putJSON(tx.Bucket(bucket), key, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dirNames lists the files directory.
func dirNames(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(s.filesDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPutFileAndStream(t *testing.T) {
	s, dir := openStore(t)
	before := time.Now()
	rec := putFile(t, s, "acc_a", "\x89PNG data", time.Hour)

	if !regexp.MustCompile(`^f_[A-Za-z0-9_-]{22}$`).MatchString(rec.FileID) {
		t.Errorf("file id %q, want f_ and 22 url-safe characters (128 bits)", rec.FileID)
	}
	want := shotd.FileRecord{FileID: rec.FileID, AccountID: "acc_a", Format: "png", ContentType: "image/png",
		SizeBytes: 9, Width: 1280, Height: 720, RenderMs: 42, CreatedAt: rec.CreatedAt, ExpiresAt: rec.CreatedAt.Add(time.Hour)}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record %+v, want %+v", rec, want)
	}
	if rec.CreatedAt.Before(before.Add(-time.Second)) || rec.CreatedAt.After(time.Now()) || rec.CreatedAt.Location() != time.UTC {
		t.Errorf("created_at %v", rec.CreatedAt)
	}

	got, err := s.File("acc_a", rec.FileID)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("File = %+v, %v; want %+v", got, err, rec)
	}
	f, err := s.OpenFile(got)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil || string(data) != "\x89PNG data" {
		t.Fatalf("streamed %q, %v", data, err)
	}

	path := filepath.Join(dir, FilesDir, rec.FileID)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	if names := dirNames(t, s); len(names) != 1 || names[0] != rec.FileID {
		t.Errorf("files dir holds %v, want only %s (no temp file left)", names, rec.FileID)
	}
	if other := putFile(t, s, "acc_a", "x", time.Hour); other.FileID == rec.FileID {
		t.Fatal("two files share an id")
	}
}

func TestFileLookup(t *testing.T) {
	s, _ := openStore(t)
	mine := putFile(t, s, "acc_a", "mine", time.Hour)
	expired := putFile(t, s, "acc_a", "old", time.Hour)
	rewrite(t, s, bucketFiles, expired.FileID, func(r *shotd.FileRecord) { r.ExpiresAt = time.Now().Add(-time.Millisecond) })
	unknown := "f_" + strings.Repeat("A", 22)

	tests := []struct {
		name      string
		accountID string
		fileID    string
		wantErr   error
	}{
		{"owner", "acc_a", mine.FileID, nil},
		{"another account", "acc_b", mine.FileID, ErrNotFound},
		{"empty account", "", mine.FileID, ErrNotFound},
		{"unknown id", "acc_a", unknown, ErrNotFound},
		{"expired", "acc_a", expired.FileID, ErrNotFound},
		{"path traversal", "acc_a", "f_../../" + FileName + "xxxxxxxx", ErrNotFound},
		{"not a file id", "acc_a", FileName, ErrNotFound},
		{"empty id", "acc_a", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := s.File(tt.accountID, tt.fileID)
			if !errors.Is(err, tt.wantErr) || err == nil && tt.wantErr != nil {
				t.Fatalf("File(%q, %q) = %+v, %v; want %v", tt.accountID, tt.fileID, rec, err, tt.wantErr)
			}
			if err == nil && rec.FileID != tt.fileID {
				t.Fatalf("File(%q) returned %s", tt.fileID, rec.FileID)
			}
			if err != nil && !reflect.DeepEqual(rec, shotd.FileRecord{}) {
				t.Fatalf("File returned a record with an error: %+v", rec)
			}
		})
	}

	// A foreign file and an unknown one must read the same to the caller, id aside.
	_, errForeign := s.File("acc_b", mine.FileID)
	_, errUnknown := s.File("acc_b", unknown)
	if a, b := strings.Replace(errForeign.Error(), mine.FileID, "ID", 1), strings.Replace(errUnknown.Error(), unknown, "ID", 1); a != b {
		t.Errorf("foreign file error %q differs from unknown file error %q", a, b)
	}
}

func TestPutFileRefused(t *testing.T) {
	s, _ := openStore(t)
	tests := []struct {
		name      string
		accountID string
		out       *shotd.Output
		ttl       time.Duration
	}{
		{"no account", "", pngOutput("x"), time.Hour},
		{"no output", "acc_a", nil, time.Hour},
		{"no content type", "acc_a", &shotd.Output{Data: []byte("x"), Format: "png"}, time.Hour},
		{"zero ttl", "acc_a", pngOutput("x"), 0},
		{"negative ttl", "acc_a", pngOutput("x"), -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rec, err := s.PutFile(tt.accountID, tt.out, tt.ttl); err == nil {
				t.Fatalf("PutFile accepted it: %+v", rec)
			}
			if names := dirNames(t, s); len(names) != 0 {
				t.Fatalf("files dir holds %v", names)
			}
		})
	}
}

// TestPutFileFailureLeavesNothing: when the record cannot be written, or the data cannot, no
// file stays on disk.
func TestPutFileFailureLeavesNothing(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(t *testing.T, s *Store)
	}{
		{"database closed", func(t *testing.T, s *Store) {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{"files dir gone", func(t *testing.T, s *Store) {
			if err := os.Remove(s.filesDir); err != nil {
				t.Fatal(err)
			}
			// A file where the directory was: CreateTemp fails (even for root).
			if err := os.WriteFile(s.filesDir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			tt.breakIt(t, s)
			if rec, err := s.PutFile("acc_a", pngOutput("data"), time.Hour); err == nil {
				t.Fatalf("PutFile succeeded: %+v", rec)
			}
			if fi, err := os.Stat(s.filesDir); err == nil && fi.IsDir() {
				if names := dirNames(t, s); len(names) != 0 {
					t.Fatalf("files dir holds %v after a failed PutFile", names)
				}
			}
		})
	}
}

func TestOpenFileRemovedFromDisk(t *testing.T) {
	s, _ := openStore(t)
	rec := putFile(t, s, "acc_a", "data", time.Hour)
	// Once open, a removal does not cut the stream short.
	f, err := s.OpenFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(s.filePath(rec.FileID)); err != nil {
		t.Fatal(err)
	}
	if data, err := io.ReadAll(f); err != nil || string(data) != "data" {
		t.Fatalf("read after removal: %q, %v", data, err)
	}
	if _, err := s.OpenFile(rec); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenFile of a removed file: %v, want ErrNotFound", err)
	}
	if _, err := s.OpenFile(shotd.FileRecord{FileID: "../" + FileName}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenFile outside the files dir: %v, want ErrNotFound", err)
	}
}

func TestFileSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := reopen(t, nil, dir)
	rec := putFile(t, s, "acc_a", "kept", time.Hour)
	s = reopen(t, s, dir)
	defer s.Close(context.Background())
	got, err := s.File("acc_a", rec.FileID)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("File after reopen = %+v, %v; want %+v", got, err, rec)
	}
	f, err := s.OpenFile(got)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if data, _ := io.ReadAll(f); !bytes.Equal(data, []byte("kept")) {
		t.Fatalf("data after reopen %q", data)
	}
}

// reopen closes s (when not nil) and opens the store in dir again; the caller closes the result.
func reopen(t *testing.T, s *Store, dir string) *Store {
	t.Helper()
	if s != nil {
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPutFileSlicesOneWrite: a render's file and all its slices are committed in one
// transaction (100 slices once took 101 fsync'd writes, holding the one writer for every
// tenant), and a render whose records cannot be committed leaves no file behind.
func TestPutFileSlicesOneWrite(t *testing.T) {
	s, _ := openStore(t)
	lastTx := func() int {
		var id int
		if err := s.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	out := pngOutput("whole")
	for i := range shotd.MaxSlices {
		out.Extras = append(out.Extras, shotd.Extra{Data: []byte{byte(i)}, Format: "png", ContentType: "image/png"})
		out.Slices = append(out.Slices, shotd.Slice{Index: i, OffsetY: i * 10, Width: 10, Height: 10, FileRef: shotd.FileRef{Extra: i, Format: "png"}})
	}
	before := lastTx()
	rec, err := s.PutFile("acc", out, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n := lastTx() - before; n != 1 {
		t.Errorf("%d write transactions for a file and %d slices, want 1", n, shotd.MaxSlices)
	}
	if len(rec.Slices) != shotd.MaxSlices {
		t.Fatalf("%d slices recorded", len(rec.Slices))
	}
	for i, sl := range rec.Slices {
		x, err := s.File("acc", sl.FileID)
		if err != nil {
			t.Fatalf("slice %d: %v", i, err)
		}
		f, err := s.OpenFile(x)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if !bytes.Equal(b, []byte{byte(i)}) || !x.ExpiresAt.Equal(rec.ExpiresAt) {
			t.Errorf("slice %d: data %v, expires %v (file %v)", i, b, x.ExpiresAt, rec.ExpiresAt)
		}
	}

	// A slice naming an extra the output lacks: nothing stored, no file left.
	files, _ := os.ReadDir(s.filesDir)
	bad := pngOutput("bad")
	bad.Extras = []shotd.Extra{{Data: []byte("x"), Format: "png", ContentType: "image/png"}}
	bad.Slices = []shotd.Slice{{FileRef: shotd.FileRef{Extra: 0}}, {FileRef: shotd.FileRef{Extra: 1}}}
	before = lastTx()
	if _, err := s.PutFile("acc", bad, time.Hour); err == nil {
		t.Fatal("a slice without its file was stored")
	}
	after, _ := os.ReadDir(s.filesDir)
	if len(after) != len(files) || lastTx() != before {
		t.Errorf("a failed put left %d files and %d transactions behind", len(after)-len(files), lastTx()-before)
	}
}
