package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/store"
)

func main() {
	n := flag.Int("n", 30, "renders per scenario and concurrency")
	warm := flag.Int("warm", 5, "warm-up renders before each measurement")
	extra := flag.String("chrome-flags", "", "extra Chrome flags for both sides, space separated (for experiments)")
	only := flag.String("pages", "small,heavy", "pages to measure")
	browserPath := flag.String("browser", "", "browser binary for both sides (default: chromium on PATH)")
	gaps := flag.String("gap", "300ms,1s", "pauses between the requests of the paced rows, comma separated (\"\": no paced row)")
	concs := flag.String("conc", "1,2,4", "concurrency of the back-to-back rows, comma separated (\"\": none)")
	pool := flag.Int("pool", config.Default().Browser.PoolSize, "browser processes of the service (browser.pool_size)")
	cpuProfile := flag.String("cpuprofile", "", "write the bench process's CPU profile (service, raw loop, proxy, clients) to this file")
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
	for _, f := range strings.FieldsFunc(*concs, func(r rune) bool { return r == ',' }) {
		c, err := strconv.Atoi(f)
		if err != nil || c < 1 {
			usage("-conc: %q is not a concurrency", f)
		}
		rows = append(rows, row{label: f, conc: c})
	}
	for _, f := range strings.FieldsFunc(*gaps, func(r rune) bool { return r == ',' }) {
		g, err := time.ParseDuration(f)
		if err != nil || g <= 0 {
			usage("-gap: %q is not a pause", f)
		}
		rows = append(rows, row{label: "1+" + f, conc: 1, gap: g})
	}
	if *pool < 1 {
		usage("-pool: %d browsers", *pool)
	}
	if err := run(*browserPath, *n, *warm, *pool, rows, strings.Fields(*extra), strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}

// row is one line of the table: conc clients, each pausing gap between its requests.
type row struct {
	label string
	conc  int
	gap   time.Duration
}

// service is shotd assembled in-process as serve assembles it, on loopback.
type service struct {
	base  string
	key   string
	pids  func() []int // the Chrome processes of the pool
	close func()
}

func run(browserPath string, n, warm, pool int, rows []row, extraFlags, pageNames []string) error {
	log := zerolog.Nop()
	pages := httptest.NewServer(http.HandlerFunc(fixtures))
	defer pages.Close()

	guard := egress.NewGuard(egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}), nil)
	proxy := egress.NewProxy(guard, log)
	if err := proxy.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer proxy.Close(context.Background())
	path, err := cdpclient.FindBrowser(browserPath)
	if err != nil {
		return err
	}
	// Both sides run the same Chrome binary with the same flags, behind the same egress proxy.
	ccfg := cdpclient.Config{Path: path, Prewarm: config.Default().Browser.Prewarm, Log: log, ExtraFlags: append(cdpclient.ProxyFlags(proxy.Addr()), extraFlags...), Guard: guard}

	svc, err := startService(ccfg, pool, log)
	if err != nil {
		return err
	}
	defer svc.close()
	raw, err := cdpclient.Launch(context.Background(), ccfg)
	if err != nil {
		return err
	}
	defer raw.Close(context.Background())

	fmt.Printf("shotd bench %s, %s, GOMAXPROCS-visible cores %d, %d renders per row, service pool_size %d\n",
		time.Now().UTC().Format("2006-01-02"), chromeVersion(path), numCPU(), n, pool)
	fmt.Printf("%-6s %-8s | %-40s | %-40s | %s\n", "page", "clients", "service p50/p95 ms   r/s  cpu s  go ms", "raw CDP p50/p95 ms   r/s  cpu s  go ms", "p50 ratio")
	for _, pg := range pageNames {
		target := pages.URL + "/" + pg
		for _, rw := range rows {
			// Interleave warm-ups so neither side profits from the other's cold start.
			if _, _, err := measureService(svc, target, rw.conc, warm, rw.gap); err != nil {
				return err
			}
			if _, _, err := measureRaw(raw, target, rw.conc, warm, rw.gap); err != nil {
				return err
			}
			var sd, rd []time.Duration
			var swall, rwall time.Duration
			scpu, err := measureCPU(svc.pids, func() (err error) {
				sd, swall, err = measureService(svc, target, rw.conc, n, rw.gap)
				return err
			})
			if err != nil {
				return err
			}
			rcpu, err := measureCPU(func() []int { return []int{raw.PID()} }, func() (err error) {
				rd, rwall, err = measureRaw(raw, target, rw.conc, n, rw.gap)
				return err
			})
			if err != nil {
				return err
			}
			sp50, sp95 := pct(sd, 50), pct(sd, 95)
			rp50, rp95 := pct(rd, 50), pct(rd, 95)
			fmt.Printf("%-6s %-8s | %7.1f %7.1f %6.2f %6.3f %5.1f | %7.1f %7.1f %6.2f %6.3f %5.1f | %.2fx\n", pg, rw.label,
				ms(sp50), ms(sp95), float64(len(sd))/swall.Seconds(), scpu.chrome.Seconds()/float64(len(sd)), ms(scpu.self)/float64(len(sd)),
				ms(rp50), ms(rp95), float64(len(rd))/rwall.Seconds(), rcpu.chrome.Seconds()/float64(len(rd)), ms(rcpu.self)/float64(len(rd)),
				float64(sp50)/float64(rp50))
		}
	}
	fmt.Println("clients: 1+P is one client pausing P between requests (r/s includes the pauses); N is N clients back to back.")
	fmt.Println("cpu s: CPU seconds of all Chrome processes per render, the background work a row leaves included.")
	fmt.Println("go ms: CPU milliseconds of the bench process per render: the service or the raw loop, with the proxy, pages and clients both share.")
	return nil
}

