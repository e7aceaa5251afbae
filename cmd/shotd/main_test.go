package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/shotd/shotd/config"
)

// TestHelp: every command and subcommand answers --help (and help) with exit 0 and its usage,
// without a config, a token or a running service.
func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"top", []string{"--help"}, "commands:"},
		{"top word", []string{"help"}, "commands:"},
		{"serve", []string{"serve", "--help"}, "-config"},
		{"serve -h", []string{"serve", "-h"}, "-config"},
		{"admin", []string{"admin", "--help"}, "account create"},
		{"admin word", []string{"admin", "help"}, "account create"},
		{"admin subcommand", []string{"admin", "key", "create", "--help"}, "account create"},
		{"admin subcommand after flags", []string{"admin", "--addr", "127.0.0.1:1", "account", "list", "-h"}, "account create"},
		{"config", []string{"config", "--help"}, "config <command>"},
		{"config print", []string{"config", "print", "--help"}, "config <command>"},
		{"config check", []string{"config", "check", "--help"}, "config <command>"},
		{"version", []string{"version", "--help"}, "shotd "},
		{"openapi", []string{"openapi", "--help"}, "-config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
			if code := m.Run(context.Background(), tt.args); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
			}
			if got := out.String() + errOut.String(); !strings.Contains(got, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, got)
			}
		})
	}
}

// TestServeRefusesArguments: serve given a file without --config fails at once, rather than
// run on the embedded defaults. Its context is cancelled already: a serve that ran anyway stops
// at once and exits 0, which fails the test rather than leaving it running.
func TestServeRefusesArguments(t *testing.T) {
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := m.Run(ctx, []string{"serve", "/etc/shotd/shotd.toml"}); code == 0 || !strings.Contains(errOut.String(), "--config FILE") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming --config", code, errOut.String())
	}
}

func TestConfigCommands(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, config.Example, 0o600); err != nil {
		t.Fatal(err)
	}
	badKey := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badKey, []byte("[browser]\npool_sise = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noFFmpeg := filepath.Join(dir, "noffmpeg.toml")
	if err := os.WriteFile(noFFmpeg, []byte("[media]\nffmpeg_path = \"/nonexistent/ffmpeg\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.toml")
	if err := os.WriteFile(secret, []byte("admin_token = \"tok-0123456789abcdef0123456789abcdef\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3 := "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"b\"\naccess_key_id = \"AKIDEXAMPLE\"\n"
	s3Secret := filepath.Join(dir, "s3.toml")
	if err := os.WriteFile(s3Secret, []byte(s3+"secret_access_key = \"s3-secret-0123456789\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "s3-secret")
	if err := os.WriteFile(secretFile, []byte("s3-file-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3File := filepath.Join(dir, "s3file.toml")
	if err := os.WriteFile(s3File, []byte(s3+"secret_access_key_file = \""+secretFile+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		env      []string
		code     int
		want     string
		unwanted string
	}{
		{"print hides the s3 secret", []string{"config", "print", "--config", s3Secret}, nil, 0, "secret_access_key = '(hidden", "s3-secret-0123456789"},
		{"print hides the s3 secret of the environment", []string{"config", "print", "--config", s3File}, []string{"SHOTD_STORAGE_S3_SECRET_ACCESS_KEY=env-secret-0123456789"}, 1, "", "env-secret-0123456789"},
		{"print never prints the secret file's content", []string{"config", "print", "--config", s3File, "--show-secrets"}, nil, 0, "secret_access_key_file = ", "s3-file-secret-0123456789"},
		{"print shows the s3 secret when asked", []string{"config", "print", "--config", s3Secret, "--show-secrets"}, nil, 0, "s3-secret-0123456789", ""},
		{"print defaults", []string{"config", "print"}, nil, 0, "data_dir = './data'", ""},
		{"print with env", []string{"config", "print", "--config", good}, []string{"SHOTD_BROWSER_POOL_SIZE=7"}, 0, "pool_size = 7", ""},
		{"print hides the token", []string{"config", "print", "--config", secret}, nil, 0, "admin_token = '(hidden", "tok-0123456789abcdef0123456789abcdef"},
		{"print shows the token when asked", []string{"config", "print", "--config", secret, "--show-secrets"}, nil, 0, "tok-0123456789abcdef0123456789abcdef", ""},
		{"check good", []string{"config", "check", good}, nil, 0, "ok", ""},
		{"check unknown key", []string{"config", "check", badKey}, nil, 1, "browser.pool_sise: unknown key", ""},
		{"check missing ffmpeg", []string{"config", "check", noFFmpeg}, nil, 1, "media.ffmpeg_path", ""},
		{"check without file", []string{"config", "check"}, nil, 1, "needs one FILE", ""},
		{"unknown", []string{"config", "frobnicate"}, nil, 1, "unknown command", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &errOut, Env: tt.env}
			code := m.Run(context.Background(), tt.args)
			got := out.String() + errOut.String()
			if code != tt.code || !strings.Contains(got, tt.want) || (tt.unwanted != "" && strings.Contains(got, tt.unwanted)) {
				t.Errorf("exit %d (want %d), output (want %q, not %q):\n%s", code, tt.code, tt.want, tt.unwanted, got)
			}
		})
	}
	// What print prints, serve reads back to the same configuration.
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out, Env: []string{"SHOTD_PLANS_PRO_MONTHLY_QUOTA=9"}}
	if code := m.Run(context.Background(), []string{"config", "print", "--config", good}); code != 0 {
		t.Fatal(out.String())
	}
	back, err := config.Parse(out.Bytes(), nil)
	if err != nil {
		t.Fatalf("printed config does not load: %v\n%s", err, out.String())
	}
	if back.Plans["pro"].MonthlyQuota != 9 {
		t.Errorf("printed config lost plans.pro: %+v", back.Plans)
	}
}

func TestBuildVersion(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "dev-0123456789ab"},
		{"dirty checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "dev-0123456789ab-dirty"},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildVersion(&tt.bi); got != tt.want {
				t.Errorf("buildVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLogFormatAuto: auto writes JSON lines to anything but a terminal.
func TestLogFormatAuto(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, config.Log{Level: "info", Format: config.LogAuto})
	log.Info().Msg("hello")
	if !strings.HasPrefix(buf.String(), "{") || strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("auto to a buffer wrote %q, want a JSON line without colour", buf.String())
	}
}
