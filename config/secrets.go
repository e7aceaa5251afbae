package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CredentialsEnv is the variable systemd sets for a unit with LoadCredential= lines: the
// directory that holds each credential as a file named after it.
const CredentialsEnv = "CREDENTIALS_DIRECTORY"

// maxSecretFile bounds a secret file: a token or key is a line, not a document.
const maxSecretFile = 64 << 10

// readSecretFile reads the secret of a *_file key (admin_token_file, secret_access_key_file).
// Under systemd with LoadCredential=NAME:PATH, the service (a dynamic user that cannot read the
// root-owned PATH) finds it as $CREDENTIALS_DIRECTORY/NAME: when credDir holds a credential named
// after the file's base name, that credential is read instead of path, so one config file serves
// both the unit and the operator's shotd admin run as root. A trailing newline is dropped; an
// empty secret is an error. Messages name the file, never its content.
func readSecretFile(v *validator, key, path, credDir string) string {
	if strings.TrimSpace(path) == "" {
		v.addf(key, "must name a file")
		return ""
	}
	read := path
	if credDir != "" {
		if c := filepath.Join(credDir, filepath.Base(path)); fileExists(c) {
			read = c
		}
	}
	f, err := os.Open(read)
	if err != nil {
		v.addf(key, "cannot be read: %v (under systemd, pass it with LoadCredential=%s:%s)", err, filepath.Base(path), path)
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		v.addf(key, "cannot be read: %v", err)
		return ""
	}
	if len(b) > maxSecretFile {
		v.addf(key, "%s is larger than %d bytes: not a secret", read, maxSecretFile)
		return ""
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		v.addf(key, "%s is empty", read)
	}
	return s
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// credentialsDir is CREDENTIALS_DIRECTORY from env ("NAME=value" pairs), "" when unset.
func credentialsDir(env []string) string {
	dir := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, CredentialsEnv+"="); ok {
			dir = v
		}
	}
	return dir
}
