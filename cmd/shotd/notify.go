package main

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/internal/sdnotify"
	shotdsvc "github.com/shotd/shotd/service"
)

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
