package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"

	"github.com/shotd/shotd/internal/testkit"
)

// TestMain fails the package when a test leaves goroutines behind (Close starts one).
func TestMain(m *testing.M) {
	base := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := testkit.WaitGoroutines(base, 2*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// openStore opens a store in a fresh directory and closes it when the test ends.
func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, dir
}

func TestOpenCreatesDirFileAndBuckets(t *testing.T) {
	s, dir := openStore(t)
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, want 0600 (it holds secret keys)", fi.Mode().Perm())
	}
	err = s.DB().View(func(tx *bbolt.Tx) error {
		for _, b := range buckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %s missing", b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbage, FileName), []byte(strings.Repeat("not a bolt file", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		want string
	}{
		{"data dir is a file", file, "create data dir"},
		{"not a bbolt file", garbage, "store: open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.dir, zerolog.Nop())
			if err == nil {
				_ = s.Close(context.Background())
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	_, dir := openStore(t)
	start := time.Now()
	s2, err := Open(dir, zerolog.Nop())
	if err == nil {
		_ = s2.Close(context.Background())
		t.Fatal("a second Open of the same data dir succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("error %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("second Open took %v", d)
	}
}

func TestClose(t *testing.T) {
	s, _ := openStore(t)
	// A read transaction left open holds Close; Close gives up when ctx ends and finishes later.
	tx, err := s.DB().Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with an open transaction = %v, want deadline exceeded", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("third Close: %v", err)
	}
	if _, err := s.Account("x"); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

func TestMeta(t *testing.T) {
	s, _ := openStore(t)
	tests := []struct {
		name   string
		set    map[string]string
		get    string
		want   string
		wantOK bool
	}{
		{"absent", nil, "admin_token", "", false},
		{"set", map[string]string{"admin_token": "abc"}, "admin_token", "abc", true},
		{"replaced", map[string]string{"admin_token": "def"}, "admin_token", "def", true},
		{"empty value is a value", map[string]string{"blank": ""}, "blank", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.set {
				if err := s.SetMeta(k, v); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := s.Meta(tt.get)
			if err != nil || got != tt.want || ok != tt.wantOK {
				t.Fatalf("Meta(%q) = %q, %v, %v; want %q, %v", tt.get, got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
	if err := s.SetMeta("", "x"); err == nil {
		t.Fatal("empty meta name accepted")
	}
}

func TestPersistenceAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.CreateAccount("a@example.com", "pro", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.CreateKey(a.ID, "ci", true)
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := s.CreateKey(a.ID, "old", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(revoked.AccessKey); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMeta("admin_token", "tok"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	gotA, err := s.Account(a.ID)
	if err != nil || gotA != a {
		t.Fatalf("account after reopen = %+v, %v; want %+v", gotA, err, a)
	}
	gotK, err := s.Key(k.AccessKey)
	if err != nil || gotK != k {
		t.Fatalf("key after reopen = %+v, %v; want %+v", gotK, err, k)
	}
	if _, _, err := s.KeyCache().Lookup(revoked.AccessKey); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked key after reopen: %v", err)
	}
	if v, ok, err := s.Meta("admin_token"); v != "tok" || !ok || err != nil {
		t.Fatalf("meta after reopen = %q, %v, %v", v, ok, err)
	}
	if n, err := s.CountAccounts(); n != 1 || err != nil {
		t.Fatalf("CountAccounts = %d, %v", n, err)
	}
}
