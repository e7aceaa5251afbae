package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	shotdsvc "github.com/shotd/shotd/service"
)

func main() {
	n := flag.Int("n", 30, "renders per row and side")
	warm := flag.Int("warm", 5, "warm-up renders before each measurement")
	rounds := flag.Int("rounds", 1, "blocks each side's renders of a row are split into, the sides taking turns, so that a slow minute of the host falls on every side")
	extra := flag.String("chrome-flags", "", "extra Chrome flags for every side, space separated (for experiments)")
	rowsFlag := flag.String("rows", "small:1+200ms,1,2,4 heavy:1+200ms,1 pdf:1+200ms,1 full:1", "scenarios and their client counts: small, heavy (PNG), pdf (small page), full (heavy page, full page with its lazy-load scroll, which finds nothing to scroll for on it), fullstep (the same, scrolled a viewport at a time); 1+P is one client pausing P between requests")
	browserPath := flag.String("browser", "", "browser of the service and of the floor (default: chromium-headless-shell, as serve)")
	chromium := flag.String("chromium", "/usr/lib/chromium/chromium", "full Chromium for the second raw loop (\"\": none)")
	pool := flag.Int("pool", config.Default().Browser.PoolSize, "browser processes of the service (browser.pool_size)")
	nice := flag.Int("nice", config.Default().Browser.Nice, "browser.nice of the service, which the floors' Chromes run at too")
	isolation := flag.String("isolation", config.Default().Browser.Isolation, "browser.isolation of the service: wipe or context")
	cpuProfile := flag.String("cpuprofile", "", "write the bench process's CPU profile (service, raw loop, proxy, clients) to this file")
	var b beyond
	flag.IntVar(&b.renders, "renders", 5000, "the service's renders in all before its RSS is taken again: small-page renders by 4 clients after the table make up what the rows did not")
	flag.IntVar(&b.accepts, "accepts", 2000, "async accepts by 16 clients for the accept rate (0: not measured)")
	flag.IntVar(&b.hits, "hits", 200, "cache hits for their p50 (0: not measured)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			usage("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			usage("-cpuprofile: %v", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	var rows []row
	for _, spec := range strings.Fields(*rowsFlag) {
		name, list, ok := strings.Cut(spec, ":")
		sc, known := scenarios[name]
		if !ok || !known {
			usage("-rows: %q is not scenario:clients (scenarios: small, heavy, pdf, full, fullstep)", spec)
		}
		for _, f := range strings.Split(list, ",") {
			count, pause, paused := strings.Cut(f, "+")
			c, err := strconv.Atoi(count)
			if err != nil || c < 1 {
				usage("-rows: %q is not a client count, or 1+pause", f)
			}
			var g time.Duration
			if paused {
				if g, err = time.ParseDuration(pause); err != nil || g <= 0 || c != 1 {
					usage("-rows: %q is not 1+pause", f)
				}
			}
			rows = append(rows, row{scenario: sc, label: f, conc: c, gap: g})
		}
	}
	if *pool < 1 {
		usage("-pool: %d browsers", *pool)
	}
	if *rounds < 1 {
		usage("-rounds: %d blocks", *rounds)
	}
	if *nice < 0 || *nice > 19 {
		usage("-nice: %d is not 0 to 19", *nice)
	}
	so := serviceOptions{browserPath: *browserPath, isolation: *isolation, pool: *pool, nice: *nice, extraFlags: strings.Fields(*extra)}
	if err := run(so, *chromium, *n, *warm, min(*rounds, *n), rows, b); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}

// scenario is what a row renders: a page, and the options of the service's request with the
// raw loop's capture that matches them.
type scenario struct {
	name  string
	page  string     // fixture path
	query url.Values // the service's options beside url
	raw   string     // rawPNG, rawPDF or rawFullPage
}

var scenarios = map[string]scenario{
	"small": {"small png", "/small", url.Values{}, rawPNG},
	"heavy": {"heavy png", "/heavy", url.Values{}, rawPNG},
	"pdf":   {"small pdf", "/small", url.Values{"format": {"pdf"}}, rawPDF},
	"full":  {"heavy full", "/heavy", url.Values{"full_page": {"true"}}, rawFullPage},
	// Not among the default rows: the heavy full page with a scroll step at every viewport (as
	// a page that watches its scroll gets), for the cost of the lazy-load scroll itself.
	"fullstep": {"full steps", "/heavy", url.Values{"full_page": {"true"}, "full_page_scroll_by": {"1024"}}, rawFullPage},
}

// row is one line of the table: conc clients of a scenario, each pausing gap between requests.
type row struct {
	scenario scenario
	label    string
	conc     int
	gap      time.Duration
}

// service is shotd opened in-process as serve opens it, on loopback.
type service struct {
	base    string
	key     string
	pids    func() []int     // the Chrome processes of the pool
	chrome  cdpclient.Config // how the pool launches each Chrome
	close   func()
	ready   time.Duration // from Open to ready, on a data dir of a service that was open before
	renders atomic.Int64  // renders answered 200 (cache hits included)
	// collected is closed once the Service is garbage; startService's service holds the first
	// one's, which the idle RSS waits for (it is not this service's memory).
	collected     chan struct{}
	firstReleased chan struct{}
}

// side is one of the measured: the service, or a raw loop on a Chrome of its own.
type side struct {
	name    string
	measure func(target string, r row, n int) ([]time.Duration, time.Duration, error)
	pids    func() []int
}

// result is one side's figures for one row.
type result struct {
	p50, p95  time.Duration
	perSecond float64
	cpu       cpuUse
	renders   int
}

// rawSide launches a Chrome of its own for a raw loop, or the clean floor's (clean), so that
// each side's CPU is its own; stop ends that Chrome.
func rawSide(cfg cdpclient.Config, clean bool) (sd side, stop func(), err error) {
	kind := "raw"
	if clean {
		kind = "clean"
	}
	p, err := cdpclient.Launch(context.Background(), cfg)
	if err != nil {
		return side{}, nil, fmt.Errorf("%s loop on %s: %w", kind, cfg.Path, err)
	}
	sd = side{name: kind + " " + filepath.Base(cfg.Path), measure: func(target string, r row, n int) ([]time.Duration, time.Duration, error) {
		return measureRaw(p, target, r, n, clean)
	}, pids: func() []int { return []int{p.PID()} }}
	return sd, func() { p.Close(context.Background()) }, nil
}

func run(so serviceOptions, chromiumPath string, n, warm, rounds int, rows []row, b beyond) error {
	log := zerolog.Nop()
	pages := httptest.NewServer(http.HandlerFunc(fixtures))
	defer pages.Close()

	// The service as serve configures it by default; every side runs Chrome as its pool does,
	// with the same flags, behind the same egress proxy.
	svc, err := startService(so, log)
	if err != nil {
		return err
	}
	defer svc.close()
	// Before anything else runs in this process: the raw loops' clients would count too. The
	// first service, closed, is not this one's memory: wait (a few seconds at most) until it is
	// garbage.
	if !collected(svc.firstReleased, 5*time.Second) {
		fmt.Fprintln(os.Stderr, "bench: the warm start's first service is still reachable; the idle RSS holds it")
	}
	b.rssIdle = rss()
	ccfg := svc.chrome
	path := ccfg.Path
	sides := []side{{name: "service", measure: func(target string, r row, n int) ([]time.Duration, time.Duration, error) {
		return measureService(svc, target, r, n)
	}, pids: svc.pids}}
	floors := []string{path}
	if chromiumPath != "" && chromiumPath != path {
		floors = append(floors, chromiumPath)
	}
	for i, fp := range floors {
		fcfg := ccfg
		fcfg.Path = fp
		loops := []bool{false}
		if i == 0 {
			loops = append(loops, true) // the clean floor, on the first path only
		}
		for _, clean := range loops {
			sd, stop, err := rawSide(fcfg, clean)
			if err != nil {
				return err
			}
			defer stop()
			sides = append(sides, sd)
		}
	}

	turns := ""
	if rounds > 1 {
		turns = fmt.Sprintf(" in %d turns", rounds)
	}
	fmt.Printf("shotd bench %s, %s, %d cores, %d renders per row and side%s, service: pool_size %d, isolation %s, nice %d, %s\n",
		time.Now().UTC().Format("2006-01-02"), chromeVersion(path), numCPU(), n, turns, so.pool, so.isolation, so.nice, filepath.Base(path))
	fmt.Printf("%-11s %-7s", "scenario", "clients")
	for _, s := range sides {
		fmt.Printf(" | %-34s", s.name+" p50/p95 ms  r/s  cpu s")
	}
	fmt.Printf(" | p50 and r/s of the service against each loop\n")
	for _, rw := range rows {
		target := pages.URL + rw.scenario.page
		res, err := measureRow(sides, target, rw, n, warm, rounds)
		if err != nil {
			return err
		}
		fmt.Printf("%-11s %-7s", rw.scenario.name, rw.label)
		for _, r := range res {
			fmt.Printf(" | %7.1f %7.1f %6.2f %6.3f    ", ms(r.p50), ms(r.p95), r.perSecond, r.cpu.chrome.Seconds()/float64(r.renders))
		}
		for _, r := range res[1:] {
			fmt.Printf(" | %.2fx %.2fx", float64(res[0].p50)/float64(r.p50), res[0].perSecond/r.perSecond)
		}
		fmt.Println()
	}
	fmt.Println("clients: N is N clients back to back; 1+P is one client pausing P, plus up to a frame (1/60 s) spread evenly, between requests (r/s includes the pauses).")
	fmt.Println("cpu s: CPU seconds of all of a side's Chrome processes per render, the background work a row leaves included.")
	fmt.Println("raw: navigate, wait for load, capture (PNGs with optimizeForSpeed, as the service's); clean: the same, then about:blank, cookies, HTTP cache and the origin's storage cleared (outside p50, inside r/s).")
	fmt.Println("last columns: the service's p50 over each loop's (lower is better), and its renders per second over the loop's (higher is better).")
	return b.measure(svc, pages.URL+"/small")
}

// measureRow measures n renders of row rw on each side, in rounds blocks a side: the sides take
// turns block by block, each round starting with the next side, so that the host's slower
// moments fall on all of them rather than on whichever side ran then. Each side is warmed up
// right before its first block (warm renders), so that none profits from another's cold start,
// and with one render before each later one, after the other sides' blocks.
func measureRow(sides []side, target string, rw row, n, warm, rounds int) ([]result, error) {
	type sum struct {
		d    []time.Duration
		wall time.Duration
		cpu  cpuUse
	}
	sums := make([]sum, len(sides))
	for round := range rounds {
		share := n / rounds
		if round < n%rounds {
			share++
		}
		for k := range sides {
			i := (k + round) % len(sides)
			s := sides[i]
			w := warm
			if round > 0 {
				w = min(warm, 1)
			}
			if w > 0 {
				if _, _, err := s.measure(target, rw, w); err != nil {
					return nil, err
				}
			}
			var d []time.Duration
			var wall time.Duration
			cpu, err := measureCPU(s.pids, func() (err error) {
				d, wall, err = s.measure(target, rw, share)
				return err
			})
			if err != nil {
				return nil, err
			}
			sums[i].d = append(sums[i].d, d...)
			sums[i].wall += wall
			sums[i].cpu.chrome += cpu.chrome
			sums[i].cpu.self += cpu.self
		}
	}
	res := make([]result, len(sides))
	for i, s := range sums {
		res[i] = result{p50: pct(s.d, 50), p95: pct(s.d, 95), perSecond: float64(len(s.d)) / s.wall.Seconds(), cpu: s.cpu, renders: len(s.d)}
	}
	return res, nil
}

// serviceOptions is what the bench sets in the service's configuration.
type serviceOptions struct {
	browserPath, isolation string
	pool, nice             int
	extraFlags             []string
}

// startService opens the service, creates the bench's account and closes it, then opens it again
// on the same data dir: the second start, to ready, is the warm start measured.
func startService(so serviceOptions, log zerolog.Logger) (*service, error) {
	dir, err := os.MkdirTemp("", "shotd-bench-")
	if err != nil {
		return nil, err
	}
	first, err := openService(dir, so, log, "")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	key, firstGone := first.key, first.collected
	first.close()
	first = nil // its memory is not the second's
	start := time.Now()
	s, err := openService(dir, so, log, key)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.ready = time.Since(start)
	s.firstReleased = firstGone
	closeSvc := s.close
	s.close = func() { closeSvc(); os.RemoveAll(dir) }
	return s, nil
}

// openService opens the service on dir and waits until it is ready; with key "" it creates the
// bench's account and key first.
func openService(dir string, so serviceOptions, log zerolog.Logger, key string) (*service, error) {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.AdminListen, cfg.PublicURL = dir, "127.0.0.1:0", "127.0.0.1:0", "http://127.0.0.1"
	cfg.Browser.Path, cfg.Browser.Isolation, cfg.Browser.PoolSize, cfg.Browser.Nice = so.browserPath, so.isolation, so.pool, so.nice
	cfg.Network.AllowPrivate = []string{"127.0.0.1/32"} // the fixture pages
	cfg.Plans["bench"] = shotd.Plan{Name: "bench", MonthlyQuota: 1 << 30,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1 << 30, StatusRequestsPerMinute: 1 << 30,
			Concurrency: 64, QueueLimit: 1 << 30, FailuresPerMinute: 1 << 30},
		Features: shotd.AllFeatures}
	ctx := context.Background()
	svc, err := shotdsvc.Open(ctx, cfg, shotdsvc.WithLogger(log), shotdsvc.WithChromeFlags(so.extraFlags...))
	if err != nil {
		return nil, err
	}
	closeAll := func() {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		svc.Close(ctx)
	}
	if key == "" {
		acc, err := svc.Store().CreateAccount("bench@example.test", "bench", true)
		if err != nil {
			closeAll()
			return nil, err
		}
		k, err := svc.Store().CreateKey(acc.ID, "bench", false)
		if err != nil {
			closeAll()
			return nil, err
		}
		key = k.AccessKey
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.WaitReady(rctx); err != nil {
		closeAll()
		return nil, err
	}
	pids := func() []int {
		infos, err := svc.Renderer().Browsers(5 * time.Second)
		if err != nil {
			return nil
		}
		var pids []int
		for _, b := range infos {
			if b.Up {
				pids = append(pids, b.PID)
			}
		}
		return pids
	}
	collected := make(chan struct{})
	runtime.AddCleanup(svc, func(ch chan struct{}) { close(ch) }, collected)
	return &service{base: "http://" + svc.PublicAddr().String(), key: key, pids: pids, chrome: svc.ChromeConfig(),
		close: closeAll, collected: collected}, nil
}

// measureService sends n renders of target through the HTTP API, r.conc at a time, each client
// pausing r.gap between its requests.
func measureService(s *service, target string, r row, n int) ([]time.Duration, time.Duration, error) {
	q := url.Values{"access_key": {s.key}, "url": {target}}
	for k, v := range r.scenario.query {
		q[k] = v
	}
	want := "image/png"
	if r.scenario.raw == rawPDF {
		want = "application/pdf"
	}
	u := s.base + "/api/v1/screenshot?" + q.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: r.conc}}
	return parallel(r.conc, n, r.gap, func() error {
		return fetch(client, u, func(resp *http.Response) error {
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != want {
				return fmt.Errorf("service answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			s.renders.Add(1)
			return nil
		})
	})
}

// measureRaw runs r.conc raw loops, each on its own reused tab, n renders in all, each loop
// pausing r.gap between renders.
func measureRaw(p *cdpclient.Process, target string, r row, n int, clean bool) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < r.conc; i++ {
		share := n / r.conc
		if i < n%r.conc {
			share++
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			d, err := rawLoop(ctx, p, target, r.scenario.raw, share, r.gap, clean)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, d...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return all, time.Since(start), firstErr
}

// parallel runs f n times, conc at a time, each client pausing gap (spread over a frame: pause)
// after each, and returns each duration and the wall time.
func parallel(conc, n int, gap time.Duration, f func() error) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var durs []time.Duration
	var firstErr error
	jobs := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := 0
			for range jobs {
				t := time.Now()
				err := f()
				mu.Lock()
				durs = append(durs, time.Since(t))
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				time.Sleep(pause(gap, sent))
				sent++
			}
		}()
	}
	wg.Wait()
	return durs, time.Since(start), firstErr
}

