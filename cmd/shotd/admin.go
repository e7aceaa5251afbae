package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
)

const adminUsage = `usage: shotd admin [--config FILE] [--addr HOST:PORT] [--token TOKEN] <command>

commands:
  account create --email E [--plan P] [--verified]
  account list                           (every account, page after page)
  account get ID                         (includes usage)
  usage get ACCOUNT_ID                   (the account's usage of its current period)
  account update ID [--plan P] [--verified=true|false] [--bonus N]
  account delete ID                      (with its keys, jobs, batches, files and usage; refused
                                         while it has jobs queued or rendering)
  account jobs ID                        (its jobs, newest first, up to 100)
  job get JOB_ID                         (any account's job, with its account_id)
  batch get BATCH_ID                     (any account's batch, with its progress)
  key create ACCOUNT_ID [--name N] [--require-signature]   (shows the secret once)
  key list ACCOUNT_ID
  key update ACCESS_KEY [--name N] [--require-signature=true|false]
  key revoke ACCESS_KEY
  plan list                              (the plans of the configuration file, as serve reads it)
  backup [--files] FILE                  (a consistent copy of the database while serve runs; - is stdout;
                                         --files: a tar archive with the stored files too)
  restore FILE                           (with serve stopped: checks a backup, installs it in data_dir
                                         with the data dir's owner, keeps the replaced database)
The address and token come from the config file (admin_listen, admin_token, or the token that
serve generated in data_dir/admin_token), or from the flags. Without --config, the installed
/etc/shotd/shotd.toml is read when it exists.
`

// admin is the operators' client of the admin API: accounts, keys, plans, usage.
func (m *Main) admin(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	cfgPath := fs.String("config", "", "TOML configuration file")
	addr := fs.String("addr", "", "admin API address (default: admin_listen)")
	token := fs.String("token", "", "admin token (default: admin_token or data_dir/admin_token)")
	fs.Usage = func() { fmt.Fprint(m.Stderr, adminUsage) }
	// Help needs no config, token or service, wherever it is asked for.
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(m.Stdout, adminUsage)
			return nil
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 && rest[0] == "help" {
		fmt.Fprint(m.Stdout, adminUsage)
		return nil
	}
	if *cfgPath == "" {
		*cfgPath = installedConfig()
	}
	cfg, err := config.Load(*cfgPath, m.Env)
	if err != nil {
		return err
	}
	if *addr == "" {
		*addr = cfg.AdminListen
	}
	// restore works on data_dir with the service stopped: no address, no token.
	if rest := fs.Args(); len(rest) > 0 && rest[0] == "restore" {
		if len(rest) != 2 {
			fmt.Fprint(m.Stderr, adminUsage)
			return errors.New("admin restore: needs one FILE")
		}
		return restore(m.Stdout, cfg.DataDir, rest[1])
	}
	if *token == "" {
		*token = cfg.AdminToken
	}
	if *token == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "admin_token"))
		if err != nil {
			return fmt.Errorf("no admin token: set admin_token, pass --token, or run serve once to generate %s", filepath.Join(cfg.DataDir, "admin_token"))
		}
		*token = strings.TrimSpace(string(b))
	}
	c := &adminClient{base: "http://" + *addr, token: *token, out: m.Stdout, plans: cfg.Plans}
	rest := fs.Args()
	if len(rest) == 2 && rest[0] == "backup" {
		return c.backup(ctx, rest[1], false)
	}
	if len(rest) == 3 && rest[0] == "backup" && (rest[1] == "--files" || rest[1] == "-files") {
		return c.backup(ctx, rest[2], true)
	}
	if len(rest) < 2 {
		fmt.Fprint(m.Stderr, adminUsage)
		return errors.New("admin: missing command")
	}
	return c.run(ctx, rest[0], rest[1], rest[2:])
}

type adminClient struct {
	base, token string
	out         io.Writer
	plans       map[string]shotd.Plan // from the configuration: the admin API has no plans endpoint
}

// adminArgs are one command's flags and its positional id (path-escaped).
type adminArgs struct {
	id, email, plan, verified, bonus, name, reqSig string
}

