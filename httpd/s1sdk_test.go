package httpd_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // the animate gif
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/media"
)

// TestScreenshotOneNodeSDK runs ScreenshotOne's own Node SDK (npm screenshotone-api-sdk, pinned in
// tools/s1sdk, installed by scripts/install-deps.sh with npm ci) against this shotd on loopback,
// with only the host changed (their paths at the root, their defaults: jpg where no format):
// take(), which signs every request ScreenshotOne's way, with options of every family, and
// animate(). tools/s1sdk/run.js writes each answer to a file; the files are checked here.
func TestScreenshotOneNodeSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: ScreenshotOne's Node SDK cannot run (scripts/install-deps.sh needs node and npm for it)")
	}
	dir, err := filepath.Abs("../tools/s1sdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "screenshotone-api-sdk", "package.json")); err != nil {
		t.Fatalf("the SDK is not installed in %s: run scripts/install-deps.sh (npm ci there): %v", dir, err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Fixture", "s1sdk")
		fmt.Fprint(w, `<!doctype html><html><head><title>SDK page</title><meta property="og:title" content="SDK OG">
<link rel="icon" href="/favicon.png"></head><body style="margin:0">
<h1 style="margin:0;height:60px;background:rgb(0,128,0)">Hello</h1><p>from the fixture</p>
<div style="height:700px;background:linear-gradient(red,blue)"></div></body></html>`)
	}))
	defer site.Close()
	a := newAccount(t, "jobs", true)
	s3 := s3test.Start(t, "user") // where store() stores
	up := testkit.NewUpstreamProxy(t, "127.0.0.1", "sdk-user", "sdk-pass")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SHOTD_BASE="+env.base, "SHOTD_ACCESS_KEY="+a.key.AccessKey,
		"SHOTD_SECRET_KEY="+a.key.SecretKey, "SHOTD_PAGE="+site.URL+"/", "SHOTD_OUT="+out,
		"SHOTD_PROXY="+up.URL("sdk-user", "sdk-pass"), "SHOTD_S3="+s3.Endpoint(), "SHOTD_S3_KEY="+s3test.AccessKey,
		"SHOTD_S3_SECRET="+s3test.SecretKey)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node run.js: %v\n%s", err, b)
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if w, h := imageSize(t, "png", read("take.png")); w != 320 || h != 240 {
		t.Errorf("take.png is %dx%d", w, h)
	}
	if w, h := imageSize(t, "jpeg", read("take.jpg")); w != 320 || h != 240 {
		t.Errorf("take.jpg is %dx%d", w, h)
	}
	if w, h := imageSize(t, "jpeg", read("jpg.jpg")); w != 320 || h != 240 {
		t.Errorf("jpg.jpg (format=jpg) is %dx%d", w, h)
	}
	if w, h := imageSize(t, "png", read("nosel.png")); w != 320 || h != 240 {
		t.Errorf("nosel.png (selector missing, error_on_selector_not_found=false) is %dx%d, want the viewport", w, h)
	}
	if w, h := imageSize(t, "jpeg", read("proxy.png")); w != 320 || h != 240 {
		t.Errorf("proxy.png is %dx%d", w, h)
	}
	proxied := false
	for _, r := range up.Requests() {
		proxied = proxied || (r.Target == site.URL+"/" && r.Authorized)
	}
	if !proxied {
		t.Errorf("proxy(): the proxy was not asked for the page with its credentials: %+v", up.Requests())
	}
	if w, h := imageSize(t, "jpeg", read("full.png")); w != 320 || h <= 760 {
		t.Errorf("full.png is %dx%d, want 320 wide and the whole page high (over 760)", w, h)
	}
	if w, h := imageSize(t, "jpeg", read("waits.png")); w != 320 || h != 60 {
		t.Errorf("waits.png (selector h1) is %dx%d, want 320x60", w, h)
	}
	z := read("slices.zip")
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("slices.zip: %v", err)
	}
	// The page (over 760 px) in slices of 300 overlapping by 20: at 0, 280, 560, and more.
	if len(zr.File) < 3 {
		t.Errorf("slices.zip has %d files, want at least 3", len(zr.File))
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		cfg, _, err := image.DecodeConfig(rc)
		rc.Close()
		if err != nil || cfg.Width != 320 || cfg.Height > 300 {
			t.Errorf("%s: %dx%d, %v", f.Name, cfg.Width, cfg.Height, err)
		}
	}
	var meta struct {
		Metadata struct {
			PageTitle string            `json:"page_title"`
			OpenGraph map[string]string `json:"open_graph"`
			Icon      struct{ URL string }
			Fonts     []string
			ImageSize struct{ Width, Height int } `json:"image_size"`
			Status    int                         `json:"http_response_status_code"`
			Headers   map[string]string           `json:"http_response_headers"`
			Content   struct{ URL string }
		} `json:"metadata"`
	}
	if err := json.Unmarshal(read("meta.json"), &meta); err != nil {
		t.Fatalf("meta.json: %v", err)
	}
	m := meta.Metadata
	if m.PageTitle != "SDK page" || m.OpenGraph["title"] != "SDK OG" || m.Icon.URL != site.URL+"/favicon.png" ||
		len(m.Fonts) == 0 || m.ImageSize.Width != 320 || m.Status != 200 || m.Headers["x-fixture"] != "s1sdk" ||
		!strings.HasPrefix(m.Content.URL, "http://shotd.test/api/v1/files/") {
		t.Errorf("metadata %+v", m)
	}
	if !bytes.HasPrefix(read("pdf.pdf"), []byte("%PDF-")) {
		t.Error("pdf.pdf is not a PDF")
	}
	if e := string(read("error.txt")); e != "400 request_not_valid" {
		t.Errorf("a socks5 proxy: %q, want 400 request_not_valid through the SDK's APIError", e)
	}
	// store(): the key and bucket it read from the answer's headers name the stored object.
	var stored struct{ Key, Bucket string }
	if err := json.Unmarshal(read("store.json"), &stored); err != nil || stored.Bucket != "user" || !strings.HasPrefix(stored.Key, "sdk/") {
		t.Errorf("store(): %s, %v", read("store.json"), err)
	} else if obj, err := s3.Object("user", stored.Key); err != nil || !bytes.HasPrefix(obj, []byte("\x89PNG")) {
		t.Errorf("store(): the object %s: %.8q, %v", stored.Key, obj, err)
	}
	for name, want := range map[string]string{"animate.mp4": "mp4", "animate.gif": "gif", "animate.mov": "mov", "scroll.mp4": "mp4"} {
		info, err := media.Probe(context.Background(), read(name))
		if err != nil || info.Width != 320 || !info.HasFormat(want) {
			t.Errorf("%s: %+v, %v", name, info, err)
		}
		// ffprobe names mp4 and mov alike: the file's brand tells them apart.
		if b := read(name); want != "gif" && (len(b) < 12 || (string(b[8:12]) == "qt  ") != (want == "mov")) {
			t.Errorf("%s: brand %q", name, b[8:min(12, len(b))])
		}
	}
}
