package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	shotdsvc "github.com/shotd/shotd/service"
)

const configUsage = `usage: shotd config <command>

commands:
  print [--config FILE] [--show-secrets]
        print the configuration serve would run with: the embedded defaults, then FILE, then the
        SHOTD_* environment, as TOML that serve reads back; admin_token and the S3 secret are
        hidden unless asked
  check FILE
        check FILE as serve would (unknown keys, bad values) and what it points at: the browser,
        ffmpeg and the filter lists; exit 0 when serve would start with it
`

func (m *Main) config(ctx context.Context, args []string) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(m.Stdout, configUsage)
		if len(args) == 0 {
			return errors.New("config: missing command")
		}
		return nil
	}
	fs := flag.NewFlagSet("config "+args[0], flag.ContinueOnError)
	fs.SetOutput(m.Stdout)
	fs.Usage = func() { fmt.Fprint(m.Stdout, configUsage) }
	switch args[0] {
	case "print":
		path := fs.String("config", "", "TOML configuration file (default: embedded defaults)")
		secrets := fs.Bool("show-secrets", false, "print admin_token and storage.s3.secret_access_key as they are")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		cfg, err := config.Load(*path, m.Env)
		if err != nil {
			return err
		}
		hideSecrets(cfg, *secrets)
		out, err := cfg.TOML()
		if err != nil {
			return err
		}
		_, err = m.Stdout.Write(out)
		return err
	case "check":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			fmt.Fprint(m.Stderr, configUsage)
			return errors.New("config check: needs one FILE")
		}
		cfg, err := config.Load(fs.Arg(0), m.Env)
		if err != nil {
			return err
		}
		pf, err := shotdsvc.Preflight(ctx, cfg, true)
		if err != nil {
			return fmt.Errorf("config %s: %w", fs.Arg(0), err)
		}
		fmt.Fprintf(m.Stdout, "%s: ok (browser %s, %s)\n", fs.Arg(0), pf.Browser, pf.FFmpegVersion)
		return nil
	}
	fmt.Fprint(m.Stderr, configUsage)
	return fmt.Errorf("config: unknown command %q", args[0])
}

// hidden stands in for a secret that config print does not print.
const hidden = "(hidden: --show-secrets prints it)"

// hideSecrets replaces the secrets of cfg, unless show: the output of config print ends up in
// terminals, tickets and logs. A secret read from secret_access_key_file is never printed: the
// file stays the reference, which serve reads again.
func hideSecrets(cfg *config.Config, show bool) {
	s3 := &cfg.Storage.S3
	if s3.SecretAccessKeyFile != "" {
		s3.SecretAccessKey = ""
	}
	if show {
		return
	}
	if cfg.AdminToken != "" {
		cfg.AdminToken = hidden
	}
	if s3.SecretAccessKey != "" {
		s3.SecretAccessKey = hidden
	}
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// openapi prints the document that /openapi.json serves, with the configured public_url as its
// server, for generators run where the service is not.
func (m *Main) openapi(args []string) error {
	fs := flag.NewFlagSet("openapi", flag.ContinueOnError)
	fs.SetOutput(m.Stdout)
	path := fs.String("config", "", "TOML configuration file (its public_url is the server)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path, m.Env)
	if err != nil {
		return err
	}
	_, err = m.Stdout.Write(append(httpd.OpenAPI(cfg.PublicURL), '\n'))
	return err
}
