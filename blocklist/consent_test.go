package blocklist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installedAutoconsent is where scripts/install-deps.sh puts autoconsent's standalone script.
const installedAutoconsent = "/usr/local/share/shotd/autoconsent/autoconsent.standalone.js"

func TestLoadAutoconsent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		err  string // "" = loads
	}{
		{name: "installed standalone", path: installedAutoconsent},
		{name: "missing", path: filepath.Join(dir, "nope.js"), err: "no such file"},
		{name: "directory", path: dir, err: "not a regular file"},
		{name: "other script", path: write("other.js", "console.log(1)"), err: "not autoconsent's standalone build"},
		{name: "esm build", path: write("esm.js", "const window_autoconsentStandalone = 1; // window.autoconsentStandalone\nexport { x };\n"),
			err: "not autoconsent's standalone build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path == installedAutoconsent {
				if _, err := os.Stat(tt.path); err != nil {
					t.Fatalf("%v: run scripts/install-deps.sh", err)
				}
			}
			js, err := LoadAutoconsent(tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src, _ := os.ReadFile(tt.path)
			if !strings.Contains(js, string(src)) || !strings.HasPrefix(js, autoconsentPrologue) || !strings.HasSuffix(js, autoconsentEpilogue) {
				t.Fatal("the script is not the standalone inside the wrapper")
			}
			for _, want := range []string{"cfg.autoAction = 'optOut'", "cfg.heuristicMode = 'tier1'"} {
				if !strings.Contains(js, want) {
					t.Errorf("wrapper lacks %q", want)
				}
			}
		})
	}
}

func TestSelectionStartScript(t *testing.T) {
	lib := &Library{Chats: Chats(), Cookies: CookieBanners(), Consent: "/* consent */"}
	tests := []struct {
		name          string
		lib           *Library
		cookies, chat bool
		want          string
	}{
		{name: "cookies get the consent script", lib: lib, cookies: true, want: "/* consent */"},
		{name: "cookies and chats", lib: lib, cookies: true, chat: true, want: "/* consent */"},
		{name: "chats only get none", lib: lib, chat: true, want: ""},
		{name: "no consent script loaded", lib: &Library{Cookies: CookieBanners()}, cookies: true, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.lib.Select(false, false, tt.cookies, tt.chat)
			if got := s.StartScript(); got != tt.want {
				t.Fatalf("StartScript = %q, want %q", got, tt.want)
			}
			if tt.cookies && !strings.Contains(s.HideCSS("https://example.com/"), "onetrust-banner-sdk") {
				t.Fatal("the cookie-banner hiding list must stay with the consent script")
			}
		})
	}
}
