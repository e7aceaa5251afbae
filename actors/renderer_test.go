package actors_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/internal/testenv"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/option"
)

// launcher starts real Chromium processes and remembers every pid it started.
type launcher struct {
	path string
	dir  string // parent of the user-data dirs: empty again once the pool closed
	mu   sync.Mutex
	pids []int
	fail bool
}

func (l *launcher) launch(ctx context.Context) (actors.Browser, error) {
	if l.fail {
		return nil, errors.New("launch refused by test")
	}
	p, err := cdpclient.Launch(ctx, cdpclient.Config{Path: l.path, Isolation: testenv.Isolation(), Prewarm: 1, Dir: l.dir})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.pids = append(l.pids, p.PID())
	l.mu.Unlock()
	return p, nil
}

// noneLeft fails the test if any Chrome this launcher started is still a process (zombie or not).
func (l *launcher) noneLeft(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pid := range l.pids {
		if err := testkit.ProcessGone(pid, 5*time.Second); err != nil {
			t.Fatalf("chrome: %v", err)
		}
	}
}

// closeClean closes the pool and fails the test if a Chrome the launcher started, or a
// user-data dir, is left.
func (l *launcher) closeClean(t *testing.T, closePool func()) {
	t.Helper()
	closePool()
	l.noneLeft(t)
	testkit.DirEmpty(t, l.dir)
}

func newLauncher(t *testing.T) *launcher {
	return &launcher{path: mustBrowser(t), dir: t.TempDir()}
}

func newPool(t *testing.T, l *launcher, size, slots, recycle int, wait time.Duration) (*actors.Renderer, func()) {
	t.Helper()
	return newPoolConfig(t, actors.PoolConfig{Size: size, SlotsPerBrowser: slots, RecycleAfter: recycle,
		SlotWait: wait, Launch: l.launch, Log: zerolog.Nop()})
}

func newPoolConfig(t *testing.T, cfg actors.PoolConfig) (*actors.Renderer, func()) {
	t.Helper()
	sys := actors.NewSystem(zerolog.Nop())
	r, err := actors.StartRenderer(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		sys.Shutdown()
	}
}

