package service

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/store"
)

// FirstStart is the key that Open made in an empty store, for the caller to show once: its
// secret is also in CredentialsPath (0600), and nowhere else.
type FirstStart struct {
	AccessKey, SecretKey string
	// RequireSignature: public_url is not a loopback address, so the key works signed only.
	RequireSignature bool
	CredentialsPath  string
	AdminTokenPath   string
}

// bootstrap prepares an empty data directory: the admin token (when the config has none) and,
// on first start, the default account with one key, whose secret it writes to
// data_dir/credentials and returns; it returns nil when the store already has accounts.
func bootstrap(st accountBook, cfg *config.Config) (*FirstStart, error) {
	if cfg.AdminToken == "" {
		tok, err := adminToken(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		cfg.AdminToken = tok
	}
	n, err := st.CountAccounts()
	if err != nil || n > 0 {
		return nil, err
	}
	acc, err := st.CreateAccountWithID("default", "", config.DefaultPlan, true)
	if errors.Is(err, store.ErrConflict) {
		return nil, nil // cluster mode: another node, starting at the same time, made it
	}
	if err != nil {
		return nil, fmt.Errorf("create default account: %w", err)
	}
	// Reachable from elsewhere, a key that works unsigned works for whoever sees one link; on
	// loopback the newcomer's first curl matters more.
	requireSig := !loopbackURL(cfg.PublicURL)
	key, err := st.CreateKey(acc.ID, "default", requireSig)
	if err != nil {
		return nil, fmt.Errorf("create default key: %w", err)
	}
	fs := &FirstStart{AccessKey: key.AccessKey, SecretKey: key.SecretKey, RequireSignature: requireSig,
		CredentialsPath: filepath.Join(cfg.DataDir, CredentialsFile), AdminTokenPath: filepath.Join(cfg.DataDir, adminTokenFile)}
	creds := fmt.Sprintf(`# shotd created account "default" (plan default) with this key at its first start.
# Keep the secret key elsewhere and delete this file: it is not shown again.
  access key: %s
  secret key: %s
`, key.AccessKey, key.SecretKey)
	if err := os.WriteFile(fs.CredentialsPath, []byte(creds), 0o600); err != nil {
		return nil, fmt.Errorf("write first-start credentials: %w", err)
	}
	return fs, nil
}

// accountBook is where bootstrap makes the first account and key: the node's store, or the
// cluster's Book in cluster mode.
type accountBook interface {
	CountAccounts() (int, error)
	CreateAccountWithID(id, email, plan string, verified bool) (shotd.Account, error)
	CreateKey(accountID, name string, requireSignature bool) (shotd.Key, error)
}

// CredentialsFile, in data_dir, holds the key made at first start.
const CredentialsFile = "credentials"

// adminTokenFile, in data_dir, holds the admin token generated when the config has none.
const adminTokenFile = "admin_token"

// loopbackURL reports whether the host of raw is a loopback address or localhost.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// adminToken reads the generated admin token from data_dir, creating it at first start.
func adminToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, adminTokenFile)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) && err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return tok, nil
}
