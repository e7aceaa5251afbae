package service

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
)

func TestRestartKeys(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *config.Config)
		want   []string
	}{
		{"nothing", func(c *config.Config) {}, nil},
		{"plans and log.level are applied", func(c *config.Config) {
			p := c.Plans["default"]
			p.MonthlyQuota = 7
			c.Plans["default"] = p
			c.Log.Level = "debug"
		}, nil},
		{"listeners and sections need a restart", func(c *config.Config) {
			c.Listen = "127.0.0.1:9"
			c.Browser.PoolSize = 5
			c.Limits.BulkMaxItems = 3
			c.Log.Format = config.LogJSON
		}, []string{"browser.pool_size", "limits.bulk_max_items", "listen", "log.format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := config.Default()
			tt.change(next)
			if got := restartKeys(config.Default(), next); !slices.Equal(got, tt.want) {
				t.Errorf("restartKeys = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRestartKeysGeneratedToken: a config that names no admin token, as installed, takes the
// token its first start generated into data_dir: reloading it unchanged needs no restart.
func TestRestartKeysGeneratedToken(t *testing.T) {
	dir := t.TempDir()
	cur := config.Default()
	cur.DataDir = dir
	tok, err := adminToken(dir) // as the first start's bootstrap does
	if err != nil {
		t.Fatal(err)
	}
	cur.AdminToken = tok
	next := config.Default()
	next.DataDir = dir
	if got := restartKeys(cur, withStartToken(next)); len(got) != 0 {
		t.Errorf("restartKeys = %q, want nothing", got)
	}
	next.AdminToken = strings.Repeat("b", 40) // a token set in the file: a restart applies it
	if got := restartKeys(cur, withStartToken(next)); !slices.Equal(got, []string{"admin_token"}) {
		t.Errorf("restartKeys = %q, want admin_token", got)
	}
}

// TestReload applies a changed file and refuses one that drops a plan an account has, or that
// does not load.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	st := storetest.Open(t, dir)
	path := filepath.Join(dir, "shotd.toml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[plans.pro]\nmonthly_quota = 10\n")
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAccount("a@example.test", "pro", true); err != nil {
		t.Fatal(err)
	}
	book := httpd.NewPlanBook(cfg.Plans)
	svc := &Service{cfg: cfg, plans: book, store: st, log: zerolog.Nop()}
	defer zerolog.SetGlobalLevel(zerolog.TraceLevel)
	// What serve's reloader does on SIGHUP: read the file, hand it to the service.
	reload := func() error {
		next, err := config.Load(path, nil)
		if err != nil {
			return err
		}
		return svc.Reload(next)
	}

	write("[plans.pro]\nmonthly_quota = 20\n")
	if err := reload(); err != nil {
		t.Fatal(err)
	}
	if p, _ := book.Get("pro"); p.MonthlyQuota != 20 {
		t.Errorf("plans.pro.monthly_quota = %d after reload, want 20", p.MonthlyQuota)
	}

	write("[plans.basic]\nmonthly_quota = 5\n")
	if err := reload(); err == nil || !strings.Contains(err.Error(), "plans.pro") {
		t.Errorf("reload without a plan in use: %v, want a refusal naming plans.pro", err)
	}
	if _, ok := book.Get("pro"); !ok {
		t.Error("a refused reload changed the plans")
	}
	write("listen = \"nonsense\"\n")
	if err := reload(); err == nil {
		t.Error("an invalid file was applied")
	}
}
