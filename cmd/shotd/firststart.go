package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/sdnotify"
	shotdsvc "github.com/shotd/shotd/service"
)

// printFirstStart tells the operator about the key made at first start. Its secret goes to out
// only when out is a terminal; never to a pipe or the journal, where it would be kept in the log.
func printFirstStart(out io.Writer, cfg *config.Config, fs *shotdsvc.FirstStart) {
	if isTerminal(out) {
		fmt.Fprintf(out, `
First start: created account "default" (plan default) with one key. Keep the secret key; it is not shown again.
  access key: %s
  secret key: %s
  (also in %s, readable by this user only; delete it once stored)
  admin token: stored in %s
`, fs.AccessKey, fs.SecretKey, fs.CredentialsPath, fs.AdminTokenPath)
		if fs.RequireSignature {
			fmt.Fprintf(out, `The key requires signed requests, as public_url (%s) is not a loopback address: see
"Signed requests" in the README, and give signed links an expires.

`, cfg.PublicURL)
		} else {
			fmt.Fprintf(out, `Try: curl -o shot.png "%s/api/v1/screenshot?access_key=%s&url=https://example.com"

`, cfg.PublicURL, fs.AccessKey)
		}
		return
	}
	fmt.Fprintf(out, "First start: created account \"default\" with one key; its access and secret keys are in %s\n", fs.CredentialsPath)
	if fs.RequireSignature {
		fmt.Fprintf(out, "The key requires signed requests, as public_url (%s) is not a loopback address.\n", cfg.PublicURL)
	}
}

// notifyReady tells systemd (Type=notify) that serve is ready once a browser can render, what
// /readyz reports, so that units ordered after shotd start when it can answer.
func notifyReady(ctx context.Context, n sdnotify.Notifier, svc *shotdsvc.Service, log zerolog.Logger) {
	if !n.Enabled() || svc.WaitReady(ctx) != nil {
		return
	}
	if err := n.Notify(sdnotify.Ready, sdnotify.Status("serving")); err != nil {
		log.Warn().Err(err).Msg("tell systemd")
	}
}

// newLogger returns serve's logger. Its level is zerolog's global one, so that SIGHUP can change
// log.level for every logger derived from it.
func newLogger(w io.Writer, lc config.Log) zerolog.Logger {
	zerolog.SetGlobalLevel(lc.ZerologLevel())
	if lc.Format == config.LogJSON || (lc.Format == config.LogAuto && !isTerminal(w)) {
		return zerolog.New(w).With().Timestamp().Logger()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
}

// isTerminal reports whether w is a terminal: log.format auto writes console lines there only.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && isatty.IsTerminal(f.Fd())
}