func waitReady(t *testing.T, r *actors.Renderer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !r.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("pool not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func opts(t *testing.T, kv ...string) *shotd.Options {
	t.Helper()
	var ps option.Params
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, option.Param{Name: kv[i], Values: []string{kv[i+1]}})
	}
	o, err := option.ParseOptions(ps, option.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// fixture serves the pages renders load; /slow holds its answer longer than any test waits.
func fixture(t *testing.T) *testkit.Pages { return testkit.StartPages(t, 20*time.Second) }

// renderWhile has clients render o one after another, each until more says no or within, and
// returns the renders made and their failures by code.
func renderWhile(r *actors.Renderer, clients int, within time.Duration, o *shotd.Options, more func() bool) (int, map[shotd.Code]int) {
	var mu sync.Mutex
	n, codes := 0, map[shotd.Code]int{}
	deadline := time.Now().Add(within)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for more() && time.Now().Before(deadline) {
				_, err := render(r, o)
				mu.Lock()
				n++
				if err != nil {
					codes[shotd.CodeOf(err)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n, codes
}

func render(r *actors.Renderer, o *shotd.Options) (*shotd.Output, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout+5*time.Second)
	defer cancel()
	return r.Render(ctx, o)
}

func TestPoolRendersAndCloses(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPool(t, l, 2, 2, 0, 20*time.Second)
	waitReady(t, r)
	srv := fixture(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := render(r, opts(t, "url", srv.URL("/"), "viewport_width", "320", "viewport_height", "240"))
			if err == nil && (out == nil || len(out.Data) == 0) {
				err = errors.New("empty output")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("render: %v", err)
		}
	}
	l.closeClean(t, closePool)
}

// TestIdleBrowsersTakeTurns renders one page after another on a pool of two: each render goes to
// the browser that is not cleaning the previous render's tab, so both serve. Sent to the first
// browser every time, the next navigation would queue behind the wipe on its UI thread. How
// many each serves depends on how long the wipes last against the gaps between renders (on a
// loaded machine a wipe may end before the next render comes, which then stays where the last
// went): at least one each.
func TestIdleBrowsersTakeTurns(t *testing.T) {
	const n = 6
	bs := rendersOnTwo(t, n, false)
	for _, b := range bs {
		if b.Renders < 1 {
			t.Errorf("browser %d served %d of %d renders one after another: %+v", b.ID, b.Renders, n, bs)
		}
	}
}

// TestSpacedRendersStayWarm renders one page at a time on a pool of two, each once every tab is
// back in its pool: with no render in flight and no wipe under way anywhere, each goes to the
// browser that served the last one, whose renderer is warm, instead of alternating.
func TestSpacedRendersStayWarm(t *testing.T) {
	const n = 4
	bs := rendersOnTwo(t, n, true)
	served := 0
	for _, b := range bs {
		served = max(served, b.Renders)
	}
	if served != n {
		t.Errorf("spaced renders spread over browsers (most on one: %d of %d): %+v", served, n, bs)
	}
}

// rendersOnTwo renders n small pages one after another on a pool of two browsers whose tabs are
// all ready, waiting for every tab to be back in its pool after each render when spaced, and
// returns what each browser served.
func rendersOnTwo(t *testing.T, n int, spaced bool) []shotd.BrowserInfo {
	t.Helper()
	l := newLauncher(t)
	r, closePool := newPool(t, l, 2, 2, 0, 20*time.Second)
	defer closePool()
	waitUp(t, r, 2)
	// Up is not ready: a browser still making its first tabs has background work, and under
	// load every render would rightly go to the other one.
	poolsFull(t, r)
	srv := fixture(t)
	for range n {
		if _, err := render(r, opts(t, "url", srv.URL("/"), "viewport_width", "320", "viewport_height", "240")); err != nil {
			t.Fatalf("render: %v", err)
		}
		if spaced {
			poolsFull(t, r)
		}
	}
	bs, err := r.Browsers(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// renderHeld starts a render of the fixture's held page with a timeout of seconds on a pool of
// one Chrome, and returns the pid of that Chrome once the page is requested, and the render's
// error when it ends.
func renderHeld(t *testing.T, r *actors.Renderer, srv *testkit.Pages, seconds string) (int, <-chan error) {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		_, err := render(r, opts(t, "url", srv.URL("/slow"), "timeout", seconds))
		res <- err
	}()
	srv.WaitSlow(t, 1, 20*time.Second)
	bs, err := r.Browsers(time.Second)
	if err != nil || len(bs) != 1 || bs[0].PID == 0 {
		t.Fatalf("browsers: %+v %v", bs, err)
	}
	return bs[0].PID, res
}

// TestChromeKilledMidRender kills the whole Chrome process group with SIGKILL while a render is
// in flight: the render answers a retryable error, the pool comes back, and nothing is left.
func TestChromeKilledMidRender(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPool(t, l, 1, 2, 0, 5*time.Second)
	waitReady(t, r)
	srv := fixture(t)
	oldPID, res := renderHeld(t, r, srv, "30")
	if err := syscall.Kill(-oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		code := shotd.CodeOf(err)
		if err == nil || !shotd.Info(code).Retryable {
			t.Fatalf("render after kill: %v (code %s), want a retryable error", err, code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("render did not answer after the kill")
	}

	waitReplaced(t, r, oldPID, srv.URL("/"))
	l.closeClean(t, closePool)
}

// TestWedgedChromeReplaced stops the pool's only Chrome (SIGSTOP: the process lives and its
// DevTools socket stays open, as with a deadlocked browser) while a render waits on it: the
// health probe finds it, its process group is killed, the render answers renderer_unavailable
// (the service's fault: released, not counted) instead of waiting for its timeout, and a new
// Chrome renders.
func TestWedgedChromeReplaced(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 2, SlotWait: 5 * time.Second,
		ProbeEvery: 200 * time.Millisecond, ProbeTimeout: time.Second, ProbeFailures: 2, Launch: l.launch, Log: zerolog.Nop()})
	waitReady(t, r)
	srv := fixture(t)
	stopped, res := renderHeld(t, r, srv, "60")
	if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(stopped, syscall.SIGCONT) // in case the test fails before the kill
	select {
	case err := <-res:
		if code := shotd.CodeOf(err); code != shotd.CodeRendererUnavailable {
			t.Fatalf("render on the stopped Chrome: %v, want renderer_unavailable", err)
		}
		if shotd.OutcomeOf(err) != shotd.OutcomeReleased {
			t.Errorf("the lost render is not released: %v", shotd.OutcomeOf(err))
		}
	case <-time.After(50 * time.Second):
		t.Fatal("the render on the stopped Chrome did not answer")
	}
	waitReplaced(t, r, stopped, srv.URL("/"))
	l.closeClean(t, closePool)
}

// TestStuckBrowserReplaced stops every child process of one of two Chromes: its browser process
// still answers the health probe, but its renders hang. They time out one after another while
// the other browser's succeed, and it is replaced. With a context per render, making the
// render's target can hold the browser process too (full Chromium waits on its stopped GPU
// process), and then its renders end as renderer_unavailable, as they should.
func TestStuckBrowserReplaced(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 2, SlotsPerBrowser: 3, SlotWait: 5 * time.Second,
		ProbeEvery: time.Hour, Launch: l.launch, Log: zerolog.Nop()})
	defer closePool()
	waitUp(t, r, 2)
	bs, err := r.Browsers(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stuck := bs[0].PID
	// Every process of its group but the browser process itself: renderers, the GPU process,
	// the network service. The browser process answers the health probe; renders hang.
	var stopped []int
	for _, st := range proc.Members(stuck) {
		if st.PID != stuck {
			if err := syscall.Kill(st.PID, syscall.SIGSTOP); err == nil {
				stopped = append(stopped, st.PID)
			}
		}
	}
	defer func() {
		for _, pid := range stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	if len(stopped) == 0 {
		t.Fatalf("nothing to stop in chrome %d's group", stuck)
	}
	srv := fixture(t)
	var wg sync.WaitGroup
	codes := make(chan shotd.Code, 6)
	for range 6 {
		wg.Go(func() {
			// The caller waits past the render's own budget (its timeout and the capture's slack).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := r.Render(ctx, opts(t, "url", srv.URL("/"), "timeout", "1"))
			if err != nil && shotd.CodeOf(err) != shotd.CodeTimeout {
				t.Logf("render: %v", err)
			}
			codes <- shotd.CodeOf(err)
		})
	}
	wg.Wait()
	close(codes)
	held, all := 0, []shotd.Code{}
	for c := range codes {
		all = append(all, c)
		if c == shotd.CodeTimeout || (testenv.Isolation() == cdpclient.IsolationContext && c == shotd.CodeRendererUnavailable) {
			held++
		}
	}
	if held < 3 {
		t.Fatalf("%d renders held (%q); the stopped Chrome should hold 3", held, all)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		bs, _ := r.Browsers(time.Second)
		if len(bs) == 2 && bs[0].Up && bs[0].PID != stuck && bs[0].PID != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chrome %d, whose renders all time out, was not replaced: %+v", stuck, bs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 4 {
		if _, err := render(r, opts(t, "url", srv.URL("/"))); err != nil {
			t.Fatalf("render after the replacement: %v", err)
		}
	}
}

// waitReplaced waits until the one-browser pool r is up with a process other than old, then
// renders url on it and checks that old was reaped.
func waitReplaced(t *testing.T, r *actors.Renderer, old int, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		bs, _ := r.Browsers(time.Second)
		if len(bs) == 1 && bs[0].Up && bs[0].PID != old && bs[0].PID != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not replace chrome %d: %+v", old, bs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := render(r, opts(t, "url", url)); err != nil {
		t.Fatalf("render after recovery: %v", err)
	}
	if err := testkit.ProcessGone(old, 0); err != nil {
		t.Fatalf("replaced chrome: %v", err)
	}
}

func TestRendererBusyAndUnavailable(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		l := newLauncher(t)
		r, closePool := newPool(t, l, 1, 1, 0, 300*time.Millisecond)
		defer func() { closePool(); l.noneLeft(t) }()
		waitReady(t, r)
		srv := fixture(t)
		go render(r, opts(t, "url", srv.URL("/slow"), "timeout", "5"))
		srv.WaitSlow(t, 1, 20*time.Second)
		_, err := render(r, opts(t, "url", srv.URL("/")))
		if shotd.CodeOf(err) != shotd.CodeRendererBusy {
			t.Fatalf("got %v, want renderer_busy", err)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		l := &launcher{path: mustBrowser(t), dir: t.TempDir(), fail: true}
		r, closePool := newPool(t, l, 1, 1, 0, 300*time.Millisecond)
		defer closePool()
		_, err := render(r, opts(t, "url", "http://127.0.0.1:1/"))
		if shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
			t.Fatalf("got %v, want renderer_unavailable", err)
		}
		if r.Ready() {
			t.Fatal("ready without a browser")
		}
	})
}

// TestRecycleAfterN: a Chrome that was given recycle_after renders is replaced. The old one
// serves until its replacement is up, so renders one after another may outnumber recycle_after
// on one Chrome; they bring up a third all the same.
func TestRecycleAfterN(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPool(t, l, 1, 1, 2, 10*time.Second)
	defer func() { closePool(); l.noneLeft(t) }()
	waitReady(t, r)
	srv := fixture(t)
	launched := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.pids)
	}
	i := 0
	for deadline := time.Now().Add(60 * time.Second); launched() < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes launched for %d renders with recycle_after=2, want at least 3", launched(), i)
		}
		if _, err := render(r, opts(t, "url", srv.URL("/"))); err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
	}
}

