package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd/internal/testkit"
)

// SoakOptions shape a soak run.
type SoakOptions struct {
	Bin      string
	Renders  int           // total sync renders
	Clients  int           // concurrent clients
	Interval time.Duration // between two samples
	Out      io.Writer
}

// Sample is the service's resources at one moment.
type Sample struct {
	At              time.Duration
	Renders         int // answered so far
	ShotdRSS        int64
	ChromePSS       int64 // proportional: the pages Chrome's processes share count once in all
	Goroutines, FDs int
	Chromes         int
	Renderers       int
	BoltBytes       int64
}

// series names what grows without bound, with its limit of growth per 1000 renders over the
// second half: beyond it the run fails. The limits are far above noise (a GC cycle moves RSS by
// a few MB, a render in flight adds a target) and far below a leak of one item per render.
var series = []struct {
	name  string
	limit float64
	get   func(Sample) float64
}{
	{"shotd RSS MB", 20, func(s Sample) float64 { return float64(s.ShotdRSS) / (1 << 20) }},
	{"Chrome PSS MB", 100, func(s Sample) float64 { return float64(s.ChromePSS) / (1 << 20) }},
	{"goroutines", 25, func(s Sample) float64 { return float64(s.Goroutines) }},
	{"open fds", 25, func(s Sample) float64 { return float64(s.FDs) }},
	{"renderer processes (tabs)", 5, func(s Sample) float64 { return float64(s.Renderers) }},
	{"bbolt MB", 2, func(s Sample) float64 { return float64(s.BoltBytes) / (1 << 20) }},
}

// SoakReport holds the samples, the slopes and the problems of a soak run.
type SoakReport struct {
	Samples  []Sample
	Statuses map[string]int
	Bad      int
	Slopes   map[string]float64
	Problems []string
}

// Soak renders opt.Renders times with mixed formats at full concurrency and samples the
// service's resources every opt.Interval.
func Soak(ctx context.Context, opt SoakOptions) (*SoakReport, error) {
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	root, err := NewRoot(chaosConfig)
	if err != nil {
		return nil, err
	}
	defer root.Remove()
	bin := opt.Bin
	if bin == "" {
		if bin, err = Build(ctx, root.Dir); err != nil {
			return nil, err
		}
	}
	fx := testkit.NewPages(0)
	defer fx.Close()
	svc, err := Start(ctx, bin, root)
	if err != nil {
		return nil, err
	}
	defer svc.Kill()
	key, _ := svc.Keys()
	hc := &http.Client{Timeout: 90 * time.Second}
	cl := &Client{Base: svc.Base, Key: key, HTTP: hc}
	rep := &SoakReport{Statuses: map[string]int{}, Slopes: map[string]float64{}}

	var next, done atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range opt.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := int(next.Add(1))
				if n > opt.Renders {
					return
				}
				s := shots[n%len(shots)]
				s.URL = fx.URL(fmt.Sprintf("/page?n=%d", n))
				o := cl.Render(ctx, s)
				done.Add(1)
				mu.Lock()
				rep.Statuses[o.Label]++
				if o.Bad != "" {
					rep.Bad++
				}
				mu.Unlock()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	sample := func() {
		s := measure(ctx, svc, root, hc)
		s.At, s.Renders = time.Since(start).Round(time.Second), int(done.Load())
		rep.Samples = append(rep.Samples, s)
		fmt.Fprintf(opt.Out, "soak: %4.0fs %5d renders  shotd %4d MB  chrome %5d MB PSS (%d procs)  goroutines %4d  fds %4d  renderers %3d  bbolt %5.2f MB\n",
			s.At.Seconds(), s.Renders, s.ShotdRSS>>20, s.ChromePSS>>20, s.Chromes, s.Goroutines, s.FDs, s.Renderers, float64(s.BoltBytes)/(1<<20))
	}
	sample()
	tick := time.NewTicker(opt.Interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-tick.C:
			sample()
		case <-finished:
			break loop
		case <-ctx.Done():
			<-finished
			break loop
		}
	}
	sample()
	if ctx.Err() != nil {
		rep.Problems = append(rep.Problems, "the soak ran out of time")
	}
	if rep.Bad > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d answers broke the contract", rep.Bad))
	}
	half := rep.Samples[len(rep.Samples)/2:]
	if len(half) < 3 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d samples in the second half: too few for a slope (run more renders)", len(half)))
		return rep, nil
	}
	for _, sr := range series {
		xs, ys := make([]float64, len(half)), make([]float64, len(half))
		for i, s := range half {
			xs[i], ys[i] = float64(s.Renders)/1000, sr.get(s)
		}
		k := slope(xs, ys)
		rep.Slopes[sr.name] = k
		if k > sr.limit {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s grows by %.1f per 1000 renders over the second half (limit %.0f)", sr.name, k, sr.limit))
		}
	}
	return rep, nil
}

// Print writes the figures: the first and last sample, the slopes and the problems.
func (r *SoakReport) Print(w io.Writer) {
	fmt.Fprintln(w, "answers by status:")
	for _, k := range slices.Sorted(maps.Keys(r.Statuses)) {
		fmt.Fprintf(w, "  %-34s %d\n", k, r.Statuses[k])
	}
	if len(r.Samples) > 0 {
		a, b := r.Samples[0], r.Samples[len(r.Samples)-1]
		fmt.Fprintf(w, "%-26s %12s %12s %22s\n", "", "start", "end", "slope/1000 (2nd half)")
		row := func(name string, x, y float64) {
			fmt.Fprintf(w, "%-26s %12.1f %12.1f %22.2f\n", name, x, y, r.Slopes[name])
		}
		for _, sr := range series {
			row(sr.name, sr.get(a), sr.get(b))
		}
		fmt.Fprintf(w, "renders %d in %v: %.1f a second\n", b.Renders, b.At, float64(b.Renders)/max(b.At.Seconds(), 1))
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "PASS: nothing grows without bound")
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func measure(ctx context.Context, svc *Service, root *Root, hc *http.Client) Sample {
	var s Sample
	s.ShotdRSS = memory(svc.PID(), "status", "VmRSS:")
	if ents, err := os.ReadDir("/proc/" + strconv.Itoa(svc.PID()) + "/fd"); err == nil {
		s.FDs = len(ents)
	}
	if g, err := Metric(ctx, hc, svc.Admin, "go_goroutines"); err == nil {
		s.Goroutines = int(g)
	}
	for _, p := range svc.Chrome("") {
		s.ChromePSS += memory(p.PID, "smaps_rollup", "Pss:")
		s.Chromes++
		if p.Kind() == KindRenderer {
			// One per tab (each alone in its browser context) and the start page: Chrome speaks
			// DevTools only over the service's pipe, so its targets are counted by their processes.
			s.Renderers++
		}
	}
	if fi, err := os.Stat(filepath.Join(root.DataDir, "shotd.db")); err == nil {
		s.BoltBytes = fi.Size()
	}
	return s
}

// memory reads a field in kB, such as VmRSS, from /proc/pid/file, in bytes.
func memory(pid int, file, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
