package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFiles reads admin_token_file and secret_access_key_file from their paths and, as
// under systemd's LoadCredential=, from $CREDENTIALS_DIRECTORY.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	token := strings.Repeat("t", MinAdminToken)
	write := func(path, content string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tokenFile := write(filepath.Join(dir, "etc", "admin_token"), token+"\n")
	emptyFile := write(filepath.Join(dir, "etc", "empty"), "\n")
	shortFile := write(filepath.Join(dir, "etc", "short"), "abc\n")
	creds := filepath.Join(dir, "creds")
	credToken := strings.Repeat("c", MinAdminToken)
	write(filepath.Join(creds, "admin_token"), credToken+"\r\n")
	write(filepath.Join(creds, "s3_secret"), "secret-from-credential\n")
	missing := filepath.Join(dir, "etc", "nope") // not a credential either

	cases := []struct {
		name      string
		toml      string
		env       []string
		wantToken string
		wantS3    string
		err       string
	}{
		{name: "token file", toml: `admin_token_file = "` + tokenFile + `"`, wantToken: token},
		{name: "token file from the environment", env: []string{"SHOTD_ADMIN_TOKEN_FILE=" + tokenFile}, wantToken: token},
		{name: "credential first", toml: `admin_token_file = "` + tokenFile + `"`, env: []string{CredentialsEnv + "=" + creds}, wantToken: credToken},
		{name: "credential whose path the service cannot read",
			toml: `admin_token_file = "/etc/shotd/admin_token"`, env: []string{CredentialsEnv + "=" + creds}, wantToken: credToken},
		{name: "no credential of that name: the path", toml: `admin_token_file = "` + tokenFile + `"`,
			env: []string{CredentialsEnv + "=" + t.TempDir()}, wantToken: token},
		{name: "both", toml: `admin_token = "hidden-value-hidden-value-hidden-value"` + "\nadmin_token_file = \"" + tokenFile + `"`, err: "admin_token_file: give admin_token or admin_token_file, not both"},
		{name: "both through the environment", toml: `admin_token_file = "` + tokenFile + `"`,
			env: []string{"SHOTD_ADMIN_TOKEN=hidden-value-hidden-value-hidden-value"}, err: "not both"},
		{name: "missing", toml: `admin_token_file = "` + missing + `"`, err: "admin_token_file: cannot be read"},
		{name: "empty", toml: `admin_token_file = "` + emptyFile + `"`, err: "admin_token_file: " + emptyFile + " is empty"},
		{name: "short", toml: `admin_token_file = "` + shortFile + `"`, err: "admin_token: must be at least"},
		{name: "a directory", toml: `admin_token_file = "` + dir + `"`, err: "admin_token_file: cannot be read"},
		{name: "s3 secret from a credential",
			toml: "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b\"\naccess_key_id = \"AK\"\nsecret_access_key_file = \"/etc/shotd/s3_secret\"\n",
			env:  []string{CredentialsEnv + "=" + creds}, wantS3: "secret-from-credential"},
		{name: "s3 secret missing",
			toml: "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b\"\naccess_key_id = \"AK\"\nsecret_access_key_file = \"/etc/shotd/s3_secret\"\n",
			err:  "storage.s3.secret_access_key_file: cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.toml), c.env)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				for _, secret := range []string{"hidden-value", token, credToken, "abc"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("the error shows a secret: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AdminToken != c.wantToken || cfg.Storage.S3.SecretAccessKey != c.wantS3 {
				t.Fatalf("admin_token %q, s3 secret %q; want %q, %q", cfg.AdminToken, cfg.Storage.S3.SecretAccessKey, c.wantToken, c.wantS3)
			}
			// Written out, the file keys stay and the secrets they hold do not: it reads back.
			out, err := cfg.TOML()
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{c.wantToken, c.wantS3} {
				if secret != "" && strings.Contains(string(out), secret) {
					t.Fatalf("TOML() writes the secret read from a file:\n%s", out)
				}
			}
			again, err := Parse(out, c.env)
			if err != nil {
				t.Fatalf("TOML() does not read back: %v\n%s", err, out)
			}
			if again.AdminToken != cfg.AdminToken || again.Storage.S3.SecretAccessKey != cfg.Storage.S3.SecretAccessKey {
				t.Fatalf("read back: admin_token %q, s3 secret %q", again.AdminToken, again.Storage.S3.SecretAccessKey)
			}
		})
	}
}
