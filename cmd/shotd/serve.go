package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/blocklist"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/sdnotify"
	"github.com/shotd/shotd/media"
	"github.com/shotd/shotd/store"
)

func (m *Main) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	cfgPath := fs.String("config", "", "TOML configuration file (default: embedded defaults)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Caught from the start: SIGHUP's default action would end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := config.Load(*cfgPath, m.Env)
	if err != nil {
		return err
	}
	log := newLogger(m.Stderr, cfg.Log)
	log.Info().Str("version", version()).Msg("shotd starting")
	var pf preflight
	if err := pf.check(ctx, cfg, false); err != nil {
		return err
	}
	media.UseFFmpeg(pf.ffmpeg)
	log.Info().Str("browser", pf.browser).Str("browser_version", pf.browserVersion).Str("ffmpeg", pf.ffmpeg).
		Str("ffmpeg_version", pf.ffmpegVersion).Msg("programs found")

	st, err := store.Open(cfg.DataDir, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), storeCloseTimeout)
		defer cancel()
		if err := st.Close(cctx); err != nil {
			log.Error().Err(err).Msg("close store")
		}
	}()
	if err := bootstrap(st, cfg, m.Stdout); err != nil {
		return err
	}

	// Chrome profiles live under data_dir/chrome; what a killed run left there is removed now,
	// after the Chrome processes it may have left running (a browser.path wrapper that does not
	// exec Chrome keeps Chrome from dying with the service).
	chromeDir := filepath.Join(cfg.DataDir, "chrome")
	if n := cdpclient.KillOrphans(chromeDir); n > 0 {
		log.Warn().Int("process_groups", n).Str("dir", chromeDir).Msg("killed Chrome processes that a previous run left running")
	}
	if err := os.RemoveAll(chromeDir); err != nil {
		return fmt.Errorf("data_dir: clear %s: %w", chromeDir, err)
	}
	if err := os.MkdirAll(chromeDir, 0o700); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var renderer *actors.Renderer // set below; /metrics is served only once it is
	metrics := httpd.NewMetrics(reg, func() float64 { return float64(renderer.Up()) })
	st.ObserveCache(metrics.CacheLookup)

	sys := actors.NewSystem(log)
	defer sys.Shutdown()
	browserPath := pf.browser
	// Every connection a page or a webhook makes goes through the egress guard: Chrome through the
	// in-process proxy, webhooks through the guarded dialer.
	// The host's own addresses are refused too: on a machine with a public address, that address
	// reaches the services listening on it as loopback would.
	policy := egress.NewPolicy(cfg.Network.AllowPrivatePrefixes()).WithHostAddrs(egress.InterfaceAddrs(hostAddrsRefresh))
	guard := egress.NewGuard(policy, nil)
	guard.ObserveRefusals(metrics.EgressRefused)
	proxy := egress.NewProxy(guard, log.With().Str("component", "egress").Logger())
	if err := proxy.Start("127.0.0.1:0"); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		proxy.Close(cctx)
	}()
	stg, err := openStorage(cfg, st, guard, log)
	if err != nil {
		return err
	}
	defer stg.close()
	lists, err := blocklist.NewLibrary(cfg.Blocking.EasyList, cfg.Blocking.EasyPrivacy)
	if err != nil {
		return fmt.Errorf("blocking.easylist / blocking.easyprivacy: %w (scripts/install-deps.sh installs webext-ublock-origin-chromium)", err)
	}
	log.Info().Int("easylist_rules", lists.Ads.Stats().Loaded()).Int("easyprivacy_rules", lists.Trackers.Stats().Loaded()).Msg("filter lists loaded")
	loadConsent(lists, cfg.Blocking.Autoconsent, log)
	memoryMB, cgroups := memoryBound(ctx, cfg, log)
	ccfg := cdpclient.Config{Path: browserPath, StartTimeout: cfg.Browser.StartTimeout(), Prewarm: cfg.Browser.Prewarm,
		Isolation: cfg.Browser.Isolation, Sandbox: cfg.Browser.Sandbox, Renders: cfg.Browser.RendersPerProcess, TabReuse: cfg.Browser.TabReuse,
		JSHeapMB: cfg.Browser.HeapMB(proc.MemTotal()), RendererLimit: cfg.Browser.RendererLimit(),
		MemoryLimitMB: memoryMB, Cgroups: cgroups,
		Log: log.With().Str("component", "chrome").Logger(), ExtraFlags: cdpclient.ProxyFlags(proxy.Addr()), Guard: guard,
		Dir: chromeDir, MaxOutputBytes: int64(cfg.Limits.MaxOutputBytes),
		Blocker: func(o *shotd.Options) cdpclient.Blocker {
			if s := lists.Select(o.BlockAds, o.BlockTrackers, o.BlockCookieBanners, o.BlockChats); s != nil {
				return s
			}
			return nil // never a typed nil inside the interface
		}}
	renderer, err = actors.StartRenderer(sys, actors.PoolConfig{
		Size: cfg.Browser.PoolSize, SlotsPerBrowser: cfg.Browser.RendersPerProcess, RecycleAfter: cfg.Browser.RecycleAfter,
		SlotWait: cfg.Browser.SlotWait(), Log: log.With().Str("component", "renderer").Logger(), BrowserDown: metrics.BrowserDown,
		Launch: func(ctx context.Context) (actors.Browser, error) {
			p, err := cdpclient.Launch(ctx, ccfg)
			if err != nil {
				return nil, err // never a typed nil inside the interface
			}
			return p, nil
		},
	})
	if err != nil {
		return err
	}
	metered := httpd.MeteredRenderer{Renderer: renderer, Metrics: metrics}
	renders := httpd.NewRenderLog(500) // the dashboard's recent renders
	metrics.WatchBrowsers(renderer)

	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log.With().Str("component", "accounts").Logger()})
	if err != nil {
		return err
	}

	webhooks, err := actors.StartWebhooks(sys, actors.WebhooksConfig{Store: st, RetryDelays: cfg.Webhooks.RetryDelays(),
		Body: httpd.WebhookBodies(cfg.PublicURL), Log: log.With().Str("component", "webhooks").Logger(), Attempted: metrics.WebhookAttempted,
		Client: &http.Client{Timeout: cfg.Webhooks.Timeout(), CheckRedirect: actors.NoRedirects, Transport: &http.Transport{
			DialContext: guard.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}})
	if err != nil {
		return err
	}
	jobs, err := actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: actors.RenderFunc(stg.jobs.Wrap(metered.Render)),
		Webhooks: webhooks, Secrets: stg.sealer,
		Plans: cfg.Plans, FileTTL: cfg.Storage.FileTTL(), MaxOutputBytes: cfg.Limits.MaxOutputBytes,
		RenderGrace: cfg.Browser.RenderDeadlineGrace(), Ended: renders.AddJob, Log: log.With().Str("component", "jobs").Logger()})
	if err != nil {
		return err
	}
	metrics.WatchJobs(jobs)

	public := httpd.New(httpd.Settings{PublicURL: cfg.PublicURL, MaxSourceBytes: cfg.Limits.MaxSourceBytes,
		MaxOutputBytes: cfg.Limits.MaxOutputBytes, FileTTL: cfg.Storage.FileTTL(), RenderGrace: cfg.Browser.RenderDeadlineGrace(),
		BulkMaxItems: cfg.Limits.BulkMaxItems, BrowserVersion: pf.browserVersion, RefusedPerAddressPerMinute: cfg.Limits.RefusedPerAddressPerMinute,
		RefusedPerKeyPerMinute: cfg.Limits.RefusedPerKeyPerMinute, MaxConnsPerAddress: cfg.Limits.MaxConnsPerAddress},
		httpd.Deps{Keys: st.KeyCache(), Plans: cfg.Plans, Renderer: storingRenderer{renderer, stg.sync.Wrap(metered.Render)}, Gate: accounts, Files: st, Jobs: jobs, Records: st,
			URLs: httpd.GuardURLs{Guard: guard}, Metrics: metrics, Renders: renders, Log: log})
	plans := public.Plans()
	admin := httpd.NewAdmin(cfg.AdminToken, cfg.PublicURL, st, cfg.Plans, httpd.BookUsage{Gate: accounts, Book: plans}, reg,
		log.With().Str("component", "admin").Logger())
	admin.UsePlans(plans)
	admin.UseRenderLog(renders)
	admin.SetMetricsToken(cfg.MetricsNeedToken())

	pubLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	admLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		pubLn.Close()
		return fmt.Errorf("admin_listen: %w", err)
	}
	errc := make(chan error, 2)
	go func() { errc <- public.Serve(pubLn) }()
	go func() { errc <- admin.Serve(admLn) }()
	log.Info().Str("listen", pubLn.Addr().String()).Str("admin_listen", admLn.Addr().String()).
		Str("data_dir", cfg.DataDir).Int("pool_size", cfg.Browser.PoolSize).Msg("shotd serving")
	notify := sdnotify.FromEnv(m.Env)
	rctx, rcancel := context.WithCancel(ctx)
	readyDone := make(chan struct{})
	go func() { defer close(readyDone); notifyReady(rctx, notify, renderer.Ready, log) }()

	rl := &reloader{path: *cfgPath, env: m.Env, cur: cfg, plans: plans, store: st, notify: notify, log: log}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err = <-errc:
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

	// Stop accepting, let in-flight renders finish up to the deadline, then stop every Chrome.
	log.Info().Msg("shutting down")
	if nerr := notify.Notify(sdnotify.Stopping); nerr != nil {
		log.Warn().Err(nerr).Msg("tell systemd")
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout())
	defer cancel()
	if err := public.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("public listener shutdown")
	}
	if err := admin.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("admin listener shutdown")
	}
	if err := jobs.Close(sctx); err != nil {
		log.Warn().Err(err).Msg("jobs still running at the deadline stay queued for the next start")
	}
	// What is left to flush gets a deadline of its own: a render cut at the shutdown deadline
	// has used that one up, and the account actors must still write the usage they billed.
	fctx, fcancel := context.WithTimeout(context.Background(), flushTimeout)
	defer fcancel()
	if err := webhooks.Close(fctx); err != nil {
		log.Warn().Err(err).Msg("webhook attempts cut off resume at the next start")
	}
	if err := accounts.Close(fctx); err != nil {
		log.Warn().Err(err).Msg("account actors did not stop in time; a usage write may be lost")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), browserCloseTimeout)
	defer ccancel()
	if err := renderer.Close(cctx); err != nil {
		log.Error().Err(err).Msg("stop browsers")
	}
	log.Info().Msg("stopped")
	return err
}

