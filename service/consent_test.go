package service

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/blocklist"
	"github.com/shotd/shotd/config"
)

// TestLoadConsent: serve hands autoconsent to block_cookie_banners when the file is there, and
// warns (rather than refusing to start) when it is not.
func TestLoadConsent(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		loaded  bool
		level   string // of the log line
		message string
	}{
		{name: "installed", path: config.DefaultAutoconsent, loaded: true, level: "info", message: "autoconsent loaded"},
		{name: "missing file", path: filepath.Join(t.TempDir(), "autoconsent.standalone.js"), level: "warn", message: "hides consent dialogs without rejecting"},
		{name: "disabled", path: "", level: "info", message: "blocking.autoconsent is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			lists := &blocklist.Library{Cookies: blocklist.CookieBanners()}
			loadConsent(lists, tt.path, zerolog.New(&buf))
			if got := lists.Consent != ""; got != tt.loaded {
				t.Fatalf("consent script loaded = %v, want %v; log: %s", got, tt.loaded, buf.String())
			}
			if got := lists.Select(false, false, true, false).StartScript() != ""; got != tt.loaded {
				t.Fatalf("block_cookie_banners start script = %v, want %v", got, tt.loaded)
			}
			line := buf.String()
			if !strings.Contains(line, `"level":"`+tt.level+`"`) || !strings.Contains(line, tt.message) {
				t.Fatalf("log %q, want a %s line with %q", line, tt.level, tt.message)
			}
		})
	}
}