func (c *adminClient) run(ctx context.Context, noun, verb string, args []string) error {
	fs := flag.NewFlagSet(noun+" "+verb, flag.ContinueOnError)
	var a adminArgs
	fs.StringVar(&a.email, "email", "", "account email")
	fs.StringVar(&a.plan, "plan", "", "plan name")
	fs.StringVar(&a.verified, "verified", "", "email verified (true or false)")
	fs.StringVar(&a.bonus, "bonus", "", "bonus screenshots")
	fs.StringVar(&a.name, "name", "", "key name")
	fs.StringVar(&a.reqSig, "require-signature", "", "require signed requests (true or false)")
	// Allow the positional id before the flags: "key revoke AK" and "account update ID --plan p".
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	// Bare boolean flags (--verified, --require-signature) mean true.
	for i, arg := range args {
		if arg == "--verified" || arg == "-verified" {
			args[i] = "--verified=true"
		}
		if arg == "--require-signature" || arg == "-require-signature" {
			args[i] = "--require-signature=true"
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if pos = append(pos, fs.Args()...); len(pos) > 1 {
		// "--require-signature false" would otherwise leave false behind, unread.
		return fmt.Errorf("admin: %s %s takes one id, got %q (give a flag's value as --flag=value)", noun, verb, pos)
	} else if len(pos) == 1 {
		a.id = url.PathEscape(pos[0])
	}
	for name, v := range map[string]string{"verified": a.verified, "require-signature": a.reqSig} {
		if _, err := strconv.ParseBool(v); v != "" && err != nil {
			return fmt.Errorf("admin: --%s=%s: want true or false", name, v)
		}
	}
	cmd, ok := adminCommands[noun+" "+verb]
	if !ok {
		return fmt.Errorf("admin: unknown command %q", noun+" "+verb)
	}
	if cmd.needsID && a.id == "" {
		return fmt.Errorf("%s %s needs an id", noun, verb)
	}
	return cmd.run(c, ctx, a)
}

// adminCommand is one "noun verb" of shotd admin.
type adminCommand struct {
	needsID bool
	run     func(c *adminClient, ctx context.Context, a adminArgs) error
}

var adminCommands = map[string]adminCommand{
	"account create": {run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		plan := a.plan
		if plan == "" {
			plan = "default"
		}
		body := map[string]any{"email": a.email, "plan": plan, "email_verified": flagTrue(a.verified)}
		return c.do(ctx, http.MethodPost, "/admin/v1/accounts", body)
	}},
	"account list": {run: func(c *adminClient, ctx context.Context, _ adminArgs) error {
		return c.listAccounts(ctx)
	}},
	"account get": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodGet, "/admin/v1/accounts/"+a.id, nil)
	}},
	"account update": update("/admin/v1/accounts/", func(a adminArgs) []optional {
		return []optional{
			{"plan", "plan", a.plan, asString},
			{"email_verified", "verified", a.verified, asBool},
			{"bonus_screenshots", "bonus", a.bonus, asInt},
		}
	}),
	"account delete": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodDelete, "/admin/v1/accounts/"+a.id, nil)
	}},
	"account jobs": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodGet, "/admin/v1/accounts/"+a.id+"/jobs", nil)
	}},
	"job get": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodGet, "/admin/v1/jobs/"+a.id, nil)
	}},
	"batch get": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodGet, "/admin/v1/batches/"+a.id, nil)
	}},
	"usage get": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.doField(ctx, "/admin/v1/accounts/"+a.id, "usage")
	}},
	"plan list": {run: func(c *adminClient, _ context.Context, _ adminArgs) error {
		// Plans live in the configuration, which serve reads at start and on SIGHUP: the admin API has none.
		names := slices.Sorted(maps.Keys(c.plans))
		list := make([]shotd.Plan, 0, len(names))
		for _, n := range names {
			list = append(list, c.plans[n])
		}
		b, err := json.MarshalIndent(map[string]any{"plans": list}, "", "  ")
		if err != nil {
			return err
		}
		_, err = c.out.Write(append(b, '\n'))
		return err
	}},
	"key create": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		body := map[string]any{"name": a.name, "require_signature": flagTrue(a.reqSig)}
		return c.do(ctx, http.MethodPost, "/admin/v1/accounts/"+a.id+"/keys", body)
	}},
	"key list": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodGet, "/admin/v1/accounts/"+a.id+"/keys", nil)
	}},
	"key update": update("/admin/v1/keys/", func(a adminArgs) []optional {
		return []optional{
			{"name", "name", a.name, asString},
			{"require_signature", "require-signature", a.reqSig, asBool},
		}
	}),
	"key revoke": {needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		return c.do(ctx, http.MethodDelete, "/admin/v1/keys/"+a.id, nil)
	}},
}