func mustBrowser(t *testing.T) string {
	t.Helper()
	p, err := cdpclient.FindBrowser(testenv.Browser())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSlotFreeBeforeAnswer: when a render's answer arrives, the supervisor already counts its
// slot free, so that a client's next render goes to the same, idle browser (the first one)
// rather than to another because the first still looked busy.
func TestSlotFreeBeforeAnswer(t *testing.T) {
	l := newLauncher(t)
	r, closePool := newPool(t, l, 2, 2, 0, 20*time.Second)
	defer closePool()
	srv := fixture(t)
	waitUp(t, r, 2)
	for i := 0; i < 5; i++ {
		if _, err := render(r, opts(t, "url", srv.URL("/"), "viewport_width", "320", "viewport_height", "240")); err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		infos, err := r.Browsers(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range infos {
			if b.Inflight != 0 {
				t.Fatalf("after render %d answered, browser %d still has %d in flight", i, b.ID, b.Inflight)
			}
		}
	}
}

// heldBrowser is a real browser whose renders report back only once release is closed: a render
// whose goroutine is still finishing when its Chrome has died and been replaced.
type heldBrowser struct {
	actors.Browser
	release chan struct{}
}

func (h *heldBrowser) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	out, err := h.Browser.Render(ctx, o)
	<-h.release
	return out, err
}

// TestRecycleAfterDeadGenerationRender: a render of a Chrome that died reports back only after
// that Chrome's replacement was itself recycled: it neither holds up nor miscounts the recycle,
// and the browser serves on a third Chrome.
func TestRecycleAfterDeadGenerationRender(t *testing.T) {
	l := newLauncher(t)
	release := make(chan struct{})
	var first sync.Once
	launch := func(ctx context.Context) (actors.Browser, error) {
		b, err := l.launch(ctx)
		if err != nil {
			return nil, err
		}
		held := false
		first.Do(func() { held = true })
		if held {
			return &heldBrowser{Browser: b, release: release}, nil
		}
		return b, nil
	}
	sys := actors.NewSystem(zerolog.Nop())
	r, err := actors.StartRenderer(sys, actors.PoolConfig{Size: 1, SlotsPerBrowser: 2, RecycleAfter: 2,
		SlotWait: 10 * time.Second, Launch: launch, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		sys.Shutdown()
		l.noneLeft(t)
	}()
	waitReady(t, r)
	srv := fixture(t)
	bs, err := r.Browsers(time.Second)
	if err != nil || len(bs) != 1 {
		t.Fatalf("browsers: %+v %v", bs, err)
	}
	firstPID := bs[0].PID

	held := make(chan error, 1)
	go func() {
		_, err := render(r, opts(t, "url", srv.URL("/")))
		held <- err
	}()
	upOther := func(not ...int) int {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			bs, _ := r.Browsers(time.Second)
			if len(bs) == 1 && bs[0].Up && bs[0].PID != 0 && !slices.Contains(not, bs[0].PID) {
				return bs[0].PID
			}
		}
		t.Fatalf("no browser up other than %v", not)
		return 0
	}
	// The held render is in flight on the first Chrome: kill it, and a second one comes up.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if bs, _ := r.Browsers(time.Second); len(bs) == 1 && bs[0].Inflight == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held render is not in flight")
		}
	}
	if err := syscall.Kill(-firstPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	secondPID := upOther(firstPID)
	// Two renders on the second: it is due for recycling, and is replaced.
	for i := range 2 {
		if _, err := render(r, opts(t, "url", srv.URL("/"))); err != nil {
			t.Fatalf("render %d on the second chrome: %v", i, err)
		}
	}
	close(release) // the first Chrome's render reports back last
	<-held
	upOther(firstPID, secondPID)
	if _, err := render(r, opts(t, "url", srv.URL("/"))); err != nil {
		t.Fatalf("render after the recycle: %v", err)
	}
}

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
	srv := fixture(t)
	waitUp(t, r, 2)

	var mu sync.Mutex
	successes := 0
	var failures []error
	// bill renders o as the API does: admitted, rendered, settled by the render's outcome.
	bill := func(o *shotd.Options) error {
		res, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender})
		if err == nil {
			_, err = render(r, o)
			if _, serr := h.accounts.Settle(acc.ID, res.Ticket, shotd.OutcomeOf(err)); serr != nil {
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
			lost <- bill(opts(t, "url", srv.URL("/slow"), "timeout", timeout))
		}()
	}
	srv.WaitSlow(t, 3, 20*time.Second)
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
				if bill(opts(t, "url", srv.URL("/"), "viewport_width", "320", "viewport_height", "240")) == nil {
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
			if err := bill(opts(t, "url", srv.URL("/"))); err != nil {
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
		if c := shotd.CodeOf(err); (c != shotd.CodeRendererUnavailable && c != shotd.CodeRendererBusy) || shotd.OutcomeOf(err) != shotd.OutcomeReleased {
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
	h.waitStored(t, acc, time.Now(), func(s shotd.Usage) bool { return s.Succeeded == successes && s.Failed == 0 })
	t.Logf("%d renders failed while every Chrome was stopped, none counted; %d succeeded", len(failures), successes)
	l.closeClean(t, closePool)
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

// poolsFull waits until every browser of r has made its pool of tabs: all hold as many ready
// tabs, and that number has stayed the same for a quarter of a second.
func poolsFull(t *testing.T, r *actors.Renderer) {
	t.Helper()
	last, same := -1, 0
	for deadline := time.Now().Add(30 * time.Second); same < 5; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the browsers' pools of tabs did not fill")
		}
		bs, err := r.Browsers(time.Second)
		if err != nil || len(bs) == 0 {
			continue
		}
		n := bs[0].ReadyTabs
		for _, b := range bs {
			if !b.Up || b.ReadyTabs != n {
				n = -1
			}
		}
		if n > 0 && n == last {
			same++
		} else {
			same = 0
		}
		last = n
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
// takes longer to start than a render may wait for a slot: the old process serves until its
// replacement is up.
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
	rendered, codes := renderWhile(r, 4, 30*time.Second, opts(t, "url", "http://127.0.0.1:1/"), func() bool { return pids.Load() < 10 })
	if len(codes) > 0 {
		t.Errorf("renders failed while browsers were recycled: %v", codes)
	}
	if n := pids.Load(); n < 10 {
		t.Errorf("%d processes for %d renders, recycled after 4: the test did not recycle", n, rendered)
	}
}

// TestRecycleMakesBeforeBreak: a pool of one Chrome, recycled every 3 renders while two clients
// render one page after another, never goes without a browser. The replacement comes up while
// the old Chrome still takes renders; the old one then finishes its renders and is closed, and
// its processes and user-data dir are gone while the pool renders on. A render never waits for
// a browser to come back, so with a slot wait far shorter than a Chrome's launch none fails.
func TestRecycleMakesBeforeBreak(t *testing.T) {
	l := newLauncher(t)
	var mu sync.Mutex
	var downs []string
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 2, RecycleAfter: 3,
		SlotWait: 300 * time.Millisecond, Launch: l.launch, Log: zerolog.Nop(),
		ChromeReplaced: func(reason string) { mu.Lock(); downs = append(downs, reason); mu.Unlock() }})
	waitReady(t, r)
	srv := fixture(t)
	launched := func() []int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.Clone(l.pids)
	}

	// Watch the pool's up count closely: a recycle that takes the only browser out drops it to
	// 0 for its drain, close and launch, hundreds of milliseconds at the least.
	var empty atomic.Int32
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if r.Up() == 0 {
				empty.Add(1)
			}
		}
	}()
	const recycles = 4
	o := opts(t, "url", srv.URL("/"), "viewport_width", "320", "viewport_height", "240")
	_, codes := renderWhile(r, 2, 90*time.Second, o, func() bool { return len(launched()) <= recycles })
	close(stop)
	<-watched
	if len(codes) > 0 {
		t.Errorf("renders failed while the only browser was recycled: %v", codes)
	}
	if n := empty.Load(); n > 0 {
		t.Errorf("the pool had no browser up in %d looks during recycles", n)
	}
	if n := len(launched()); n <= recycles {
		t.Fatalf("%d processes launched: the test recycled fewer than %d times", n, recycles)
	}

	// The last Chrome launched serves, and every one before it is gone. (One more recycle may
	// be under way: its Chrome is not in pids yet.)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		bs, _ := r.Browsers(time.Second)
		pids := launched()
		if len(bs) == 1 && bs[0].Up && bs[0].Inflight == 0 && bs[0].PID == pids[len(pids)-1] {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the pool did not settle on its last Chrome %d: %+v", pids[len(pids)-1], bs)
		}
	}
	pids := launched()
	for _, pid := range pids[:len(pids)-1] {
		if err := testkit.GroupGone(pid, "", 10*time.Second); err != nil {
			t.Errorf("recycled chrome: %v", err)
		}
		if err := testkit.ProcessGone(pid, 5*time.Second); err != nil {
			t.Errorf("recycled chrome: %v", err)
		}
	}
	// Close removes the user-data dir after the process is reaped.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(l.dir, "shotd-chrome-*"))
		if len(dirs) == 1 {
			break
		}
		if time.Now().After(end) {
			t.Errorf("user-data dirs with one Chrome up: %v", dirs)
			break
		}
	}
	mu.Lock()
	reasons := slices.Clone(downs)
	mu.Unlock()
	if want := slices.Repeat([]string{"recycled"}, len(reasons)); len(reasons) < len(pids)-1 || !slices.Equal(reasons, want) {
		t.Errorf("reported %q for %d recycles, want each once as \"recycled\"", reasons, len(pids)-1)
	}
	if _, err := render(r, opts(t, "url", srv.URL("/"))); err != nil {
		t.Errorf("render after the recycles: %v", err)
	}
	l.closeClean(t, closePool)
}

