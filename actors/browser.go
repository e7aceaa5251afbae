package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// Browser is one running Chrome process. cdpclient.Process implements it.
type Browser interface {
	PID() int
	Exited() <-chan struct{}
	Disconnected() <-chan struct{}
	shotd.Renderer
	// Probe asks the browser process for a trivial answer: it fails when the process does not
	// answer in time although it lives (stopped, deadlocked).
	Probe(ctx context.Context) error
	Close(ctx context.Context) error
}

// ErrBrowserLost marks a render whose browser stopped (died, or was replaced by the liveness
// watch) while it rendered: renderer_unavailable, released, and retried a bounded number of
// times by a job (maxBrowserLosses).
var ErrBrowserLost = errors.New("the browser was lost during the render")

// Launcher starts one Chrome process.
type Launcher func(ctx context.Context) (Browser, error)

// browserActor owns the Chrome processes of one browser of the pool: it alone starts, restarts,
// recycles and stops them. One process at a time takes renders. A recycle launches the
// replacement while the current process serves on, so that the browser never goes without
// one; a process that stopped taking renders finishes those it has and is then closed.
type browserActor struct {
	id           int
	launch       Launcher
	recycleAfter int
	health       health
	log          zerolog.Logger

	cur       *chrome   // the process that takes renders; nil while down
	retiring  []*chrome // processes out of service: finishing their renders, or closing
	lastGen   int       // the generation of the last launch
	launching int       // the generation of the launch under way; 0 when none
	timers    int       // launchChrome messages scheduled and not received yet
	failures  int       // consecutive failed or short-lived launches, for backoff

	// A launch goroutine owns its process until the actor takes it (chromeStarted.taken); one
	// that the actor has not taken when it stops (stop) closes the process itself, so that a
	// stop never leaves a Chrome behind, whatever the order of the messages.
	launches sync.WaitGroup
	stop     context.Context
	stopAll  context.CancelFunc
}

// chrome is one process of a browser actor.
type chrome struct {
	gen      int
	br       Browser
	inflight int // renders it has not finished
	renders  int // renders it was given
	upSince  time.Time
	// recycling: its replacement was asked for, it serves until that one is up.
	recycling bool
	// relaunch: a fault took it out of service, and the browser has no process until another
	// launch; its close is followed by one, unless one came up meanwhile.
	relaunch bool
	closed   chan struct{} // set when its close begins, closed when the close is over
}

func (b *browserActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		b.stop, b.stopAll = context.WithCancel(context.Background())
		b.startLaunch(ctx)
	case *launchChrome:
		b.timers--
		if b.cur == nil && b.launching == 0 {
			b.startLaunch(ctx)
		} else {
			b.recycleIfDue(ctx)
		}
	case *chromeStarted:
		b.started(ctx, m)
	case *chromeLaunchFailed:
		if m.gen != b.launching {
			return
		}
		b.launching = 0
		b.failures++
		d := backoff(b.failures)
		l := b.log.Error().Err(m.err).Int("chrome_gen", m.gen).Dur("retry_in", d)
		if b.cur != nil {
			l.Int("serving_gen", b.cur.gen).Msg("replacement chrome launch failed; the current one serves on")
		} else {
			l.Msg("chrome launch failed")
		}
		b.relaunchAfter(ctx, d)
	case *Render:
		b.render(ctx, m)
	case *renderDone:
		// The render's goroutine told the supervisor already. A process closed since is no
		// longer known: nothing to count.
		p := b.process(m.gen)
		if p == nil {
			return
		}
		p.inflight--
		if p != b.cur && p.closed == nil && p.inflight == 0 {
			b.closeProcess(ctx, p) // replaced, and its last render is done
		}
	case *chromeUnresponsive:
		b.replaceStuck(ctx, m.gen, "unresponsive", "chrome does not answer its health probe: killed and replaced", "missed", m.missed)
	case *rendersTimingOut:
		b.replaceStuck(ctx, m.gen, "renders time out",
			"chrome's renders time out one after another while the other browsers render: killed and replaced", "timeouts", m.timeouts)
	case *ChromeExited:
		p := b.process(m.Gen)
		if p == nil || p.closed != nil {
			return // the second signal of the same death, or a process we closed
		}
		b.log.Warn().Int("chrome_gen", m.Gen).Int("pid", p.br.PID()).Str("reason", m.Reason).Bool("serving", p == b.cur).Msg("chrome died")
		if p != b.cur {
			b.closeProcess(ctx, p) // replaced already: its renders fail on their own
			return
		}
		b.ended()
		b.closeCurrent(ctx, m.Reason)
	case *chromeClosed:
		i := slices.IndexFunc(b.retiring, func(p *chrome) bool { return p.gen == m.gen })
		if i < 0 {
			return
		}
		p := b.retiring[i]
		b.retiring = slices.Delete(b.retiring, i, i+1)
		if p.relaunch && b.cur == nil && b.launching == 0 {
			d := backoff(b.failures)
			if b.failures == 0 {
				d = 0 // it ended healthy, after a long life: replaced at once
			}
			b.relaunchAfter(ctx, d)
		}
		b.recycleIfDue(ctx)
	case *ListBrowsers:
		info := shotd.BrowserInfo{ID: b.id, Gen: b.lastGen}
		for _, p := range b.retiring {
			info.Inflight += p.inflight
		}
		if p := b.cur; p != nil {
			info.Gen, info.PID, info.Up, info.Renders = p.gen, p.br.PID(), true, p.renders
			info.Inflight += p.inflight
		}
		ctx.Respond(&info)
	case *actor.Stopping, *actor.Restarting:
		b.stopNow()
	}
}

