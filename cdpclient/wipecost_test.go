package cdpclient

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/storage"

	"github.com/shotd/shotd/internal/proc"
)

// chromeCPU is the CPU time of every thread of every process in p's Chrome's process group, by
// process type ("browser", "renderer", "gpu-process", "utility"...), from schedstat (nanoseconds,
// not the 10 ms ticks of /proc/<pid>/stat).
func chromeCPU(p *Process) map[string]time.Duration {
	sum := map[string]time.Duration{}
	for _, st := range proc.Members(p.pid) {
		dir := "/proc/" + strconv.Itoa(st.PID)
		kind := "browser"
		if cmd, err := os.ReadFile(dir + "/cmdline"); err == nil {
			// Child processes rewrite their arguments as one string, separated by spaces.
			for _, arg := range strings.FieldsFunc(string(cmd), func(r rune) bool { return r == 0 || r == ' ' }) {
				if v, ok := strings.CutPrefix(arg, "--type="); ok {
					kind = v
				}
			}
		}
		tasks, _ := filepath.Glob(dir + "/task/*/schedstat")
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64); err == nil {
				sum[kind] += time.Duration(ns)
				sum[""] += time.Duration(ns)
			}
		}
	}
	return sum
}

// wipeCostSettle is how long each measured step is given to finish what Chrome does after its
// answer (a paint, a task posted to another thread) before its CPU is read.
const wipeCostSettle = 150 * time.Millisecond