// hostAddrsRefresh is how often the guard reads the host's interface addresses again.
const hostAddrsRefresh = 30 * time.Second

// flushTimeout bounds what the shutdown does after the running jobs: the webhook attempts under
// way (cut ones resume at the next start) and the account actors' last usage writes.
const flushTimeout = 10 * time.Second

// browserCloseTimeout bounds stopping every Chrome; storeCloseTimeout bounds closing bbolt.
const (
	browserCloseTimeout = 30 * time.Second
	storeCloseTimeout   = 10 * time.Second
)

// stopBudget is the longest a SIGTERM can take to end serve, plus a margin: the systemd unit's
// TimeoutStopSec is this for the default configuration (a test keeps them equal), so that
// systemd never kills a stop that is still writing.
func stopBudget(cfg *config.Config) time.Duration {
	return cfg.ShutdownTimeout() + flushTimeout + browserCloseTimeout + storeCloseTimeout + 10*time.Second
}

// notifyReady tells systemd (Type=notify) that serve is ready once a browser can render, what
// /readyz reports, so that units ordered after shotd start when it can answer.
func notifyReady(ctx context.Context, n sdnotify.Notifier, ready func() bool, log zerolog.Logger) {
	if !n.Enabled() {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if err := n.Notify(sdnotify.Ready, sdnotify.Status("serving")); err != nil {
		log.Warn().Err(err).Msg("tell systemd")
	}
}

// bootstrap prepares an empty data directory: the admin token and, on first start, the default
// account with one key. Its secret goes to data_dir/credentials (0600) and, when out is a
// terminal, to out; never to a pipe or the journal, where it would be kept in the log.
func bootstrap(st *store.Store, cfg *config.Config, out io.Writer) error {
	if cfg.AdminToken == "" {
		tok, err := adminToken(cfg.DataDir)
		if err != nil {
			return err
		}
		cfg.AdminToken = tok
	}
	n, err := st.CountAccounts()
	if err != nil || n > 0 {
		return err
	}
	acc, err := st.CreateAccountWithID("default", "", "default", true)
	if err != nil {
		return fmt.Errorf("create default account: %w", err)
	}
	// Reachable from elsewhere, a key that works unsigned works for whoever sees one link; on
	// loopback the newcomer's first curl matters more.
	requireSig := !loopbackURL(cfg.PublicURL)
	key, err := st.CreateKey(acc.ID, "default", requireSig)
	if err != nil {
		return fmt.Errorf("create default key: %w", err)
	}
	credPath := filepath.Join(cfg.DataDir, credentialsFile)
	creds := fmt.Sprintf(`# shotd created account "default" (plan default) with this key at its first start.
# Keep the secret key elsewhere and delete this file: it is not shown again.
  access key: %s
  secret key: %s
`, key.AccessKey, key.SecretKey)
	if err := os.WriteFile(credPath, []byte(creds), 0o600); err != nil {
		return fmt.Errorf("write first-start credentials: %w", err)
	}
	if isTerminal(out) {
		fmt.Fprintf(out, `
First start: created account "default" (plan default) with one key. Keep the secret key; it is not shown again.
  access key: %s
  secret key: %s
  (also in %s, readable by this user only; delete it once stored)
  admin token: stored in %s
`, key.AccessKey, key.SecretKey, credPath, filepath.Join(cfg.DataDir, "admin_token"))
		if requireSig {
			fmt.Fprintf(out, `The key requires signed requests, as public_url (%s) is not a loopback address: see
"Signed requests" in the README, and give signed links an expires.

`, cfg.PublicURL)
		} else {
			fmt.Fprintf(out, `Try: curl -o shot.png "%s/api/v1/screenshot?access_key=%s&url=https://example.com"

`, cfg.PublicURL, key.AccessKey)
		}
		return nil
	}
	fmt.Fprintf(out, "First start: created account \"default\" with one key; its access and secret keys are in %s\n", credPath)
	if requireSig {
		fmt.Fprintf(out, "The key requires signed requests, as public_url (%s) is not a loopback address.\n", cfg.PublicURL)
	}
	return nil
}

// credentialsFile, in data_dir, holds the key made at first start.
const credentialsFile = "credentials"

// loopbackURL reports whether the host of raw is a loopback address or localhost.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// adminToken reads the generated admin token from data_dir, creating it at first start.
func adminToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "admin_token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) && err != nil {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return tok, nil
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

// loadConsent gives block_cookie_banners autoconsent's script from path ("" disables it). A file
// that cannot be loaded is a warning, not a refusal: renders still hide the banners with the
// cookie-banner list, they only no longer reject them.
func loadConsent(lists *blocklist.Library, path string, log zerolog.Logger) {
	if path == "" {
		log.Info().Msg("blocking.autoconsent is empty: block_cookie_banners hides consent dialogs without answering them")
		return
	}
	js, err := blocklist.LoadAutoconsent(path)
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("blocking.autoconsent not loaded: block_cookie_banners hides consent dialogs without rejecting them (scripts/install-deps.sh installs autoconsent)")
		return
	}
	lists.Consent = js
	log.Info().Str("path", path).Int("bytes", len(js)).Msg("autoconsent loaded for block_cookie_banners")
}

// isTerminal reports whether w is a terminal: log.format auto writes console lines there only.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && isatty.IsTerminal(f.Fd())
}