// gatedBrowser is a browser without Chrome whose renders wait for gate to close, or for the
// browser's own close.
type gatedBrowser struct {
	quickBrowser
	gate chan struct{}
}

func (g *gatedBrowser) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	select {
	case <-g.gate:
		return g.quickBrowser.Render(ctx, o)
	case <-g.exit:
		return nil, shotd.Errorf(shotd.CodeRendererUnavailable, "closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestStopDuringRecycle: a pool stopped in the middle of a recycle closes every process of it,
// the one serving, a replacement still launching, an old one still finishing a render, before
// its Close returns.
func TestStopDuringRecycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		// launchDelay: how long the replacement takes to launch; holdFirst: the first
		// process's renders never end on their own.
		launchDelay time.Duration
		holdFirst   bool
	}{
		{name: "replacement launching", launchDelay: 500 * time.Millisecond},
		{name: "old one finishing a render", holdFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var all []*gatedBrowser
			open := make(chan struct{})
			close(open)
			launch := func(ctx context.Context) (actors.Browser, error) {
				mu.Lock()
				b := &gatedBrowser{quickBrowser: quickBrowser{pid: len(all) + 1, exit: make(chan struct{})}, gate: open}
				if len(all) == 0 && tc.holdFirst {
					b.gate = make(chan struct{})
				}
				first := len(all) == 0
				all = append(all, b)
				mu.Unlock()
				if !first {
					time.Sleep(tc.launchDelay)
				}
				return b, nil
			}
			r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 2, RecycleAfter: 1,
				SlotWait: time.Second, Launch: launch, Log: zerolog.Nop()})
			waitUp(t, r, 1)
			res := make(chan error, 1)
			go func() {
				_, err := render(r, opts(t, "url", "http://127.0.0.1:1/"))
				res <- err
			}()
			if tc.holdFirst {
				// The replacement is up while the first process still has its render.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if bs, _ := r.Browsers(time.Second); len(bs) == 1 && bs[0].Up && bs[0].PID == 2 && bs[0].Inflight == 1 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the replacement did not come up beside the busy first process")
					}
				}
			} else if err := <-res; err != nil {
				t.Fatalf("render: %v", err)
			}
			closePool()
			mu.Lock()
			defer mu.Unlock()
			if len(all) != 2 {
				t.Fatalf("%d processes launched, want the first and its replacement", len(all))
			}
			for _, b := range all {
				select {
				case <-b.exit:
				default:
					t.Errorf("process %d is still open after the pool closed", b.pid)
				}
			}
			if tc.holdFirst {
				if err := <-res; shotd.CodeOf(err) != shotd.CodeRendererUnavailable {
					t.Errorf("the render on the closed process answered %v", err)
				}
			}
		})
	}
}

