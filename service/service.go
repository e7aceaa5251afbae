package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/blocklist"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/cluster"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/media"
	"github.com/shotd/shotd/metrics"
	"github.com/shotd/shotd/s1render"
	"github.com/shotd/shotd/store"
	"github.com/shotd/shotd/webhook"
)

// Service is shotd running: everything Open started, until Close.
type Service struct {
	cfg        *config.Config
	log        zerolog.Logger
	firstStart *FirstStart

	metrics *metrics.Metrics
	renders *httpd.RenderLog
	// The render pipeline: the browser pool, metered, then store=true's upload (sync: a client
	// waits; jobs: nobody waits, so it retries longer).
	syncRender, jobRender shotd.Renderer

	store    *store.Store
	guard    *egress.Guard
	proxy    *egress.Proxy
	storage  *storage
	chrome   cdpclient.Config
	sys      *actor.ActorSystem
	renderer *actors.Renderer
	accounts *actors.Accounts
	webhooks *actors.Webhooks
	jobs     *actors.Jobs
	public   *httpd.Server
	admin    *httpd.Admin
	plans    *httpd.PlanBook
	cluster  *clustered // nil: a single node
	// plansBook is plans for the cluster's heartbeat goroutine, which starts before it is set.
	plansBook atomic.Pointer[httpd.PlanBook]

	publicLn, adminLn net.Listener
	errc              chan error

	reloadMu sync.Mutex     // Reload
	applied  *config.Config // the configuration in force after the last Reload; nil: cfg
	// diskReserve is the room /readyz wants free in data_dir beside one result of
	// limits.max_output_bytes (defaultDiskReserve); tests raise it to see the disk check fail.
	diskReserve atomic.Uint64
}

// defaultDiskReserve is Service.diskReserve: room for a few results and bbolt's growth.
const defaultDiskReserve = 64 << 20

// Open starts the service that cfg describes (cfg as config.Load returns it: valid) and serves
// the public and the admin API. Open fills cfg.AdminToken when it is empty, from data_dir (made
// at first start). On error it stops what it started.
func Open(ctx context.Context, cfg *config.Config, opts ...Option) (_ *Service, err error) {
	o := options{log: zerolog.Nop()}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Service{cfg: cfg, log: o.log, errc: make(chan error, 2)}
	s.diskReserve.Store(defaultDiskReserve)
	cfg.Limits.ApplyServiceMemory()
	defer func() {
		if err != nil {
			closeListeners(o.public, o.admin)
			s.Close(context.Background())
		}
	}()
	programs, err := Preflight(ctx, cfg, false)
	if err != nil {
		return nil, err
	}
	media.UseFFmpeg(programs.FFmpeg)
	s.log.Info().Str("browser", programs.Browser).Str("browser_version", programs.BrowserVersion).
		Str("ffmpeg", programs.FFmpeg).Str("ffmpeg_version", programs.FFmpegVersion).Msg("programs found")
	chromeDir, err := s.openStore(ctx, o.version)
	if err != nil {
		return nil, err
	}
	s.registerMetrics(o.version)
	if err := s.openEgress(o.resolver); err != nil {
		return nil, err
	}
	// Listening now, before anything renders (a queued job may start with the actors), lets
	// the guard refuse the service's own ports from the first page on.
	pub, adm, err := s.listen(o.public, o.admin)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			closeListeners(pub, adm)
		}
	}()
	s.denyOwnPorts(pub, adm)
	if s.cluster != nil {
		// The node's NATS listeners too: routes between nodes on loopback or a private network
		// run without TLS, and network.allow_private may cover their addresses.
		s.denyPorts(s.cluster.node.Listeners()...)
	}
	if s.storage, err = openStorage(ctx, cfg, s.store, s.guard, s.log); err != nil {
		return nil, err
	}
	if s.cluster != nil {
		s.cluster.startSweeper(s.storage.bucket, s.log)
	}
	if err := s.startBrowsers(ctx, programs.Browser, chromeDir, o.chromeFlags); err != nil {
		return nil, err
	}
	if err := s.startActors(o.retryDelays); err != nil {
		return nil, err
	}
	s.newServers(programs)
	s.publicLn, s.adminLn = pub, adm
	go func() { s.errc <- s.public.Serve(s.publicLn) }()
	go func() { s.errc <- s.admin.Serve(s.adminLn) }()
	s.log.Info().Str("listen", s.publicLn.Addr().String()).Str("admin_listen", s.adminLn.Addr().String()).
		Str("data_dir", cfg.DataDir).Int("pool_size", cfg.Browser.PoolSize).Msg("shotd serving")
	return s, nil
}

