package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shotd/shotd/config"
	shotdsvc "github.com/shotd/shotd/service"
)

// TestPrintFirstStart: off a terminal the first-start message names the credentials file and
// says when the key must sign, and never shows the secret key (the output may be the journal).
func TestPrintFirstStart(t *testing.T) {
	for _, tt := range []struct {
		name   string
		signed bool
	}{{"loopback key", false}, {"signed key", true}} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			fs := &shotdsvc.FirstStart{AccessKey: "ak_test", SecretKey: "sk_secret", RequireSignature: tt.signed,
				CredentialsPath: "/data/credentials"}
			var out bytes.Buffer
			printFirstStart(&out, cfg, fs)
			s := out.String()
			if !strings.Contains(s, fs.CredentialsPath) || strings.Contains(s, fs.SecretKey) {
				t.Fatalf("message:\n%s", s)
			}
			if tt.signed != strings.Contains(s, "requires signed requests") {
				t.Fatalf("message does not say whether the key signs:\n%s", s)
			}
		})
	}
}
