package service

import (
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd/egress"
)

// Option changes what Open does beyond the configuration: what tests and the bench must vary
// and a config file cannot say.
type Option func(*options)

type options struct {
	log           zerolog.Logger
	public, admin net.Listener
	resolver      egress.Resolver
	retryDelays   []time.Duration
	chromeFlags   []string
	version       string
}

// WithVersion names the running build in shotd_build_info and in cluster status; without it
// "dev".
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithLogger logs through log; without it the service logs nothing.
func WithLogger(log zerolog.Logger) Option { return func(o *options) { o.log = log } }

// WithListeners serves the public and the admin API on these listeners instead of listen and
// admin_listen. The service closes them.
func WithListeners(public, admin net.Listener) Option {
	return func(o *options) { o.public, o.admin = public, admin }
}

// WithResolver makes the egress guard resolve names with r instead of the system resolver, so
// that tests never ask real DNS.
func WithResolver(r egress.Resolver) Option { return func(o *options) { o.resolver = r } }

// WithWebhookRetryDelays replaces webhooks.retry_delays_seconds, for tests that cannot wait
// whole seconds between attempts.
func WithWebhookRetryDelays(d ...time.Duration) Option {
	return func(o *options) { o.retryDelays = d }
}

// WithChromeFlags adds flags to every Chrome of the pool, for experiments.
func WithChromeFlags(flags ...string) Option {
	return func(o *options) { o.chromeFlags = append(o.chromeFlags, flags...) }
}