// TestRecycleFaults: faults in the middle of a recycle. The current process dies while its
// replacement launches: the replacement takes over, and no third process is launched. The
// replacement fails to launch: the current process serves on, and the launch is tried again.
func TestRecycleFaults(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		killFirst, failSecond bool
		wantUp                int // the process up at the end, and the launches it took
		wantReasons           []string
	}{
		{name: "current dies while the replacement launches", killFirst: true, wantUp: 2, wantReasons: []string{"process exited"}},
		{name: "replacement fails to launch", failSecond: true, wantUp: 3, wantReasons: []string{"recycled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var launches atomic.Int32
			var first atomic.Pointer[quickBrowser]
			launch := func(ctx context.Context) (actors.Browser, error) {
				n := launches.Add(1)
				b := &quickBrowser{pid: int(n), exit: make(chan struct{})}
				switch {
				case n == 1:
					first.Store(b)
				case n == 2 && tc.failSecond:
					return nil, errors.New("launch refused by test")
				case n == 2:
					time.Sleep(300 * time.Millisecond)
				}
				return b, nil
			}
			var mu sync.Mutex
			var downs []string
			r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 2, RecycleAfter: 1,
				SlotWait: time.Second, Launch: launch, Log: zerolog.Nop(),
				ChromeReplaced: func(reason string) { mu.Lock(); downs = append(downs, reason); mu.Unlock() }})
			defer closePool()
			waitUp(t, r, 1)
			if _, err := render(r, opts(t, "url", "http://127.0.0.1:1/")); err != nil {
				t.Fatal(err)
			}
			if tc.killFirst {
				first.Load().Close(context.Background())
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if !tc.killFirst && r.Up() == 0 {
					t.Fatal("the pool went down while a replacement failed to launch")
				}
				if bs, _ := r.Browsers(time.Second); len(bs) == 1 && bs[0].Up && bs[0].PID == tc.wantUp {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("process %d did not come up", tc.wantUp)
				}
			}
			time.Sleep(500 * time.Millisecond) // time for a launch too many
			if n := launches.Load(); int(n) != tc.wantUp {
				t.Errorf("%d launches, want %d", n, tc.wantUp)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(downs, tc.wantReasons) {
				t.Errorf("replacements reported %q, want %q", downs, tc.wantReasons)
			}
		})
	}
}