// BenchmarkWipeSteps measures the Chrome CPU of each step of the wipe of a small PDF render behind
// the egress guard, one step at a time in the same tab, each followed by wipeCostSettle; an idle
// step of the same length, among the wipe's steps, is subtracted from each. Iterations take turns: the wipe's steps one
// by one, the whole wipe (Process.wipe), and the steps without the route's block (whose cost, the
// connections the next render opens again, shows in that render). Run it with
//
//	chrome-slot go test ./cdpclient -run '^$' -bench WipeSteps -benchtime 60x
//
// Each figure is a mean in ms of Chrome CPU per render (cpu-ms/...).
func BenchmarkWipeSteps(b *testing.B) {
	srv := benchServer(b)
	p := launchIsolatedGuarded(b, 1, IsolationWipe)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t := <-p.ready
	defer func() { p.ready <- t }()

	sums := map[string]map[string]time.Duration{}
	counts := map[string]int{}
	var order []string
	measure := func(name string, f func() error) {
		b.Helper()
		before := chromeCPU(p)
		if err := f(); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		time.Sleep(wipeCostSettle)
		if _, ok := sums[name]; !ok {
			order = append(order, name)
			sums[name] = map[string]time.Duration{}
		}
		for kind, d := range chromeCPU(p) {
			sums[name][kind] += d - before[kind]
		}
		counts[name]++
	}
	c := t.c
	emulate := func() error {
		t.over.touch, t.over.userAgent, t.over.media, t.over.timeZone = true, true, true, true
		for _, err := range []error{
			c.Emulation.SetTouchEmulationEnabled(ctx, emulation.NewSetTouchEmulationEnabledArgs(true)),
			c.Emulation.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs("Bench/1.0")),
			c.Emulation.SetEmulatedMedia(ctx, emulation.NewSetEmulatedMediaArgs().SetFeatures([]emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}})),
			c.Emulation.SetTimezoneOverride(ctx, emulation.NewSetTimezoneOverrideArgs("Asia/Tokyo")),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	}
	render := func() error {
		t.origins.add(srv.URL, true)
		nav, err := c.Page.Navigate(ctx, page.NewNavigateArgs(srv.URL+"/page"))
		if err != nil {
			return err
		}
		if err := t.awaitLoad(ctx, *nav.LoaderID); err != nil {
			return err
		}
		pdf, err := c.Page.PrintToPDF(ctx, page.NewPrintToPDFArgs().SetTransferMode("ReturnAsStream"))
		if err != nil {
			return err
		}
		_, err = ReadStream(ctx, c, *pdf.Stream, 0)
		return err
	}
	steps := func(block bool) {
		if block {
			measure("block", func() error { t.route.Block(); return nil })
		}
		measure("leave navigate", func() error {
			nav, err := c.Page.Navigate(ctx, page.NewNavigateArgs(blankURL))
			if err != nil {
				return err
			}
			return t.awaitLoad(ctx, *nav.LoaderID)
		})
		measure("leave evaluate", func() error {
			_, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(`window.name='';location.origin`).SetReturnByValue(true))
			return err
		})
		measure("clear cookies", func() error { return c.Network.ClearBrowserCookies(ctx) })
		measure("clear cache", func() error { return c.Network.ClearBrowserCache(ctx) })
		measure("reset history", func() error { return c.Page.ResetNavigationHistory(ctx) })
		// Nothing: what Chrome spends anyway in as long, subtracted from every step.
		measure("idle", func() error { return nil })
		origins, _ := t.origins.storageKeys()
		measure("clear origin storage", func() error {
			return c.Storage.ClearDataForOrigin(ctx, storage.NewClearDataForOriginArgs(origins[0], originStorage))
		})
		measure("reset touch", func() error {
			return c.Emulation.SetTouchEmulationEnabled(ctx, emulation.NewSetTouchEmulationEnabledArgs(false))
		})
		measure("reset user agent", func() error {
			return c.Emulation.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(""))
		})
		measure("reset media", func() error { return c.Emulation.SetEmulatedMedia(ctx, baselineMediaArgs()) })
		measure("reset time zone", func() error {
			return c.Emulation.SetTimezoneOverride(ctx, emulation.NewSetTimezoneOverrideArgs(""))
		})
		t.over = overrides{}
		if block {
			measure("unblock", func() error { t.route.Unblock(); return nil })
		}
		if err := drainLifecycle(t); err != nil {
			b.Fatal(err)
		}
	}

	var wipeWall []time.Duration // of the whole wipe
	prev := "render after the whole wipe"
	i := 0
	for b.Loop() {
		if err := emulate(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(wipeCostSettle)
		measure(prev, render)
		time.Sleep(wipeCostSettle)
		switch i % 3 {
		case 0:
			steps(true)
			prev = "render after the steps"
		case 1:
			measure("whole wipe", func() error {
				start := time.Now()
				err := p.wipe(t)
				wipeWall = append(wipeWall, time.Since(start))
				return err
			})
			prev = "render after the whole wipe"
		case 2:
			steps(false)
			prev = "render after the steps, no block"
		}
		i++
	}
	kinds := []string{"", "browser", "renderer", "gpu-process", "utility"}
	mean := func(name, kind string) float64 {
		d := sums[name][kind]/time.Duration(counts[name]) - sums["idle"][kind]/time.Duration(counts["idle"])
		return float64(d.Microseconds()) / 1000
	}
	table := fmt.Sprintf("%-34s %7s %7s %7s %7s %7s\n", "ms of Chrome CPU, idle subtracted", "all", "browser", "render", "gpu", "utility")
	for _, name := range order {
		if name == "idle" {
			continue
		}
		table += fmt.Sprintf("%-34s", name)
		for _, k := range kinds {
			table += fmt.Sprintf(" %7.2f", mean(name, k))
		}
		table += "\n"
		b.ReportMetric(mean(name, ""), "cpu-ms/"+strings.ReplaceAll(name, " ", "_"))
	}
	slices.Sort(wipeWall)
	b.ReportMetric(float64(wipeWall[len(wipeWall)/2].Microseconds())/1000, "wall-p50-ms/whole_wipe")
	b.Logf("idle %.2f ms per step\n%s", float64((sums["idle"][""]/time.Duration(counts["idle"])).Microseconds())/1000, table)
}

