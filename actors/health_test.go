package actors_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/store"
)

// TestAllChromesStopped stops every Chrome of a pool of two at once (SIGSTOP: the processes
// live and keep their DevTools pipes, as in a deadlock), with renders waiting on both, one of
// them with a timeout shorter than the probes take, while clients keep sending renders. Each
// render is admitted and settled through the account actors as the HTTP API does. With the
// default probe settings both Chromes are taken out and replaced; every render in between fails
// as the service's fault (renderer_unavailable, or renderer_busy while the slots are held),
// released and never counted against the account, whose plan allows a single failure a minute;
// then the pool renders on two new Chromes.
func TestAllChromesStopped(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 2, SlotsPerBrowser: 2, SlotWait: 2 * time.Second,
		Launch: l.launch, Log: zerolog.Nop()})
	h := startAccounts(t, t.TempDir(), nil, 0)
	plan := testPlan("wedged")
	plan.MonthlyQuota, plan.Concurrency, plan.FailuresPerMinute = 1000, 20, 1
	acc := h.account(t, plan.Name, 0)
	srv, hit := fixture(t)
	waitUp(t, r, 2)

	var mu sync.Mutex
	successes := 0
	var failures []error
	// bill renders o as the API does: admitted, rendered, settled by the render's outcome.
	bill := func(o *shotd.Options) error {
		res, _, err := h.accounts.Admit(&actors.Admit{Account: acc, Plan: plan, Kind: actors.AdmitRender})
		if err == nil {
			_, err = render(r, o)
			if _, serr := h.accounts.Settle(acc.ID, res.Ticket, actors.OutcomeOf(err)); serr != nil {
				t.Error(serr)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			successes++
		} else {
			failures = append(failures, err)
		}
		return err
	}

	before, err := r.Browsers(time.Second)
	if err != nil || len(before) != 2 {
		t.Fatalf("browsers: %+v %v", before, err)
	}
	var waiting sync.WaitGroup
	lost := make(chan error, 3)
	for _, timeout := range []string{"60", "60", "5"} {
		waiting.Add(1)
		go func() {
			defer waiting.Done()
			lost <- bill(opts(t, "url", srv.URL+"/hang", "timeout", timeout))
		}()
	}
	for range 3 {
		waitHit(t, hit)
	}
	var stopped []int
	for _, b := range before {
		if err := syscall.Kill(b.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped = append(stopped, b.PID)
		defer syscall.Kill(b.PID, syscall.SIGCONT) // in case the test fails before the kill
	}

	// Three clients render, one render after another, until one succeeds.
	var recovered atomic.Bool
	deadline := time.Now().Add(60 * time.Second)
	var clients sync.WaitGroup
	for range 3 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for !recovered.Load() && time.Now().Before(deadline) {
				if bill(opts(t, "url", srv.URL, "viewport_width", "320", "viewport_height", "240")) == nil {
					recovered.Store(true)
				} else {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	clients.Wait()
	if !recovered.Load() {
		mu.Lock()
		codes := map[shotd.Code]int{}
		for _, err := range failures {
			codes[shotd.CodeOf(err)]++
		}
		mu.Unlock()
		t.Fatalf("no render succeeded within 60 s of stopping every Chrome; failures by code: %v", codes)
	}
	waiting.Wait()
	close(lost)
	for err := range lost {
		if shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
			t.Errorf("a render waiting on a stopped Chrome answered %v, want renderer_unavailable", err)
		}
	}

	// Both Chromes were replaced, and both new ones render.
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		bs, _ := r.Browsers(time.Second)
		if len(bs) == 2 && bs[0].Up && bs[1].Up && !slices.Contains(stopped, bs[0].PID) && !slices.Contains(stopped, bs[1].PID) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the pool did not replace both stopped Chromes %v: %+v", stopped, bs)
		}
	}
	var after sync.WaitGroup
	for range 4 { // two slots on each Chrome
		after.Add(1)
		go func() {
			defer after.Done()
			if err := bill(opts(t, "url", srv.URL)); err != nil {
				t.Errorf("render after the recovery: %v", err)
			}
		}()
	}
	after.Wait()
	for _, pid := range stopped {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !os.IsNotExist(err) {
			t.Errorf("the stopped chrome %d is still there", pid)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, err := range failures {
		if c := shotd.CodeOf(err); (c != shotd.CodeRendererUnavailable && c != shotd.CodeRendererBusy) || actors.OutcomeOf(err) != actors.Released {
			t.Errorf("a render failed with %v: not the service's fault, or counted", err)
		}
	}
	u, err := h.accounts.Usage(acc, plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Renders.Failed != 0 || u.Quota.Used != successes || u.Renders.Succeeded != successes {
		t.Errorf("usage %+v %+v after %d successes and %d failures: want the successes billed, no failure counted",
			u.Quota, u.Renders, successes, len(failures))
	}
	h.waitStored(t, acc, time.Now(), func(s store.Usage) bool { return s.Succeeded == successes && s.Failed == 0 })
	t.Logf("%d renders failed while every Chrome was stopped, none counted; %d succeeded", len(failures), successes)
	closePool()
	l.noneLeft(t)
	l.noDirsLeft(t)
}

// waitUp waits until n browsers of r take renders.
func waitUp(t *testing.T, r *actors.Renderer, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); r.Up() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d browsers up", r.Up(), n)
		}
	}
}

