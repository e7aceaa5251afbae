package config

import (
	"os"
	"strings"

	"github.com/shotd/shotd"
)

// S3 is the [storage.s3] table: when endpoint or bucket is set, every stored result (response_type
// json, jobs, bulk) goes to this bucket instead of data_dir/files, with the same expiry, and its
// url is a presigned GET. The credentials come from the file, from SHOTD_STORAGE_S3_ACCESS_KEY_ID
// and SHOTD_STORAGE_S3_SECRET_ACCESS_KEY, or (the secret) from secret_access_key_file, which
// under systemd's LoadCredential= is read from $CREDENTIALS_DIRECTORY (secrets.go).
type S3 struct {
	Endpoint            string `toml:"endpoint"`   // http(s)://host[:port]
	Region              string `toml:"region"`     // "" = us-east-1, so that links are signed without asking
	Bucket              string `toml:"bucket"`     // must exist
	Prefix              string `toml:"prefix"`     // put before every key, such as "shotd/"
	Addressing          string `toml:"addressing"` // auto, path or virtual; "" = auto
	AccessKeyID         string `toml:"access_key_id"`
	SecretAccessKey     string `toml:"secret_access_key"`
	SecretAccessKeyFile string `toml:"secret_access_key_file"` // read at start, trailing newline dropped
	CAFile              string `toml:"ca_file"`                // extra PEM roots for an https endpoint
}

// Enabled reports whether the table is set.
func (s S3) Enabled() bool { return s.Endpoint != "" || s.Bucket != "" }

// validate checks the table and resolves secret_access_key_file into SecretAccessKey, once.
// Messages never show a credential.
func (s *S3) validate(v *validator, credentials string) {
	if !s.Enabled() {
		return
	}
	if msg := shotd.CheckStorageEndpoint(s.Endpoint); msg != "" {
		v.addf("storage.s3.endpoint", "%s", msg)
	}
	if strings.TrimSpace(s.Bucket) == "" {
		v.addf("storage.s3.bucket", "must name a bucket")
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	switch s.Addressing {
	case "", "auto", "path", "virtual":
	default:
		v.addf("storage.s3.addressing", "must be auto, path or virtual, got %q", s.Addressing)
	}
	if strings.HasPrefix(s.Prefix, "/") {
		v.addf("storage.s3.prefix", "must not start with /")
	}
	if s.AccessKeyID == "" {
		v.addf("storage.s3.access_key_id", "must be set (or SHOTD_STORAGE_S3_ACCESS_KEY_ID)")
	}
	switch {
	case s.SecretAccessKey != "" && s.SecretAccessKeyFile != "":
		v.addf("storage.s3.secret_access_key_file", "give secret_access_key or secret_access_key_file, not both")
	case s.SecretAccessKeyFile != "":
		s.SecretAccessKey = readSecretFile(v, "storage.s3.secret_access_key_file", s.SecretAccessKeyFile, credentials)
	case s.SecretAccessKey == "":
		v.addf("storage.s3.secret_access_key", "must be set (or SHOTD_STORAGE_S3_SECRET_ACCESS_KEY, or secret_access_key_file)")
	}
	if s.CAFile != "" {
		if _, err := os.Stat(s.CAFile); err != nil {
			v.addf("storage.s3.ca_file", "cannot be read: %v", err)
		}
	}
}
