package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestoreServes is a move to a new data directory, as the real binary does it: serve renders
// and stores a file, `shotd admin backup --files` saves the database and the files while it runs,
// serve stops, `shotd admin restore` installs the backup into a data dir that did not exist, and
// serve starts on it and serves the same file to the same key.
func TestRestoreServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Chrome")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := newRunRoot(ctx, t, "shotd-rs-")
	config := func(name, dataDir string) string {
		path := filepath.Join(run.root, name+".toml")
		text := fmt.Sprintf("listen = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\ndata_dir = %q\npublic_url = \"http://127.0.0.1:1\"\n"+
			"[browser]\npool_size = 1\nprewarm = 0\n[log]\nformat = \"json\"\n", dataDir)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shotd := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, run.bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("shotd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	getFile := func(base, key, id string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/files/"+id, nil)
		req.Header.Set("X-Access-Key", key)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET file %s: %d %s", id, resp.StatusCode, b)
		}
		return b
	}

	oldCfg := config("old", run.dataDir)
	old := startService(ctx, t, run.bin, oldCfg, run.tmpDir, "old")
	if old.accessKey == "" {
		t.Fatalf("first start printed no key:\n%s", old.stdout())
	}
	cl := &client{t: t, ctx: ctx, key: old.accessKey}
	var res struct {
		FileID string `json:"file_id"`
	}
	body, _ := json.Marshal(map[string]any{"html": "<h1>moved with its data</h1>", "response_type": "json"})
	if code := cl.do(http.MethodPost, old.base+"/api/v1/screenshot", body, &res); code != http.StatusOK || res.FileID == "" {
		t.Fatalf("render: status %d, file %q", code, res.FileID)
	}
	want := getFile(old.base, old.accessKey, res.FileID)

	backup := filepath.Join(run.root, "backup.tar")
	if out := shotd("admin", "--config", oldCfg, "--addr", old.admin, "backup", "--files", backup); !strings.Contains(out, "1 stored files") {
		t.Fatalf("admin backup --files: %s", out)
	}
	old.stop(t, 60*time.Second)

	newData := filepath.Join(run.root, "moved", "data") // does not exist yet
	newCfg := config("new", newData)
	if out := shotd("admin", "--config", newCfg, "restore", backup); !strings.Contains(out, "installed in "+newData) {
		t.Fatalf("admin restore: %s", out)
	}
	moved := startService(ctx, t, run.bin, newCfg, run.tmpDir, "moved")
	if moved.accessKey != "" {
		t.Errorf("the restored service made a first start's account: it did not find the restored one")
	}
	if got := getFile(moved.base, old.accessKey, res.FileID); !bytes.Equal(got, want) {
		t.Fatalf("the restored service serves %d bytes for the file, want the %d it stored", len(got), len(want))
	}
	moved.stop(t, 60*time.Second)
}
