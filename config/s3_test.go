package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStorageS3(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const table = "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"shots\"\n"
	cases := []struct {
		name    string
		toml    string
		env     []string
		want    S3     // checked when err is ""
		err     string // a substring of the error
		enabled bool
	}{
		{name: "absent", toml: "", want: S3{}},
		{name: "from the file", toml: table + "access_key_id = \"AK\"\nsecret_access_key = \"SK\"\nprefix = \"p/\"\naddressing = \"path\"\n",
			want: S3{Endpoint: "http://127.0.0.1:9000", Bucket: "shots", Region: "us-east-1", Prefix: "p/", Addressing: "path",
				AccessKeyID: "AK", SecretAccessKey: "SK"}, enabled: true},
		{name: "credentials from the environment", toml: table,
			env:  []string{"SHOTD_STORAGE_S3_ACCESS_KEY_ID=envak", "SHOTD_STORAGE_S3_SECRET_ACCESS_KEY=envsk", "SHOTD_STORAGE_S3_REGION=eu-west-3"},
			want: S3{Endpoint: "http://127.0.0.1:9000", Bucket: "shots", Region: "eu-west-3", AccessKeyID: "envak", SecretAccessKey: "envsk"}, enabled: true},
		{name: "everything from the environment", env: []string{"SHOTD_STORAGE_S3_ENDPOINT=https://s3.example.com", "SHOTD_STORAGE_S3_BUCKET=b1",
			"SHOTD_STORAGE_S3_ACCESS_KEY_ID=a", "SHOTD_STORAGE_S3_SECRET_ACCESS_KEY=s"},
			want: S3{Endpoint: "https://s3.example.com", Bucket: "b1", Region: "us-east-1", AccessKeyID: "a", SecretAccessKey: "s"}, enabled: true},
		{name: "secret from a file", toml: table + "access_key_id = \"AK\"\nsecret_access_key_file = \"" + secretFile + "\"\n",
			want: S3{Endpoint: "http://127.0.0.1:9000", Bucket: "shots", Region: "us-east-1", AccessKeyID: "AK",
				SecretAccessKey: "from-a-file", SecretAccessKeyFile: secretFile}, enabled: true},
		{name: "no secret", toml: table + "access_key_id = \"AK\"\n", err: "storage.s3.secret_access_key: must be set"},
		{name: "secret twice", toml: table + "access_key_id = \"AK\"\nsecret_access_key = \"hidden-value\"\nsecret_access_key_file = \"" + secretFile + "\"\n",
			err: "not both"},
		{name: "no bucket", toml: "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\naccess_key_id = \"a\"\nsecret_access_key = \"s\"\n", err: "storage.s3.bucket"},
		{name: "endpoint with a path", toml: "[storage.s3]\nendpoint = \"http://h:9/b\"\nbucket = \"b\"\naccess_key_id = \"a\"\nsecret_access_key = \"s\"\n",
			err: "storage.s3.endpoint"},
		{name: "bad addressing", toml: table + "access_key_id = \"a\"\nsecret_access_key = \"s\"\naddressing = \"dns\"\n", err: "storage.s3.addressing"},
		{name: "unknown env key", toml: table, env: []string{"SHOTD_STORAGE_S3_NOPE=1"}, err: `no key "nope" in [storage.s3]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.toml), c.env)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				if strings.Contains(err.Error(), "hidden-value") {
					t.Fatalf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Storage.S3 != c.want || cfg.Storage.S3.Enabled() != c.enabled {
				t.Fatalf("got %+v, want %+v", cfg.Storage.S3, c.want)
			}
		})
	}
}