// ended counts the end of the current process for the relaunch's backoff: one that ends
// within 30 s of its start is a failure (a crash loop backs off), one that lived longer clears
// the count, so that a Chrome that dies or wedges after a long healthy life is relaunched at once
// rather than after the backoff of failures long past.
func (b *browserActor) ended() {
	if time.Since(b.cur.upSince) < 30*time.Second {
		b.failures++
	} else {
		b.failures = 0
	}
}

// maxBounces bounds how often a render is handed back to the supervisor (render).
const maxBounces = 4

// process finds the process of generation gen, in service or retiring.
func (b *browserActor) process(gen int) *chrome {
	if b.cur != nil && b.cur.gen == gen {
		return b.cur
	}
	for _, p := range b.retiring {
		if p.gen == gen {
			return p
		}
	}
	return nil
}

// startLaunch launches a process of a new generation in a goroutine.
func (b *browserActor) startLaunch(ctx actor.Context) {
	b.lastGen++
	b.launching = b.lastGen
	gen, self, root, stop := b.lastGen, ctx.Self(), ctx.ActorSystem().Root, b.stop
	b.launches.Add(1)
	go func() {
		defer b.launches.Done()
		// Cut by the actor's stop too: a Chrome hanging at its start must not hold the service's
		// shutdown past its budget.
		lctx, cancel := context.WithTimeout(stop, 60*time.Second)
		defer cancel()
		br, err := b.launch(lctx)
		if err != nil {
			root.Send(self, &chromeLaunchFailed{gen: gen, err: err})
			return
		}
		taken := make(chan struct{})
		root.Send(self, &chromeStarted{gen: gen, browser: br, taken: taken})
		select {
		case <-taken:
		case <-stop.Done():
			// The actor stopped. It closes taken before it cancels stop, both in Receive:
			// a process it took before is its own to close.
			select {
			case <-taken:
			default:
				_ = br.Close(lctx)
			}
		}
	}()
}