// listAccounts prints every account: it follows the admin API's next_after cursor page by page.
func (c *adminClient) listAccounts(ctx context.Context) error {
	all := []json.RawMessage{}
	after := ""
	for {
		path := "/admin/v1/accounts?limit=100"
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		out, err := c.fetch(ctx, http.MethodGet, path, nil)
		if err != nil {
			c.print(out)
			return err
		}
		var page struct {
			Accounts  []json.RawMessage `json:"accounts"`
			NextAfter string            `json:"next_after"`
		}
		if err := json.Unmarshal(out, &page); err != nil {
			return fmt.Errorf("admin API answer: %v", err)
		}
		all = append(all, page.Accounts...)
		if page.NextAfter == "" || page.NextAfter == after {
			break
		}
		after = page.NextAfter
	}
	b, err := json.Marshal(map[string]any{"accounts": all})
	if err != nil {
		return err
	}
	c.print(b)
	return nil
}

// optional is a flag of an update command: the field of the PATCH body it sets, the flag's
// name, its value ("" when not given) and how the value is read.
type optional struct {
	key, flag, value string
	parse            func(string) (any, error)
}

func asString(s string) (any, error) { return s, nil }
func asBool(s string) (any, error)   { return strconv.ParseBool(s) }
func asInt(s string) (any, error)    { return strconv.Atoi(s) }

// update is an update command: a PATCH of path+id whose body holds the flags given, each under
// its field; a flag left out leaves its field as it is.
func update(path string, flags func(adminArgs) []optional) adminCommand {
	return adminCommand{needsID: true, run: func(c *adminClient, ctx context.Context, a adminArgs) error {
		body, err := patchBody(flags(a))
		if err != nil {
			return err
		}
		return c.do(ctx, http.MethodPatch, path+a.id, body)
	}}
}

// patchBody reads the flags given into a PATCH body. A bad value is reported under the flag the
// operator typed, not the API field it sets.
func patchBody(flags []optional) (map[string]any, error) {
	body := map[string]any{}
	for _, f := range flags {
		if f.value == "" {
			continue
		}
		v, err := f.parse(f.value)
		if err != nil {
			return nil, fmt.Errorf("--%s: %v", f.flag, err)
		}
		body[f.key] = v
	}
	return body, nil
}

// do sends one admin request and prints the JSON answer; a non-2xx answer is an error.
func (c *adminClient) do(ctx context.Context, method, path string, body map[string]any) error {
	out, err := c.fetch(ctx, method, path, body)
	c.print(out)
	return err
}

// doField GETs path and prints one field of its JSON answer.
func (c *adminClient) doField(ctx context.Context, path, field string) error {
	out, err := c.fetch(ctx, http.MethodGet, path, nil)
	if err != nil {
		c.print(out)
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(out, &m) != nil || m[field] == nil {
		return fmt.Errorf("admin API answer has no %q", field)
	}
	c.print(m[field])
	return nil
}

// print writes a JSON answer indented.
func (c *adminClient) print(out []byte) {
	if len(out) == 0 {
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = append(pretty.Bytes(), '\n')
	}
	c.out.Write(out)
}

// fetch sends one admin request and returns the answer's body; a non-2xx answer is an error.
func (c *adminClient) fetch(ctx context.Context, method, path string, body map[string]any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return out, fmt.Errorf("admin API answered %s", resp.Status)
	}
	return out, nil
}

// installedConfigPath is where `make install` puts the config; a variable for the tests.
var installedConfigPath = "/etc/shotd/shotd.toml"

// installedConfig returns the installed config file when there is one, so that `shotd admin` on
// an installed host finds admin_listen and data_dir/admin_token without flags; else "" (defaults).
func installedConfig() string {
	if _, err := os.Stat(installedConfigPath); err == nil {
		return installedConfigPath
	}
	return ""
}

// flagTrue reads a boolean flag's value, checked before the command runs ("" is false).
func flagTrue(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b
}
