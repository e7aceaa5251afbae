package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestClusterCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"cluster", "--help"}, 0, "shotd cluster status"},
		{"status help", []string{"cluster", "status", "--help"}, 0, "shotd cluster status"},
		{"no subcommand", []string{"cluster"}, 1, "want a subcommand: status"},
		{"single node", []string{"cluster", "status"}, 1, "no [cluster] table"},
		{"not running", []string{"cluster", "status"}, 1, "is serve running in cluster mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{"SHOTD_DATA_DIR=" + t.TempDir()}
			if tt.name == "not running" {
				env = append(env, "SHOTD_CLUSTER_NODE_NAME=n1", "SHOTD_CLUSTER_LISTEN=127.0.0.1:7422",
					"SHOTD_STORAGE_S3_ENDPOINT=http://127.0.0.1:9", "SHOTD_STORAGE_S3_BUCKET=b",
					"SHOTD_STORAGE_S3_ACCESS_KEY_ID=a", "SHOTD_STORAGE_S3_SECRET_ACCESS_KEY=s")
			}
			var out, errOut bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &errOut, Env: env}
			if code := m.Run(context.Background(), tt.args); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errOut.String())
			}
			if got := out.String() + errOut.String(); !strings.Contains(got, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, got)
			}
		})
	}
}