// stallBrowser is a browser without Chrome whose renders time out and which then, if it stalls,
// misses its probes, as a page that stalls Chrome would leave it.
type stallBrowser struct {
	quickBrowser
	stalls  bool // whether a render leaves the browser unanswering
	stalled atomic.Bool
}

func (s *stallBrowser) Probe(ctx context.Context) error {
	if s.stalled.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (s *stallBrowser) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	s.stalled.Store(s.stalls)
	return nil, shotd.Errorf(shotd.CodeTimeout, "the render did not finish")
}

// TestStalledChromeRenderLost: a render that times out on a browser that then misses a probe is
// the service's (renderer_unavailable, released), as ARCHITECTURE's liveness rule has it, and is
// marked ErrBrowserLost, which bounds a job's retries of it (TestJobBrowserLostBounded); a render
// that times out on a browser that answers is the page's (timeout, counted).
func TestStalledChromeRenderLost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stall   bool
		code    shotd.Code
		outcome shotd.Outcome
		lost    bool
	}{
		{name: "browser stops answering", stall: true, code: shotd.CodeRendererUnavailable, outcome: shotd.OutcomeReleased, lost: true},
		{name: "browser answers", stall: false, code: shotd.CodeTimeout, outcome: shotd.OutcomeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			launch := func(ctx context.Context) (actors.Browser, error) {
				b := &stallBrowser{quickBrowser: quickBrowser{pid: 1, exit: make(chan struct{})}}
				b.stalls = tc.stall
				return b, nil
			}
			r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 1, SlotWait: time.Second,
				ProbeEvery: time.Hour, Launch: launch, Log: zerolog.Nop()})
			defer closePool()
			waitUp(t, r, 1)
			_, err := r.Render(context.Background(), opts(t, "url", "http://127.0.0.1:1/"))
			if code := shotd.CodeOf(err); code != tc.code || shotd.OutcomeOf(err) != tc.outcome || errors.Is(err, actors.ErrBrowserLost) != tc.lost {
				t.Fatalf("render: %v (%s, %v, lost %v), want %s, %v, lost %v", err, code, shotd.OutcomeOf(err), errors.Is(err, actors.ErrBrowserLost), tc.code, tc.outcome, tc.lost)
			}
		})
	}
}