func (b *browserActor) started(ctx actor.Context, m *chromeStarted) {
	close(m.taken)
	if m.gen != b.launching {
		// A launch that finished after we moved on: ours alone, closed like a retired process.
		p := &chrome{gen: m.gen, br: m.browser}
		b.retiring = append(b.retiring, p)
		b.closeProcess(ctx, p)
		return
	}
	b.launching = 0
	old := b.cur
	b.cur = &chrome{gen: m.gen, br: m.browser, upSince: time.Now()}
	b.log.Info().Int("chrome_gen", m.gen).Int("pid", m.browser.PID()).Msg("chrome up")
	gen, self, root, br := m.gen, ctx.Self(), ctx.ActorSystem().Root, m.browser
	go func() {
		reason := "process exited"
		select {
		case <-br.Exited():
		case <-br.Disconnected():
			reason = "cdp connection closed"
		}
		root.Send(self, &ChromeExited{Gen: gen, Reason: reason})
	}()
	go b.health.watch(br, func(missed int) { root.Send(self, &chromeUnresponsive{gen: gen, missed: missed}) })
	up := &BrowserUp{ID: b.id, Gen: m.gen, PID: m.browser.PID()}
	if rt, ok := m.browser.(interface{ ReadyTabs() int }); ok {
		up.ReadyTabs = rt.ReadyTabs
	}
	if bg, ok := m.browser.(interface{ Background() int }); ok {
		up.Background = bg.Background
	}
	if old != nil {
		// The replacement of a recycle: the renders come here from now on, and the old
		// process is closed once it finished those it has.
		up.Replaced = "recycled"
		b.retiring = append(b.retiring, old)
		if old.inflight == 0 {
			b.closeProcess(ctx, old)
		}
	}
	ctx.Send(ctx.Parent(), up)
}

// render runs one render in a goroutine; the reply goes straight to the requester.
func (b *browserActor) render(ctx actor.Context, m *Render) {
	sender := ctx.Sender()
	p := b.cur
	if p == nil {
		ctx.Send(ctx.Parent(), &RenderFinished{ID: b.id})
		if m.bounces < maxBounces {
			// The supervisor sent it before it heard this browser's BrowserDown, which reaches
			// it before this: handed back, the render goes to another browser or waits for a
			// slot instead of failing while the pool still has one. The other browser may have
			// lost its Chrome meanwhile too, hence more than one bounce; the bound is only
			// against a loop.
			ctx.RequestWithCustomSender(ctx.Parent(), &Render{Ctx: m.Ctx, Options: m.Options, bounces: m.bounces + 1}, sender)
			return
		}
		ctx.Send(sender, &RenderResult{Err: shotd.Errorf(shotd.CodeRendererUnavailable, "the browser is restarting")})
		return
	}
	p.inflight++
	p.renders++
	b.recycleIfDue(ctx)
	gen, self, parent, root, br := p.gen, ctx.Self(), ctx.Parent(), ctx.ActorSystem().Root, p.br
	id := b.id
	go func() {
		out, err := renderContained(m.Ctx, br, m.Options, b.log)
		// A timeout counts towards the stuck-render watch (supervisor.watchOutcome) whatever
		// the requester is told: a Chrome that does not answer after it is as stuck.
		outcome := outcomeOf(err)
		switch {
		case shotd.CodeOf(err) == shotd.CodeTimeout && !b.health.answers(br):
			// The browser process itself stopped answering: the service's fault (503,
			// unbilled, not counted), like the renders the replacement ends. Marked lost, so
			// that a job retries a page that stalls Chrome each time only maxBrowserLosses
			// times before that failure becomes the account's.
			err = shotd.Wrap(shotd.CodeRendererUnavailable, fmt.Errorf("%w: %w", ErrBrowserLost, err), "the browser stopped answering during the render")
		case err != nil && shotd.CodeOf(err) == shotd.CodeRendererUnavailable:
			err = shotd.Wrap(shotd.CodeRendererUnavailable, fmt.Errorf("%w: %w", ErrBrowserLost, err), shotd.AsError(err).Message)
		}
		// The slot is given back before the answer goes out: the supervisor then sees it free
		// before the requester's next render arrives.
		root.Send(parent, &RenderFinished{ID: id, Gen: gen, Outcome: outcome})
		root.Send(self, &renderDone{gen: gen})
		root.Send(sender, &RenderResult{Output: out, Err: err})
	}()
}

