package httpd_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/store"
)

// env is one real service for the package: a Chrome pool, a bbolt store and the public API on
// loopback. Each test uses fresh accounts and keys.
var env struct {
	base     string
	admin    string
	adminTok string
	st       *store.Store
	renderer *actors.Renderer
	accounts *actors.Accounts
	webhooks *actors.Webhooks
	guard    *egress.Guard
	proxy    *egress.Proxy
	pages    *httptest.Server
	plans    map[string]shotd.Plan
}

const adminToken = "test-admin-token"

// testPlans are added to the configured plans; test files register theirs in init.
var testPlans = map[string]shotd.Plan{}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpd tests:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	log := zerolog.New(zerolog.NewTestWriter(nil)).Level(zerolog.Disabled)
	if os.Getenv("SHOTD_TEST_LOG") != "" {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.DebugLevel)
	}
	dir, err := os.MkdirTemp("", "shotd-httpd-test-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(dir, log)
	if err != nil {
		return 1, err
	}
	defer st.Close(context.Background())
	env.st = st

	cfg := config.Default()
	env.plans = map[string]shotd.Plan{}
	for k, v := range cfg.Plans {
		env.plans[k] = v
	}
	env.plans["basic"] = shotd.Plan{Name: "basic", MonthlyQuota: 10, RequestsPerMinute: 60, StatusRequestsPerMinute: 600,
		Concurrency: 2, QueueLimit: 10, FailuresPerMinute: 30, Features: []string{}}
	for name, p := range testPlans {
		p.Name = name
		env.plans[name] = p
	}

	// The egress guard as in production, with only 127.0.0.1 allow-listed for the fixture pages:
	// 127.0.0.3 stands for every address that must never be reached.
	env.guard = egress.NewGuard(egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}),
		egress.ResolverFunc(resolveTestName))
	env.proxy = egress.NewProxy(env.guard, log)
	if err := env.proxy.Start("127.0.0.1:0"); err != nil {
		return 1, err
	}
	defer env.proxy.Close(context.Background())

	path, err := cdpclient.FindBrowser(testenv.Browser())
	if err != nil {
		return 1, err
	}
	sys := actors.NewSystem(log)
	defer sys.Shutdown()
	r, err := actors.StartRenderer(sys, actors.PoolConfig{Size: 1, SlotsPerBrowser: 4, SlotWait: 2 * time.Second, Log: log,
		Launch: func(ctx context.Context) (actors.Browser, error) {
			p, err := cdpclient.Launch(ctx, cdpclient.Config{Path: path, Isolation: testenv.Isolation(), Prewarm: 2, Log: log,
				ExtraFlags: cdpclient.ProxyFlags(env.proxy.Addr()), Guard: env.guard})
			if err != nil {
				return nil, err
			}
			return p, nil
		}})
	if err != nil {
		return 1, err
	}
	env.renderer = r
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.Close(ctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !r.Ready() {
		if time.Now().After(deadline) {
			return 1, fmt.Errorf("browser pool not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}

	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		return 1, err
	}
	env.accounts = accounts
	env.webhooks, err = actors.StartWebhooks(sys, actors.WebhooksConfig{Store: st, Body: httpd.WebhookBodies("http://shotd.test"), Log: log,
		RetryDelays: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond},
		Client:      &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: env.guard.DialContext}}})
	if err != nil {
		return 1, err
	}
	defer env.webhooks.Close(context.Background())
	reg := prometheus.NewRegistry()
	jobs, err := actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: r.Render, Webhooks: env.webhooks,
		Plans: env.plans, FileTTL: time.Hour, MaxOutputBytes: 4 << 20, Log: log})
	if err != nil {
		return 1, err
	}
	defer jobs.Close(context.Background())
	srv := httpd.New(httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, MaxOutputBytes: 4 << 20,
		FileTTL: time.Hour, BulkMaxItems: 5},
		httpd.Deps{Keys: st.KeyCache(), Plans: env.plans, Renderer: r, Gate: accounts, Files: st, Jobs: jobs, Records: st,
			URLs: httpd.GuardURLs{Guard: env.guard}, Metrics: httpd.NewMetrics(reg, func() float64 { return float64(r.Up()) }), Log: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1, err
	}
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(ctx) // idle keep-alive connections must not hold the exit
	}()
	env.base = "http://" + ln.Addr().String()

	adm := httpd.NewAdmin(adminToken, "http://shotd.test", st, env.plans, httpd.GateUsage{Gate: accounts, Plans: env.plans}, reg, log)
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1, err
	}
	go adm.Serve(aln)
	defer adm.Shutdown(context.Background())
	env.admin = "http://" + aln.Addr().String()

	env.pages = httptest.NewServer(http.HandlerFunc(pages))
	defer env.pages.Close()
	return m.Run(), nil
}

// testNames are the only names the service resolves in these tests: it never asks real DNS, so
// nothing leaves loopback. Every other name does not exist.
var testNames = map[string][]netip.Addr{
	"pages.shotd.test":   {netip.MustParseAddr("127.0.0.1")}, // allowed: where the fixture pages live
	"private.shotd.test": {netip.MustParseAddr("127.0.0.3")}, // refused, like every private address
}

// nowhere is a name that does not resolve.
const nowhere = "nowhere.shotd.test"

// lookups counts the lookups of each name the tests resolved.
var lookups sync.Map // name -> *atomic.Int32

func lookupsOf(name string) int32 {
	if n, ok := lookups.Load(name); ok {
		return n.(*atomic.Int32).Load()
	}
	return 0
}

func resolveTestName(_ context.Context, _, host string) ([]netip.Addr, error) {
	n, _ := lookups.LoadOrStore(strings.TrimSuffix(host, "."), new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	if as, ok := testNames[strings.TrimSuffix(host, ".")]; ok {
		return as, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// pages serves the fixture pages, all on loopback.
func pages(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/slow":
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "<html><body>slow</body></html>")
	case "/ua":
		fmt.Fprintf(w, "<html><body>%s</body></html>", r.UserAgent())
	default:
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>fixture</title></head><body style="background:#3366cc"><h1>Hello</h1></body></html>`)
	}
}
