package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/store"
)

// TestAdminBackup takes a backup through the admin API while accounts are being written, restores
// it as the data directory of a new store, and uses that store.
func TestAdminBackup(t *testing.T) {
	st := storetest.Open(t, "")
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

	// Restore: `shotd admin restore` installs the backup as the database of a new data dir.
	restored := filepath.Join(t.TempDir(), "new-data")
	out, code = runRestore(t, restored, backup)
	if code != 0 || !strings.Contains(out, "installed in "+restored) {
		t.Fatalf("admin restore: exit %d: %s", code, out)
	}
	st2 := storetest.Open(t, restored)
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

// runRestore runs `shotd admin restore backup` with data_dir = dataDir.
func runRestore(t *testing.T, dataDir, backup string) (string, int) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "shotd.toml")
	if err := os.WriteFile(cfg, []byte("data_dir = \""+dataDir+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut}
	code := m.Run(context.Background(), []string{"admin", "--config", cfg, "restore", backup})
	return out.String() + errOut.String(), code
}

// TestAdminBackupWithFiles takes a backup with the stored files through the admin API, restores
// it with `shotd admin restore` into a new data dir, and serves the files from the store opened
// there. A restore is refused while the store holds the database, and for a backup of a newer
// schema.
func TestAdminBackupWithFiles(t *testing.T) {
	st := storetest.Open(t, "")
	adm := httpd.NewAdmin("tok", "http://127.0.0.1", st, config.Default().Plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())

	acc, err := st.CreateAccount("files@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, data := range []string{"one", "two", strings.Repeat("three", 10000)} {
		rec, err := st.PutFile(acc.ID, &shotd.Output{Data: []byte(data), Format: "png", ContentType: "image/png"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		want[rec.FileID] = data
	}
	backup := filepath.Join(t.TempDir(), "shotd.tar")
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
	if code := m.Run(context.Background(), []string{"admin", "--addr", ln.Addr().String(), "--token", "tok", "backup", "--files", backup}); code != 0 {
		t.Fatalf("admin backup --files: exit %d: %s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "3 stored files") {
		t.Fatalf("admin backup --files: %s", out.String())
	}

	restored := filepath.Join(t.TempDir(), "new-data")
	msg, code := runRestore(t, restored, backup)
	if code != 0 || !strings.Contains(msg, "the database and 3 stored files") {
		t.Fatalf("admin restore: exit %d: %s", code, msg)
	}
	st2 := storetest.Open(t, restored)
	for id, data := range want {
		rec, err := st2.File(acc.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		f, err := st2.OpenFile(rec)
		if err != nil {
			t.Fatalf("restored file %s: %v", id, err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if string(got) != data {
			t.Fatalf("restored file %s: %d bytes, want %d", id, len(got), len(data))
		}
	}

	// The store (the service) holds the restored database: a second restore is refused.
	msg, code = runRestore(t, restored, backup)
	if code == 0 || !strings.Contains(msg, "stop the service") {
		t.Fatalf("restore over a running store: exit %d: %s", code, msg)
	}
	if err := st2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A backup written by a newer shotd is refused, and the data dir keeps its database.
	newer := filepath.Join(t.TempDir(), "newer")
	ns := storetest.Open(t, newer)
	if err := ns.SetMeta("schema_version", strconv.Itoa(store.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	if err := ns.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	msg, code = runRestore(t, restored, filepath.Join(newer, store.FileName))
	if code == 0 || !strings.Contains(msg, "newer shotd") {
		t.Fatalf("restore of a newer backup: exit %d: %s", code, msg)
	}
	if _, err := os.Stat(filepath.Join(restored, store.FileName)); err != nil {
		t.Fatal(err)
	}
}

// TestServeRefusesNewerDatabase: serve, as an older binary after a rollback, refuses a data dir
// whose database a newer shotd wrote, says so, and leaves it as it was.
func TestServeRefusesNewerDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	st := storetest.Open(t, dir)
	if err := st.SetMeta("schema_version", strconv.Itoa(store.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "shotd.toml")
	text := "listen = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\ndata_dir = \"" + dir + "\"\n[log]\nformat = \"json\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := m.Run(ctx, []string{"serve", "--config", cfg})
	msg := out.String() + errOut.String()
	if code == 0 {
		t.Fatalf("serve ran on a newer database: %s", msg)
	}
	want := "has schema version " + strconv.Itoa(store.SchemaVersion+1) + ", newer than the " + strconv.Itoa(store.SchemaVersion) + " this shotd knows"
	if !strings.Contains(msg, want) {
		t.Fatalf("serve: exit %d, output does not say %q:\n%s", code, want, msg)
	}
	after, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("serve changed the newer database")
	}
}