// collected collects garbage until gone is closed, for up to limit; it reports whether it was.
func collected(gone <-chan struct{}, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		runtime.GC()
		select {
		case <-gone:
			return true
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fixtures serves the benchmark pages: a small one, and a heavy one with a large DOM, styles,
// web fonts fallback and images, all from loopback.
func fixtures(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/small":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>small</title></head><body><h1>Hello</h1><p>A small page.</p></body></html>`)
	case r.URL.Path == "/heavy":
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		b.WriteString(`<!doctype html><html><head><title>heavy</title><style>
body{font-family:sans-serif;margin:0}.card{display:inline-block;width:180px;margin:6px;padding:8px;border-radius:8px;
box-shadow:0 2px 6px rgba(0,0,0,.3);background:linear-gradient(135deg,#fde,#def)}img{width:160px;height:90px}</style></head><body>`)
		for i := 0; i < 300; i++ {
			fmt.Fprintf(&b, `<div class="card"><img src="/img/%d.svg"><h3>Card %d</h3><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit %d.</p></div>`, i%20, i, i)
		}
		b.WriteString(`<script>for(let i=0;i<2000;i++){const s=document.createElement('span');s.textContent=i;document.body.appendChild(s)}</script></body></html>`)
		fmt.Fprint(w, b.String())
	case strings.HasPrefix(r.URL.Path, "/img/"):
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="90"><rect width="160" height="90" fill="hsl(%d,70%%,60%%)"/><circle cx="80" cy="45" r="30" fill="white"/></svg>`, len(r.URL.Path)*37%360)
	default:
		http.NotFound(w, r)
	}
}

func chromeVersion(path string) string {
	out, err := execOutput(path, "--version")
	if err != nil {
		return "chromium (version unknown)"
	}
	return strings.TrimSpace(out)
}
