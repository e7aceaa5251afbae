package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/sdnotify"
	shotdsvc "github.com/shotd/shotd/service"
)

// serve runs the service until ctx ends (SIGINT, SIGTERM) or a listener fails; SIGHUP reloads
// the plans and log.level. It tells systemd when the service is ready, reloading and stopping.
func (m *Main) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	cfgPath := fs.String("config", "", "TOML configuration file (default: embedded defaults)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// "shotd serve /etc/shotd/shotd.toml" would otherwise run on the embedded defaults.
		return fmt.Errorf("serve takes no argument, got %q (a configuration file is --config FILE)", fs.Args())
	}
	// Caught from the start: SIGHUP's default action would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := config.Load(*cfgPath, m.Env)
	if err != nil {
		return err
	}
	var logOut io.Writer = m.Stderr
	if journalStream(m.Stderr, m.Env) {
		logOut = &journalWriter{w: m.Stderr}
	}
	log := newLogger(logOut, cfg.Log)
	log.Info().Str("version", version()).Msg("shotd starting")
	for _, name := range config.UnknownEnv(m.Env) {
		log.Warn().Str("variable", name).Msg("unknown SHOTD_ variable ignored: it names no configuration key")
	}
	svc, err := shotdsvc.Open(ctx, cfg, shotdsvc.WithLogger(log), shotdsvc.WithVersion(version()))
	if err != nil {
		return err
	}
	if fs := svc.FirstStart(); fs != nil {
		printFirstStart(m.Stdout, cfg, fs)
	}
	notify := sdnotify.FromEnv(m.Env)
	rctx, rcancel := context.WithCancel(ctx)
	readyDone := make(chan struct{})
	go func() { defer close(readyDone); notifyReady(rctx, notify, svc, log) }()

	rl := &reloader{path: *cfgPath, env: m.Env, svc: svc, notify: notify}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err = <-svc.Err():
			log.Error().Err(err).Msg("listener failed")
			break wait
		case <-hup:
			if rerr := rl.reload(); rerr != nil {
				log.Error().Err(rerr).Msg("configuration not reloaded; the running one stays")
			}
		}
	}
	rcancel()
	<-readyDone
	log.Info().Msg("shutting down")
	if nerr := notify.Notify(sdnotify.Stopping); nerr != nil {
		log.Warn().Err(nerr).Msg("tell systemd")
	}
	// Not ctx, which has ended: a stop still lets in-flight renders finish.
	if cerr := svc.Close(context.Background()); err == nil {
		err = cerr
	}
	return err
}
