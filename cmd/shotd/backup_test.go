package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/store"
)

// TestAdminBackup takes a backup through the admin API while accounts are being written, restores
// it as the data directory of a new store, and uses that store.
func TestAdminBackup(t *testing.T) {
	st, err := store.Open(t.TempDir(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	plans := config.Default().Plans
	adm := httpd.NewAdmin("tok", "http://127.0.0.1", st, plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())
	run := func(token string, args ...string) (string, int) {
		var out, errOut bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
		code := m.Run(context.Background(), append([]string{"admin", "--addr", ln.Addr().String(), "--token", token}, args...))
		return out.String() + errOut.String(), code
	}

	// Enough data for a copy of several pages, and a write load that goes on during the backup.
	before, err := st.CreateAccount("before@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.CreateKey(before.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := st.CreateAccount(strings.Repeat("x", 200)+"@example.test", "default", i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if _, err := st.CreateAccount("during@example.test", "default", false); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	backup := filepath.Join(t.TempDir(), "shotd-backup.db")
	out, code := run("tok", "backup", backup)
	stop.Store(true)
	wg.Wait()
	if code != 0 {
		t.Fatalf("admin backup: exit %d: %s", code, out)
	}

	// Restore: the backup becomes data_dir/shotd.db of a new store.
	restored := t.TempDir()
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, store.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(restored, zerolog.Nop())
	if err != nil {
		t.Fatalf("open the restored database: %v", err)
	}
	defer st2.Close(context.Background())
	if n, err := st2.CountAccounts(); err != nil || n < 301 {
		t.Errorf("restored accounts: %d, %v; want at least the 301 made before the backup", n, err)
	}
	if k, acc, err := st2.KeyCache().Lookup(key.AccessKey); err != nil || acc.ID != before.ID || k.SecretKey != key.SecretKey {
		t.Errorf("restored key lookup: %v, account %q", err, acc.ID)
	}
	if _, err := st2.CreateAccount("after@example.test", "default", true); err != nil {
		t.Errorf("write to the restored database: %v", err)
	}

	tests := []struct {
		name, token, file, want string
	}{
		{"wrong token", "nope", filepath.Join(t.TempDir(), "x.db"), "401"},
		{"no such directory", "tok", filepath.Join(t.TempDir(), "missing", "x.db"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(tt.token, "backup", tt.file)
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output %q; want a failure with %q", code, out, tt.want)
			}
			if _, err := os.Stat(tt.file); err == nil {
				t.Errorf("%s was written by a failed backup", tt.file)
			}
		})
	}
}
