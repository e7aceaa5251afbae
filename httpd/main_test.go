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

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/service"
	"github.com/shotd/shotd/store"
)

// env is one real service for the package, opened as serve opens it: a Chrome pool, a bbolt
// store and the public and admin APIs on loopback. Each test uses fresh accounts and keys.
var env struct {
	base     string
	admin    string
	adminTok string
	st       *store.Store
	renderer *actors.Renderer
	accounts *actors.Accounts
	webhooks *actors.Webhooks
	guard    *egress.Guard
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

	cfg := config.Default()
	cfg.DataDir, cfg.PublicURL, cfg.AdminToken = dir, "http://shotd.test", adminToken
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	// Idle keep-alive connections of the tests must not hold the exit.
	cfg.ShutdownTimeoutSeconds = 3
	// No counting of refused requests and no connection cap: every test comes from 127.0.0.1.
	cfg.Limits = config.Limits{MaxSourceBytes: 64 << 10, MaxOutputBytes: 4 << 20, BulkMaxItems: 5}
	cfg.Storage.FileTTLSeconds = 3600
	cfg.Browser.Path, cfg.Browser.PoolSize, cfg.Browser.Prewarm = testenv.Browser(), 1, 2
	if iso := testenv.Isolation(); iso != "" {
		cfg.Browser.Isolation = iso
	}
	cfg.Browser.MemoryLimitMB, cfg.Browser.RenderDeadlineGraceSeconds = config.AutoMBOff, 0
	cfg.Webhooks.TimeoutSeconds = 2
	// The egress guard as in production, with only 127.0.0.1 allow-listed for the fixture pages:
	// 127.0.0.3 stands for every address that must never be reached.
	cfg.Network.AllowPrivate = []string{"127.0.0.1/32"}
	env.plans = map[string]shotd.Plan{}
	for k, v := range cfg.Plans {
		env.plans[k] = v
	}
	env.plans["basic"] = shotd.Plan{Name: "basic", MonthlyQuota: 10,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 60, StatusRequestsPerMinute: 600,
			Concurrency: 2, QueueLimit: 10, FailuresPerMinute: 30},
		Features: []string{}}
	for name, p := range testPlans {
		p.Name = name
		env.plans[name] = p
	}
	cfg.Plans = env.plans

	ctx := context.Background()
	svc, err := service.Open(ctx, cfg, service.WithLogger(log), service.WithResolver(egress.ResolverFunc(resolveTestName)),
		service.WithWebhookRetryDelays(100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond))
	if err != nil {
		return 1, err
	}
	defer svc.Close(ctx)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.WaitReady(rctx); err != nil {
		return 1, err
	}
	env.st, env.renderer, env.accounts, env.webhooks, env.guard = svc.Store(), svc.Renderer(), svc.Accounts(), svc.Webhooks(), svc.Guard()
	env.base, env.admin = "http://"+svc.PublicAddr().String(), "http://"+svc.AdminAddr().String()

	env.pages = httptest.NewServer(http.HandlerFunc(pages))
	defer env.pages.Close()
	code := m.Run()
	if code == 0 {
		// What every test of the package answered is checked against the OpenAPI document.
		bad, err := undocumentedAnswers()
		if err != nil {
			return 1, err
		}
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, "httpd tests: the OpenAPI document omits an answer:", b)
			code = 1
		}
	}
	return code, nil
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
		w.Header().Set("X-Fixture", `a "quoted" value`) // read back by metadata_http_response_headers
		fmt.Fprint(w, `<html><head><title>fixture</title></head><body style="background:#3366cc"><h1>Hello</h1></body></html>`)
	}
}