// renderContained is br.Render with a panic in it turned into internal_error: the render's
// answer and slot still go out, and the service and its other renders go on.
func renderContained(ctx context.Context, br Browser, o *shotd.Options, log zerolog.Logger) (out *shotd.Output, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error().Interface("panic", v).Bytes("stack", debug.Stack()).Msg("a render panicked")
			out, err = nil, shotd.Errorf(shotd.CodeInternalError, "the render failed on the service's side")
		}
	}()
	return br.Render(ctx, o)
}

// recycleIfDue launches the replacement of the current process once that one was given
// recycleAfter renders; started swaps them. One launch at a time, none before a retry's
// backoff has passed, and none while a process is still retiring, so that recycles never pile
// up Chromes when renders outpace launches.
func (b *browserActor) recycleIfDue(ctx actor.Context) {
	p := b.cur
	if p == nil || b.recycleAfter <= 0 || p.renders < b.recycleAfter || b.launching != 0 || b.timers > 0 || len(b.retiring) > 0 {
		return
	}
	if !p.recycling {
		p.recycling = true
		b.failures = 0 // it served its renders: healthy, however short its life
		b.log.Info().Int("chrome_gen", p.gen).Int("pid", p.br.PID()).Int("renders", p.renders).Msg("recycling chrome")
	}
	b.startLaunch(ctx)
}

// closeCurrent takes the current process out of service and closes it: the browser is down
// until a launch brings up another process.
func (b *browserActor) closeCurrent(ctx actor.Context, reason string) {
	p := b.cur
	if p == nil {
		return
	}
	b.cur = nil
	p.relaunch = true
	ctx.Send(ctx.Parent(), &BrowserDown{ID: b.id, Reason: reason})
	b.retiring = append(b.retiring, p)
	b.closeProcess(ctx, p)
}

// closeProcess closes p, a retiring process, in a goroutine; chromeClosed follows.
func (b *browserActor) closeProcess(ctx actor.Context, p *chrome) {
	done := make(chan struct{})
	p.closed = done
	gen, br, self, root := p.gen, p.br, ctx.Self(), ctx.ActorSystem().Root
	go func() {
		defer close(done)
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := br.Close(cctx); err != nil {
			b.log.Warn().Err(err).Int("chrome_gen", gen).Msg("chrome close")
		}
		root.Send(self, &chromeClosed{gen: gen})
	}()
}

func (b *browserActor) relaunchAfter(ctx actor.Context, d time.Duration) {
	b.timers++
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, &launchChrome{}) })
}

// stopNow closes every process of the actor and waits for them: the actor is stopping and must
// not leave Chrome behind.
func (b *browserActor) stopNow() {
	b.launching = 0
	if b.stopAll != nil {
		b.stopAll()
	}
	b.launches.Wait() // a launch not taken closes its process itself
	if b.cur != nil {
		b.retiring = append(b.retiring, b.cur)
		b.cur = nil
	}
	var wg sync.WaitGroup
	for _, p := range b.retiring {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p.closed != nil {
				select {
				case <-p.closed:
				case <-time.After(20 * time.Second):
				}
				return
			}
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := p.br.Close(cctx); err != nil && !errors.Is(err, context.Canceled) {
				b.log.Warn().Err(err).Int("chrome_gen", p.gen).Msg("chrome close on stop")
			}
		}()
	}
	wg.Wait()
	b.retiring = nil
}

// replaceStuck kills the process of generation gen, still running but stuck (its probe or its
// renders say so), and replaces it when it is the current one; a retiring one is only closed.
func (b *browserActor) replaceStuck(ctx actor.Context, gen int, reason, msg, countName string, count int) {
	p := b.process(gen)
	if p == nil || p.closed != nil {
		return
	}
	l := b.log.Error().Int("chrome_gen", gen).Int("pid", p.br.PID()).Int(countName, count)
	if p != b.cur {
		// Replaced already: killed, so that its last renders end now rather than at their
		// deadlines.
		l.Str("reason", reason).Msg("a replaced chrome still finishing its renders is stuck: killed")
		b.closeProcess(ctx, p)
		return
	}
	l.Msg(msg)
	b.ended()
	b.closeCurrent(ctx, reason)
}