// benchTarget opens a Target in p for a raw loop, closed with b, with the guard's Fetch patterns
// on if fetch.
func benchTarget(ctx context.Context, b *testing.B, p *Process, fetch bool) *Target {
	t, err := p.OpenTarget(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(t.Close)
	if fetch {
		if err := p.enableGuardFetch(ctx, t.t); err != nil {
			b.Fatal(err)
		}
	}
	return t
}

// BenchmarkPausedPDF compares, on one Chrome behind the egress guard, a small PDF rendered with a
// pause of 200 ms before each (as the bench's pdf:1+200ms row) four ways, each p50 in ms: the raw
// loop on one reused target (navigate, load, print, read), the same with the guard's Fetch
// patterns on, Render with the tabs handed out first in, first out (each renderer idle for as
// many renders as the pool has tabs), and Render as the pool hands them out (the tab wiped last
// first, putFirst), and the last two again back to back. Blocks of 20 per way
// take turns, three times. The Chrome CPU per render (cpu-ms, the pauses' idle included) is
// beside each.
//
//	chrome-slot go test ./cdpclient -run '^$' -bench PausedPDF -benchtime 1x
func BenchmarkPausedPDF(b *testing.B) {
	srv := benchServer(b)
	p := launchIsolatedGuarded(b, 2, IsolationWipe)
	// Taken first, one tab would reach Config.TabReuse, and cost a new renderer process, many
	// times sooner within the benchmark than the six of a queue; in a service both rates are one
	// replacement per TabReuse renders.
	p.cfg.TabReuse = 1 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	raw := func(fetch bool) func() error {
		t := benchTarget(ctx, b, p, fetch)
		return func() error {
			nav, err := t.Client.Page.Navigate(ctx, page.NewNavigateArgs(srv.URL+"/page"))
			if err != nil {
				return err
			}
			if err := t.AwaitLoad(ctx, *nav.LoaderID); err != nil {
				return err
			}
			pdf, err := t.Client.Page.PrintToPDF(ctx, page.NewPrintToPDFArgs().SetTransferMode("ReturnAsStream"))
			if err != nil {
				return err
			}
			_, err = ReadStream(ctx, t.Client, *pdf.Stream, 0)
			return err
		}
	}
	o := opts(srv.URL + "/page")
	o.Format = "pdf"
	// render renders o; paused, once the pool is full again (the last wipe done).
	render := func(lifo, paused bool) func() error {
		return func() error {
			for paused && len(p.ready) < cap(p.ready) {
				time.Sleep(5 * time.Millisecond)
			}
			if !lifo {
				// putFirst put the tab wiped last first: put it last, as a queue would.
				p.readyMu.Lock()
				tabs := make([]*tab, 0, cap(p.ready))
				for len(p.ready) > 0 {
					tabs = append(tabs, <-p.ready)
				}
				if len(tabs) > 0 {
					tabs = append(tabs[1:], tabs[0])
				}
				for _, t := range tabs {
					p.ready <- t
				}
				p.readyMu.Unlock()
			}
			_, err := p.Render(ctx, o)
			return err
		}
	}
	ways := []struct {
		name  string
		f     func() error
		pause time.Duration
	}{
		{"raw", raw(false), 200 * time.Millisecond}, {"raw_fetch", raw(true), 200 * time.Millisecond},
		{"render_fifo", render(false, true), 200 * time.Millisecond}, {"render_lifo", render(true, true), 200 * time.Millisecond},
		{"render_fifo_b2b", render(false, false), 0}, {"render_lifo_b2b", render(true, false), 0},
	}
	durs := make([][]time.Duration, len(ways))
	cpu := make([]time.Duration, len(ways))
	for b.Loop() {
		for range 3 {
			for i, w := range ways {
				var before time.Duration
				for j := range 21 {
					if j == 1 {
						before = chromeCPU(p)[""]
					}
					time.Sleep(w.pause)
					start := time.Now()
					if err := w.f(); err != nil {
						b.Fatalf("%s: %v", w.name, err)
					}
					if j > 0 { // the first of each block warms up
						durs[i] = append(durs[i], time.Since(start))
					}
				}
				time.Sleep(200 * time.Millisecond) // the last wipe
				cpu[i] += chromeCPU(p)[""] - before
			}
		}
	}
	for i, w := range ways {
		slices.Sort(durs[i])
		b.ReportMetric(float64(durs[i][len(durs[i])/2].Microseconds())/1000, "p50-ms/"+w.name)
		b.ReportMetric(float64((cpu[i]/time.Duration(len(durs[i]))).Microseconds())/1000, "cpu-ms/"+w.name)
	}
}