// panicBrowser panics in its renders of one URL, as a bug would.
type panicBrowser struct{ quickBrowser }

func (b *panicBrowser) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	if strings.Contains(o.URL, "panic") {
		panic("a bug in the render")
	}
	return b.quickBrowser.Render(ctx, o)
}

// TestRenderPanicAnswered: a render that panics answers internal_error and gives its slot
// back; the service and the browser's other renders go on.
func TestRenderPanicAnswered(t *testing.T) {
	launch := func(ctx context.Context) (actors.Browser, error) {
		return &panicBrowser{quickBrowser{pid: 1, exit: make(chan struct{})}}, nil
	}
	r, closePool := newPoolConfig(t, actors.PoolConfig{Size: 1, SlotsPerBrowser: 1, SlotWait: time.Second, Launch: launch, Log: zerolog.Nop()})
	defer closePool()
	waitUp(t, r, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 { // one slot: a slot the panic kept would refuse the next
		if _, err := r.Render(ctx, opts(t, "url", "http://127.0.0.1:1/panic")); shotd.CodeOf(err) != shotd.CodeInternalError {
			t.Fatalf("a render that panicked: %v, want internal_error", err)
		}
		if _, err := r.Render(ctx, opts(t, "url", "http://127.0.0.1:1/")); err != nil {
			t.Fatalf("the next render: %v", err)
		}
	}
}

// TestStopDuringLaunch: a Chrome that hangs at its start does not hold the pool's Close: the
// launch is cut when the pool stops, not only at its own bound.
func TestStopDuringLaunch(t *testing.T) {
	started := make(chan struct{}, 1)
	launch := func(ctx context.Context) (actors.Browser, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done() // hangs until the launch is cut
		return nil, ctx.Err()
	}
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	r, err := actors.StartRenderer(sys, actors.PoolConfig{Size: 1, SlotsPerBrowser: 1, Launch: launch, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the launch's own bound is 60 s
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("close during a hanging launch: %v", err)
	}
}
