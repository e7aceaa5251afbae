package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
)

// TestAdminCommands runs every `shotd admin` command against a real admin API on loopback.
func TestAdminCommands(t *testing.T) {
	st := storetest.Open(t, "")
	plans := config.Default().Plans
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	adm := httpd.NewAdmin("tok", "http://127.0.0.1", st, plans, httpd.GateUsage{Gate: accounts, Plans: plans}, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())

	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
		code := m.Run(context.Background(), append([]string{"admin", "--addr", ln.Addr().String(), "--token", "tok"}, args...))
		if code != 0 {
			return out.String(), &exitError{code, errOut.String()}
		}
		return out.String(), nil
	}
	out, err := run("account", "create", "--email", "cli@example.test", "--verified")
	if err != nil {
		t.Fatal(err)
	}
	var acc shotd.Account
	if err := json.Unmarshal([]byte(out), &acc); err != nil || acc.ID == "" || !acc.EmailVerified {
		t.Fatalf("account create printed %q (%v)", out, err)
	}
	steps := []struct {
		name string
		args []string
		want string
	}{
		{"account get", []string{"account", "get", acc.ID}, `"email": "cli@example.test"`},
		{"account update", []string{"account", "update", acc.ID, "--bonus", "7", "--verified=false"}, `"bonus_screenshots": 7`},
		{"key create", []string{"key", "create", acc.ID, "--name", "ci", "--require-signature"}, `"secret_key"`},
		{"key list", []string{"key", "list", acc.ID}, `"name": "ci"`},
		{"account list", []string{"account", "list"}, `"id": "` + acc.ID + `"`},
		{"usage get", []string{"usage", "get", acc.ID}, `"quota": {`},
		{"plan list", []string{"plan", "list"}, `"name": "default"`},
	}
	for _, s := range steps {
		out, err := run(s.args...)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !strings.Contains(out, s.want) {
			t.Fatalf("%s printed %q, want %s", s.name, out, s.want)
		}
	}
	keys, _ := st.Keys(acc.ID)
	ak := keys[0].AccessKey
	if out, err := run("key", "update", ak, "--name", "deploy", "--require-signature=false"); err != nil || !strings.Contains(out, `"deploy"`) {
		t.Fatalf("key update: %q %v", out, err)
	}
	if _, err := run("key", "revoke", ak); err != nil {
		t.Fatalf("key revoke: %v", err)
	}
	if k, _ := st.Key(ak); !k.Revoked {
		t.Fatal("key not revoked")
	}
	if _, err := run("key", "revoke"); err == nil {
		t.Fatal("revoke without an id must fail")
	}
	if _, err := run("account", "get", "acc_nope"); err == nil {
		t.Fatal("unknown account must fail")
	}
}

type exitError struct {
	code   int
	stderr string
}

func (e *exitError) Error() string { return e.stderr }
