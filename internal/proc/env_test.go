package proc

import (
	"slices"
	"testing"
)

func TestEnv(t *testing.T) {
	tests := []struct {
		name string
		kv   string
		kept bool
	}{
		{name: "path", kv: "PATH=/usr/bin", kept: true},
		{name: "home", kv: "HOME=/root", kept: true},
		{name: "tmpdir", kv: "TMPDIR=/tmp", kept: true},
		{name: "locale", kv: "LANG=C.UTF-8", kept: true},
		{name: "lc", kv: "LC_ALL=C.UTF-8", kept: true},
		{name: "time zone", kv: "TZ=UTC", kept: true},
		{name: "fontconfig", kv: "FONTCONFIG_FILE=/etc/fonts/fonts.conf", kept: true},
		{name: "user fonts", kv: "XDG_DATA_HOME=/var/lib/shotd", kept: true},
		{name: "admin token", kv: "SHOTD_ADMIN_TOKEN=secret"},
		{name: "s3 secret", kv: "SHOTD_STORAGE_S3_SECRET_ACCESS_KEY=secret"},
		{name: "systemd credentials", kv: "CREDENTIALS_DIRECTORY=/run/credentials/shotd.service"},
		{name: "notify socket", kv: "NOTIFY_SOCKET=/run/systemd/notify"},
		{name: "aws", kv: "AWS_SECRET_ACCESS_KEY=k"},
		{name: "gcp", kv: "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp.json"},
		{name: "azure", kv: "AZURE_CLIENT_SECRET=s"},
		{name: "database", kv: "DATABASE_URL=postgres://u:p@h/db"},
		{name: "github", kv: "GITHUB_TOKEN=t"},
		{name: "preload", kv: "LD_PRELOAD=/tmp/x.so"},
		{name: "no value", kv: "PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slices.Contains(Env([]string{tt.kv}), tt.kv); got != tt.kept {
				t.Errorf("Env kept %q: %v, want %v", tt.kv, got, tt.kept)
			}
		})
	}
}
