package service

import (
	"os"
	"strings"
	"testing"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/storetest"
)

// TestBootstrapDefaultKey: the key created at first start requires signatures unless the
// service is only reachable on loopback: a key that works unsigned works for whoever
// sees one link.
func TestBootstrapDefaultKey(t *testing.T) {
	cases := []struct {
		name      string
		publicURL string
		signed    bool
	}{
		{"loopback", "http://127.0.0.1:8080", false},
		{"localhost", "http://localhost:8080", false},
		{"loopback v6", "http://[::1]:8080", false},
		{"public name", "https://shots.example.com", true},
		{"private address", "http://10.0.0.5:8080", true},
		{"all interfaces", "http://0.0.0.0:8080", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st := storetest.Open(t, dir)
			cfg := config.Default()
			cfg.DataDir, cfg.PublicURL = dir, c.publicURL
			fs, err := bootstrap(st, cfg)
			if err != nil || fs == nil {
				t.Fatalf("first start: %+v, %v", fs, err)
			}
			keys, err := st.Keys("default")
			if err != nil || len(keys) != 1 {
				t.Fatalf("keys %v, %v", keys, err)
			}
			if keys[0].RequireSignature != c.signed {
				t.Fatalf("require_signature %v, want %v", keys[0].RequireSignature, c.signed)
			}
			if fs.AccessKey != keys[0].AccessKey || fs.RequireSignature != c.signed {
				t.Fatalf("first start reports %s (signed %v), the store has %s", fs.AccessKey, fs.RequireSignature, keys[0].AccessKey)
			}
			creds, err := os.ReadFile(fs.CredentialsPath)
			if err != nil || !strings.Contains(string(creds), fs.SecretKey) {
				t.Fatalf("credentials file: %v\n%s", err, creds)
			}
			if again, err := bootstrap(st, cfg); again != nil || err != nil {
				t.Fatalf("second start made a key: %+v, %v", again, err)
			}
		})
	}
}