// waitHit waits until a render reached the fixture's hanging page.
func waitHit(t *testing.T, hit <-chan struct{}) {
	t.Helper()
	select {
	case <-hit:
	case <-time.After(20 * time.Second):
		t.Fatal("render never reached the page")
	}
}

// quickBrowser is a browser without Chrome: it renders in a few milliseconds, so that a test of
// the pool's own logic runs many renders and recycles in a moment.
type quickBrowser struct {
	pid  int
	exit chan struct{}
	once sync.Once
}

func (q *quickBrowser) PID() int                        { return q.pid }
func (q *quickBrowser) Exited() <-chan struct{}         { return q.exit }
func (q *quickBrowser) Disconnected() <-chan struct{}   { return nil }
func (q *quickBrowser) Probe(ctx context.Context) error { return nil }
func (q *quickBrowser) Close(ctx context.Context) error {
	q.once.Do(func() { close(q.exit) })
	return nil
}

func (q *quickBrowser) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	time.Sleep(5 * time.Millisecond)
	return &shotd.Output{Data: []byte("x"), Format: shotd.FormatPNG}, nil
}

// TestRecycleKeepsRendering: recycling is the pool's own maintenance, and no render fails for it.
// Each browser is replaced after 4 renders while clients keep every slot busy, and a new process
// takes longer to start than a render may wait for a slot. Renders that reach a browser which
// began its recycle after the supervisor chose it go to another one, and renders queued while a
// browser is replaced wait for it beyond the slot wait.
func TestRecycleKeepsRendering(t *testing.T) {
	var pids atomic.Int32
	launch := func(ctx context.Context) (actors.Browser, error) {
		if pids.Add(1) > 2 {
			time.Sleep(750 * time.Millisecond) // a relaunch, slower than the slot wait
		}
		return &quickBrowser{pid: int(pids.Load()), exit: make(chan struct{})}, nil
	}
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 2, SlotsPerBrowser: 2, RecycleAfter: 4,
		SlotWait: 500 * time.Millisecond, Launch: launch, Log: zerolog.Nop()})
	defer closePool()
	waitUp(t, r, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := render(r, opts(t, "url", "http://127.0.0.1:1/")); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	codes := map[shotd.Code]int{}
	for err := range errs {
		codes[shotd.CodeOf(err)]++
	}
	if len(codes) > 0 {
		t.Errorf("renders failed while browsers were recycled: %v", codes)
	}
	if n := pids.Load(); n < 10 {
		t.Errorf("%d processes for 80 renders, recycled after 4: the test did not recycle", n)
	}
}
