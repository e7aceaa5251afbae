package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/store"
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
	// Boolean flags read as the update commands read them; what is not a boolean, or a value
	// left behind as a second argument, is refused rather than taken as false or dropped.
	if out, err := run("key", "create", acc.ID, "--require-signature=1"); err != nil || !strings.Contains(out, `"require_signature": true`) {
		t.Fatalf("key create --require-signature=1: %q %v", out, err)
	}
	if out, err := run("account", "create", "--email", "b@example.test", "--verified=TRUE"); err != nil || !strings.Contains(out, `"email_verified": true`) {
		t.Fatalf("account create --verified=TRUE: %q %v", out, err)
	}
	for _, args := range [][]string{
		{"key", "create", acc.ID, "--require-signature", "false"},
		{"key", "create", acc.ID, "--require-signature=maybe"},
		{"key", "revoke", "sk_1", "sk_2"},
	} {
		if _, err := run(args...); err == nil {
			t.Errorf("%q was taken", args)
		}
	}
}

type exitError struct {
	code   int
	stderr string
}

func (e *exitError) Error() string { return e.stderr }

// TestAdminAccountListPages lists 150 accounts, more than one page of the admin API: the CLI
// follows next_after and prints each account once.
func TestAdminAccountListPages(t *testing.T) {
	st := storetest.Open(t, "")
	plans := config.Default().Plans
	adm := httpd.NewAdmin("tok", "http://127.0.0.1", st, plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())
	want := map[string]bool{}
	for i := 0; i < 150; i++ {
		acc, err := st.CreateAccount(fmt.Sprintf("page%d@example.test", i), "default", true)
		if err != nil {
			t.Fatal(err)
		}
		want[acc.ID] = true
	}
	var out, errOut bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
	if code := m.Run(context.Background(), []string{"admin", "--addr", ln.Addr().String(), "--token", "tok", "account", "list"}); code != 0 {
		t.Fatalf("account list: %d %s", code, errOut.String())
	}
	var got struct{ Accounts []shotd.Account }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range got.Accounts {
		if seen[a.ID] || !want[a.ID] {
			t.Fatalf("account %s listed twice or unknown", a.ID)
		}
		seen[a.ID] = true
	}
	if len(seen) != 150 {
		t.Fatalf("account list printed %d accounts, want 150", len(seen))
	}
}

// TestAdminJobsAndDelete: the CLI finds a job and a batch whatever their account, lists an
// account's jobs, refuses to delete an account with a queued job, and deletes it once it ended.
func TestAdminJobsAndDelete(t *testing.T) {
	st := storetest.Open(t, "")
	adm := httpd.NewAdmin("tok", "http://127.0.0.1", st, config.Default().Plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go adm.Serve(ln)
	defer adm.Shutdown(context.Background())
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errOut, Env: []string{"SHOTD_DATA_DIR=" + t.TempDir()}}
		if code := m.Run(context.Background(), append([]string{"admin", "--addr", ln.Addr().String(), "--token", "tok"}, args...)); code != 0 {
			return out.String(), &exitError{code, errOut.String()}
		}
		return out.String(), nil
	}
	acc, err := st.CreateAccount("jobs@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []shotd.Job{{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: "ak", Options: json.RawMessage(`{}`)}}
	batch := shotd.Batch{BatchID: store.NewBatchID(), AccountID: acc.ID}
	if err := st.CreateJobs(jobs, &batch); err != nil {
		t.Fatal(err)
	}
	id := jobs[0].JobID
	for _, s := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "get", id}, `"account_id": "` + acc.ID + `"`},
		{[]string{"batch", "get", batch.BatchID}, `"progress": {`},
		{[]string{"account", "jobs", acc.ID}, `"job_id": "` + id + `"`},
	} {
		out, err := run(s.args...)
		if err != nil || !strings.Contains(out, s.want) {
			t.Fatalf("%v printed %q (%v), want %s", s.args, out, err, s.want)
		}
	}
	if out, err := run("account", "delete", acc.ID); err == nil || !strings.Contains(out, "queued or rendering") {
		t.Fatalf("delete with a queued job: %q %v", out, err)
	}
	if _, err := st.UpdateJob(id, func(j *shotd.Job) error { j.Status = shotd.JobFailed; return nil }); err != nil {
		t.Fatal(err)
	}
	if out, err := run("account", "delete", acc.ID); err != nil || !strings.Contains(out, `"jobs": 1`) || !strings.Contains(out, `"batches": 1`) {
		t.Fatalf("delete: %q %v", out, err)
	}
	if _, err := run("job", "get", id); err == nil {
		t.Fatal("the deleted account's job is still found")
	}
}

// TestPatchBodyNamesFlag: a bad value is reported under the flag the operator typed, not the
// API field it sets; the flags given are read as their fields want, the others left out.
func TestPatchBodyNamesFlag(t *testing.T) {
	for _, f := range []optional{
		{"require_signature", "require-signature", "maybe", asBool},
		{"bonus_screenshots", "bonus", "seven", asInt},
	} {
		_, err := patchBody([]optional{f})
		if err == nil || !strings.Contains(err.Error(), "--"+f.flag+":") {
			t.Fatalf("error %v, want it to name --%s", err, f.flag)
		}
	}
	body, err := patchBody([]optional{
		{"email_verified", "verified", "false", asBool},
		{"bonus_screenshots", "bonus", "7", asInt},
		{"plan", "plan", "", asString},
	})
	if err != nil || len(body) != 2 || body["email_verified"] != false || body["bonus_screenshots"] != 7 {
		t.Fatalf("err %v, body %v", err, body)
	}
}