// openStore opens the store, bootstraps it on first start and prepares the Chrome profiles'
// directory, which it returns.
func (s *Service) openStore(ctx context.Context, version string) (string, error) {
	var err error
	if s.store, err = store.Open(s.cfg.DataDir, s.log); err != nil {
		return "", err
	}
	var book accountBook = s.store
	if s.cfg.Cluster.Enabled() {
		// The plans as the APIs hold them (a reload replaces them), or as configured before.
		plans := func() map[string]shotd.Plan {
			if b := s.plansBook.Load(); b != nil {
				return b.All()
			}
			return s.cfg.Plans
		}
		if s.cluster, err = startCluster(ctx, s.cfg, s.store, version, plans, s.log); err != nil {
			return "", err
		}
		book = s.cluster.book
	}
	if s.firstStart, err = bootstrap(book, s.cfg); err != nil {
		return "", err
	}
	return sweepChrome(s.cfg.DataDir, s.log)
}

// registerMetrics makes the registry that /metrics serves.
func (s *Service) registerMetrics(version string) {
	// Read only by /metrics, which is served once the renderer is set.
	s.metrics = metrics.New(func() float64 { return float64(s.renderer.Up()) })
	if version == "" {
		version = "dev"
	}
	s.metrics.BuildInfo(version)
	s.store.ObserveCache(s.metrics.CacheLookup)
}

// openEgress makes the egress guard and starts its proxy. Every connection a page or a webhook
// makes goes through the guard: Chrome through the in-process proxy, webhooks through the
// guarded dialer. The host's own addresses are refused too: on a machine with a public address,
// that address reaches the services listening on it as loopback would.
func (s *Service) openEgress(r egress.Resolver) error {
	policy := egress.NewPolicy(s.cfg.Network.AllowPrivatePrefixes()).WithHostAddrs(egress.InterfaceAddrs(hostAddrsRefresh))
	s.guard = egress.NewGuard(policy, r)
	s.guard.ObserveRefusals(s.metrics.EgressRefused)
	proxy := egress.NewProxy(s.guard, s.log.With().Str("component", "egress").Logger())
	if err := proxy.Start("127.0.0.1:0"); err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	s.proxy = proxy
	return nil
}

// chromeUser is the user browser.user names for Chrome, nil for the service's own. "auto" as root
// is cdpclient.DefaultUser, made when absent, so that Chrome's sandbox works and an exploit gains
// that user alone; when it cannot be made, Chrome runs as root without its sandbox, with a
// warning.
func chromeUser(setting string, log zerolog.Logger) (*cdpclient.User, error) {
	root := os.Geteuid() == 0
	switch {
	case setting == "self", setting == "auto" && !root:
		return nil, nil
	case setting == "auto":
		u, err := cdpclient.LookupUser(cdpclient.DefaultUser, true)
		if err != nil {
			log.Warn().Err(err).Msg("cannot run Chrome as a user of its own: it runs as root, without its sandbox (see README, Browsers)")
			return nil, nil
		}
		log.Info().Str("user", u.Name).Uint32("uid", u.UID).Msg("Chrome runs as a user of its own")
		return u, nil
	case !root:
		return nil, fmt.Errorf("browser.user = %q: only a service run as root can run Chrome as another user", setting)
	}
	u, err := cdpclient.LookupUser(setting, false)
	if err != nil {
		return nil, fmt.Errorf("browser.user: %w", err)
	}
	return u, nil
}