func startService(ccfg cdpclient.Config, pool int, log zerolog.Logger) (*service, error) {
	dir, err := os.MkdirTemp("", "shotd-bench-")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(dir, log)
	if err != nil {
		return nil, err
	}
	acc, err := st.CreateAccount("bench@example.test", "bench", true)
	if err != nil {
		return nil, err
	}
	key, err := st.CreateKey(acc.ID, "bench", false)
	if err != nil {
		return nil, err
	}
	plans := map[string]shotd.Plan{"bench": {Name: "bench", MonthlyQuota: 1 << 30, RequestsPerMinute: 1 << 30,
		StatusRequestsPerMinute: 1 << 30, Concurrency: 64, QueueLimit: 64, FailuresPerMinute: 1 << 30, Features: shotd.AllFeatures}}
	sys := actors.NewSystem(log)
	r, err := actors.StartRenderer(sys, actors.PoolConfig{Size: pool, SlotsPerBrowser: config.Default().Browser.RendersPerProcess, SlotWait: 30 * time.Second, Log: log,
		Launch: func(ctx context.Context) (actors.Browser, error) {
			p, err := cdpclient.Launch(ctx, ccfg)
			if err != nil {
				return nil, err
			}
			return p, nil
		}})
	if err != nil {
		return nil, err
	}
	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		return nil, err
	}
	srv := httpd.New(httpd.Settings{PublicURL: "http://127.0.0.1", MaxSourceBytes: 1 << 20},
		httpd.Deps{Keys: st.KeyCache(), Plans: plans, Renderer: r, Gate: accounts, Files: st, Records: st,
			URLs: httpd.GuardURLs{Guard: ccfg.Guard.(*egress.Guard)}, Log: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(ln)
	for deadline := time.Now().Add(30 * time.Second); !r.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("browser pool not ready")
		}
	}
	pids := func() []int {
		infos, err := r.Browsers(5 * time.Second)
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
	return &service{base: "http://" + ln.Addr().String(), key: key.AccessKey, pids: pids, close: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		r.Close(ctx)
		sys.Shutdown()
		st.Close(ctx)
		os.RemoveAll(dir)
	}}, nil
}

// measureService sends n PNG renders of target through the HTTP API, conc at a time, each client
// pausing gap between its requests.
func measureService(s *service, target string, conc, n int, gap time.Duration) ([]time.Duration, time.Duration, error) {
	q := url.Values{"access_key": {s.key}, "url": {target}}
	u := s.base + "/api/v1/screenshot?" + q.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	return parallel(conc, n, gap, func() error {
		resp, err := client.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
			return fmt.Errorf("service answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return nil
	})
}

// measureRaw runs conc raw loops, each on its own reused tab, n renders in all, each loop
// pausing gap between renders.
func measureRaw(p *cdpclient.Process, target string, conc, n int, gap time.Duration) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		share := n / conc
		if i < n%conc {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			d, err := cdpclient.RawLoop(ctx, p, target, share, gap)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, d...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return all, time.Since(start), firstErr
}

// parallel runs f n times, conc at a time with a pause of gap after each, and returns each
// duration and the wall time.
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
			for range jobs {
				t := time.Now()
				err := f()
				mu.Lock()
				durs = append(durs, time.Since(t))
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				time.Sleep(gap)
			}
		}()
	}
	wg.Wait()
	return durs, time.Since(start), firstErr
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