// denyOwnPorts has the guard refuse the service's own listeners and its proxy to every page,
// webhook and storage_endpoint, whatever network.allow_private says: with 127.0.0.1 allowed, a
// page could otherwise read /metrics and the dashboard, lock the admin out with bad tokens, or
// hop through the proxy.
func (s *Service) denyOwnPorts(lns ...net.Listener) {
	for _, ln := range lns {
		s.denyPorts(ln.Addr())
	}
	if ap, err := netip.ParseAddrPort(s.proxy.Addr()); err == nil {
		s.guard.DenyPort(ap)
	}
}

// denyPorts has the guard refuse the TCP addresses addrs (denyOwnPorts).
func (s *Service) denyPorts(addrs ...net.Addr) {
	for _, a := range addrs {
		if a, ok := a.(*net.TCPAddr); ok {
			s.guard.DenyPort(a.AddrPort())
		}
	}
}

// startBrowsers loads the block lists and the consent script, sets the memory bound and starts
// the browser pool.
func (s *Service) startBrowsers(ctx context.Context, browser, chromeDir string, extraFlags []string) error {
	cfg, log := s.cfg, s.log
	lists, err := blocklist.NewLibrary(cfg.Blocking.EasyList, cfg.Blocking.EasyPrivacy)
	if err != nil {
		return fmt.Errorf("blocking.easylist / blocking.easyprivacy: %w (scripts/install-deps.sh installs webext-ublock-origin-chromium)", err)
	}
	log.Info().Int("easylist_rules", lists.Ads.Stats().Loaded()).Int("easyprivacy_rules", lists.Trackers.Stats().Loaded()).Msg("filter lists loaded")
	loadConsent(lists, cfg.Blocking.Autoconsent, log)
	memoryMB, cgroups := memoryBound(ctx, cfg, log)
	user, err := chromeUser(cfg.Browser.User, log)
	if err != nil {
		return err
	}
	s.chrome = cdpclient.Config{Path: browser, StartTimeout: cfg.Browser.StartTimeout(), Prewarm: cfg.Browser.Prewarm,
		Isolation: cfg.Browser.Isolation, Sandbox: cfg.Browser.Sandbox, Renders: cfg.Browser.RendersPerProcess, TabReuse: cfg.Browser.TabReuse,
		JSHeapMB: cfg.Browser.HeapMB(proc.MemTotal()), RendererLimit: cfg.Browser.RendererLimit(),
		MemoryLimitMB: memoryMB, Cgroups: cgroups, User: user, Nice: cfg.Browser.Nice,
		Log:        log.With().Str("component", "chrome").Logger(),
		ExtraFlags: append(cdpclient.ProxyFlags(s.proxy.Addr()), extraFlags...), Guard: s.guard,
		Dir: chromeDir, MaxOutputBytes: int64(cfg.Limits.MaxOutputBytes),
		Blocker: func(o *shotd.Options) cdpclient.Blocker {
			if s := lists.Select(o.BlockAds, o.BlockTrackers, o.BlockCookieBanners, o.BlockChats); s != nil {
				return s
			}
			return nil // never a typed nil inside the interface
		}}
	s.sys = actors.NewSystem(log)
	ccfg := s.chrome
	s.renderer, err = actors.StartRenderer(s.sys, actors.PoolConfig{
		Size: cfg.Browser.PoolSize, SlotsPerBrowser: cfg.Browser.RendersPerProcess, RecycleAfter: cfg.Browser.RecycleAfter,
		SlotWait: cfg.Browser.SlotWait(), Log: log.With().Str("component", "renderer").Logger(), ChromeReplaced: s.metrics.ChromeReplaced,
		SlotWaited: s.metrics.SlotWaited,
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
	metered := s1render.Wrap(s.metrics.Meter(s.renderer))
	s.syncRender, s.jobRender = s.storage.sync.Wrap(metered), s.storage.jobs.Wrap(metered)
	s.metrics.WatchBrowsers(s.renderer)
	return nil
}

// startActors starts the account, webhook and job actors; retryDelays, when set, replaces
// webhooks.retry_delays_seconds.
func (s *Service) startActors(retryDelays []time.Duration) error {
	cfg, log := s.cfg, s.log
	var err error
	var usage actors.UsageStore = s.store
	var tally actors.Tally // nil on a single node (not a nil *cluster.Rates)
	if s.cluster != nil {
		usage = cluster.UsageStore{Book: s.cluster.book}
		tally = s.cluster.rates
	}
	if s.accounts, err = actors.StartAccounts(s.sys, actors.AccountsConfig{Store: usage, Tally: tally,
		Log: log.With().Str("component", "accounts").Logger()}); err != nil {
		return err
	}
	if retryDelays == nil {
		retryDelays = cfg.Webhooks.RetryDelays()
	}
	sender := &webhook.Sender{Client: webhook.NewClient(s.guard.DialContext, cfg.Webhooks.Timeout()), Keys: s.store, PublicURL: cfg.PublicURL}
	if s.webhooks, err = actors.StartWebhooks(s.sys, actors.WebhooksConfig{Store: s.store, RetryDelays: retryDelays, Sender: sender,
		Log: log.With().Str("component", "webhooks").Logger(), Attempted: s.metrics.WebhookAttempted}); err != nil {
		return err
	}
	s.renders = httpd.NewRenderLog(500) // the dashboard's recent renders
	s.loadRenders()
	if s.jobs, err = actors.StartJobs(s.sys, actors.JobsConfig{Store: s.store, Accounts: s.accounts,
		Render: s.jobRender, Uploader: s.storage.jobs, Webhooks: s.webhooks, Secrets: s.storage.sealer,
		Plans: cfg.Plans, FileTTL: cfg.Storage.FileTTL(), MaxOutputBytes: cfg.Limits.MaxOutputBytes,
		RenderGrace: cfg.Browser.RenderDeadlineGrace(), Ended: s.renders.AddJob, QueueWaited: s.metrics.JobQueueWaited, Log: log.With().Str("component", "jobs").Logger()}); err != nil {
		return err
	}
	if s.cluster != nil {
		// The node's job actor stays idle: /metrics counts the jobs this node holds of the cluster's.
		if err := s.cluster.startJobs(s, retryDelays, log); err != nil {
			return err
		}
		s.metrics.WatchJobs(s.cluster.jobs)
		return nil
	}
	s.metrics.WatchJobs(s.jobs)
	return nil
}

// newServers makes the public and the admin API; /readyz reports the browser's version and
// checks the programs found at start.
func (s *Service) newServers(programs Programs) {
	cfg, log := s.cfg, s.log
	browserVersion := programs.BrowserVersion
	gauge := s.Pressure()
	var (
		keys  httpd.KeyLookup  = s.store.KeyCache()
		gate  httpd.Gate       = s.accounts
		admin httpd.AdminStore = s.store
		files httpd.Files      = s.store
		ready                  = s.renderer.Ready
		jobs  httpd.JobQueue   = s.jobs
		// records httpd.JobRecords
		records httpd.JobRecords = s.store
		// hooks send their webhook of a sync render on ScreenshotOne's paths.
		hooks httpd.SyncWebhooks = syncWebhooks{store: s.store, secrets: s.storage.sealer, webhooks: s.webhooks}
	)
	if s.cluster != nil {
		keys, gate, admin = s.cluster.book, s.cluster.wrap(s.accounts, log), clusterAdminStore{Book: s.cluster.book, local: s.store, jobs: s.cluster.jobs, files: s.cluster.files}
		files = s.cluster.files
		ready = s.cluster.ready(s.renderer.Ready)
		jobs, records = s.cluster.jobs, s.cluster.jobs
		hooks = clusterSyncWebhooks{jobs: s.cluster.jobs}
	}
	s.public = httpd.New(httpd.Settings{PublicURL: cfg.PublicURL, MaxSourceBytes: cfg.Limits.MaxSourceBytes,
		MaxOutputBytes: cfg.Limits.MaxOutputBytes, FileTTL: cfg.Storage.FileTTL(), RenderGrace: cfg.Browser.RenderDeadlineGrace(),
		BulkMaxItems: cfg.Limits.BulkMaxItems, BrowserVersion: browserVersion, RefusedPerAddressPerMinute: cfg.Limits.RefusedPerAddressPerMinute,
		RefusedPerKeyPerMinute: cfg.Limits.RefusedPerKeyPerMinute, MaxConnsPerAddress: cfg.Limits.MaxConnsPerAddress},
		httpd.Deps{Keys: keys, Plans: cfg.Plans, Renderer: s.syncRender, Uploader: s.storage.sync, Ready: ready,
			Gate: gate, Files: files, Jobs: jobs, Records: records, URLs: httpd.GuardURLs{Guard: s.guard}, SyncWebhooks: hooks,
			Metrics: s.metrics, Renders: s.renders, ReadyChecks: s.readyChecks(programs), Pressure: gauge.Read, Log: log})
	s.plans = s.public.Plans()
	s.plansBook.Store(s.plans)
	s.admin = httpd.NewAdmin(cfg.AdminToken, cfg.PublicURL, admin, cfg.Plans, httpd.BookUsage{Gate: gate, Book: s.plans}, s.metrics.Registry(),
		log.With().Str("component", "admin").Logger())
	if h, _, err := net.SplitHostPort(cfg.AdminListen); err == nil {
		s.admin.AllowHost(h) // the name admin_listen gives, if any; its address is allowed in Serve
	}
	s.admin.UsePlans(s.plans)
	s.admin.UseRenderLog(s.renders)
	s.admin.UsePressure(gauge.Read)
	s.admin.SetMetricsToken(cfg.MetricsNeedToken())
}

// listen returns the given listeners, or listens on listen and admin_listen.
func (s *Service) listen(public, admin net.Listener) (net.Listener, net.Listener, error) {
	if public != nil && admin != nil {
		return public, admin, nil
	}
	pub, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	adm, err := net.Listen("tcp", s.cfg.AdminListen)
	if err != nil {
		pub.Close()
		return nil, nil, fmt.Errorf("admin_listen: %w", err)
	}
	return pub, adm, nil
}

func closeListeners(lns ...net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// sweepChrome prepares data_dir/chrome, where the Chrome profiles live: what a killed run left
// there is removed, after the Chrome processes it may have left running (a browser.path wrapper
// that does not exec Chrome keeps Chrome from dying with the service).
func sweepChrome(dataDir string, log zerolog.Logger) (string, error) {
	dir := filepath.Join(dataDir, "chrome")
	if n := cdpclient.KillOrphans(dir); n > 0 {
		log.Warn().Int("process_groups", n).Str("dir", dir).Msg("killed Chrome processes that a previous run left running")
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("data_dir: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data_dir: %w", err)
	}
	return dir, nil
}

// Close stops the service: it stops accepting and lets in-flight renders and jobs finish up to
// shutdown_timeout_seconds or ctx's end, whichever comes first (jobs still running then stay
// queued for the next start); then it flushes webhooks and usage, stops every Chrome and closes
// the store, each on a deadline of its own that ctx does not cut short: skipped, they would lose
// writes or leave processes behind. StopBudget bounds the whole.
func (s *Service) Close(ctx context.Context) error {
	var errs []error
	log := s.log
	if s.publicLn != nil {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout())
		if err := s.public.Shutdown(sctx); err != nil {
			log.Warn().Err(err).Msg("public listener shutdown")
		}
		if err := s.admin.Shutdown(sctx); err != nil {
			log.Warn().Err(err).Msg("admin listener shutdown")
		}
		if err := s.jobs.Close(sctx); err != nil {
			log.Warn().Err(err).Msg("jobs still running at the deadline stay queued for the next start")
		}
		s.cluster.closeJobs(sctx, log)
		cancel()
	} else if s.jobs != nil {
		sctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout())
		if err := s.jobs.Close(sctx); err != nil {
			log.Warn().Err(err).Msg("jobs still running at the deadline stay queued for the next start")
		}
		cancel()
	}
	// What is left to flush gets a deadline of its own: a render cut at the shutdown deadline
	// has used that one up, and the account actors must still write the usage they billed.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer fcancel()
	if s.webhooks != nil {
		if err := s.webhooks.Close(fctx); err != nil {
			log.Warn().Err(err).Msg("webhook attempts cut off resume at the next start")
		}
	}
	if s.accounts != nil {
		if err := s.accounts.Close(fctx); err != nil {
			log.Warn().Err(err).Msg("account actors did not stop in time; a usage write may be lost")
		}
	}
	s.cluster.close(fctx, log) // after the account actors: nothing settles through it any more
	if s.renderer != nil {
		if err := closeWithin(ctx, browserCloseTimeout, s.renderer.Close); err != nil {
			log.Error().Err(err).Msg("stop browsers")
			errs = append(errs, err)
		}
	}
	s.saveRenders()
	if s.sys != nil {
		s.sys.Shutdown()
	}
	if s.storage != nil {
		s.storage.close()
	}
	if s.proxy != nil {
		_ = closeWithin(ctx, proxyCloseTimeout, s.proxy.Close)
	}
	if s.store != nil {
		if err := closeWithin(ctx, storeCloseTimeout, s.store.Close); err != nil {
			log.Error().Err(err).Msg("close store")
			errs = append(errs, err)
		}
	}
	log.Info().Msg("stopped")
	return errors.Join(errs...)
}

// closeWithin calls close on a deadline of its own, d from now, that ctx's end does not cut
// short: a part skipped at shutdown would lose writes or leave processes behind.
func closeWithin(ctx context.Context, d time.Duration, close func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	return close(cctx)
}

// Err delivers the error of a listener that stopped serving before Close; Close does not
// return it.
func (s *Service) Err() <-chan error { return s.errc }

// PublicAddr is where the public API listens.
func (s *Service) PublicAddr() net.Addr { return s.publicLn.Addr() }

// AdminAddr is where the admin API, the dashboard and /metrics listen.
func (s *Service) AdminAddr() net.Addr { return s.adminLn.Addr() }

// Ready reports whether a browser can render: what /readyz reports.
func (s *Service) Ready() bool { return s.renderer.Ready() }

// WaitReady returns once a browser can render, or with ctx's error.
func (s *Service) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !s.renderer.Ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("browser pool not ready: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// FirstStart is the key Open made in an empty store, nil when the store had accounts.
func (s *Service) FirstStart() *FirstStart { return s.firstStart }

// Store is the service's store.
func (s *Service) Store() *store.Store { return s.store }

// Renderer is the browser pool.
func (s *Service) Renderer() *actors.Renderer { return s.renderer }

// Accounts are the account actors, which admit and settle every render.
func (s *Service) Accounts() *actors.Accounts { return s.accounts }

// Webhooks is the webhook delivery actor.
func (s *Service) Webhooks() *actors.Webhooks { return s.webhooks }

// Guard is the egress guard every outbound connection goes through.
func (s *Service) Guard() *egress.Guard { return s.guard }

// ChromeConfig is how the pool launches each Chrome, for the bench's floor, which must run
// Chrome the same way.
func (s *Service) ChromeConfig() cdpclient.Config { return s.chrome }

// hostAddrsRefresh is how often the guard reads the host's interface addresses again.
const hostAddrsRefresh = 30 * time.Second

// flushTimeout bounds what the shutdown does after the running jobs: the webhook attempts under
// way (cut ones resume at the next start) and the account actors' last usage writes.
const flushTimeout = 10 * time.Second

// browserCloseTimeout bounds stopping every Chrome; proxyCloseTimeout the egress proxy's
// connections; storeCloseTimeout closing bbolt.
const (
	browserCloseTimeout = 30 * time.Second
	proxyCloseTimeout   = 5 * time.Second
	storeCloseTimeout   = 10 * time.Second
)

// StopBudget is the longest Close can take, plus a margin that also covers the egress proxy: the
// systemd unit's TimeoutStopSec is this for the default configuration (a test keeps them equal), so
// that systemd never kills a stop that is still writing.
func StopBudget(cfg *config.Config) time.Duration {
	return cfg.ShutdownTimeout() + flushTimeout + browserCloseTimeout + storeCloseTimeout + 10*time.Second
}
