package actors

import (
	"context"
	"errors"
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
	Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error)
	// Probe asks the browser process for a trivial answer: it fails when the process does not
	// answer in time although it lives (stopped, deadlocked).
	Probe(ctx context.Context) error
	Close(ctx context.Context) error
}

// Launcher starts one Chrome process.
type Launcher func(ctx context.Context) (Browser, error)

// browserActor owns one Chrome process: it alone starts, restarts, recycles and stops it.
type browserActor struct {
	id           int
	launch       Launcher
	recycleAfter int
	health       health
	log          zerolog.Logger

	gen      int     // generation of the current (or launching) process
	browser  Browser // nil while launching or down
	draining bool    // recycling: no new renders, close when inflight reaches 0
	inflight int
	renders  int
	failures int // consecutive failed or short-lived launches, for backoff
	upSince  time.Time
	closing  chan struct{} // closed once the process of the current gen was closed

	// A launch goroutine owns its process until the actor takes it (chromeStarted.taken); one
	// that the actor has not taken when it stops (stop) closes the process itself, so that a
	// stop never leaves a Chrome behind, whatever the order of the messages.
	launches sync.WaitGroup
	stop     context.Context
	stopAll  context.CancelFunc
}

func (b *browserActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		b.stop, b.stopAll = context.WithCancel(context.Background())
		b.startLaunch(ctx)
	case *launchChrome:
		if b.browser == nil && b.closing == nil {
			b.startLaunch(ctx)
		}
	case *chromeStarted:
		b.started(ctx, m)
	case *chromeLaunchFailed:
		if m.gen != b.gen {
			return
		}
		b.failures++
		d := backoff(b.failures)
		b.log.Error().Err(m.err).Int("chrome_gen", m.gen).Dur("retry_in", d).Msg("chrome launch failed")
		b.relaunchAfter(ctx, d)
	case *Render:
		b.render(ctx, m)
	case *renderDone:
		b.inflight-- // the render's goroutine told the supervisor already
		// inflight counts the renders of every generation, draining is the current one's: the
		// last render to end may be one of a Chrome that died before, and the recycle is due
		// all the same.
		if b.draining && b.inflight == 0 {
			b.failures = 0 // it served its renders: healthy, however short its life
			b.closeCurrent(ctx, "recycled")
		}
	case *chromeUnresponsive:
		b.replaceStuck(ctx, m.gen, "unresponsive", "chrome does not answer its health probe: killed and replaced", "missed", m.missed)
	case *rendersTimingOut:
		b.replaceStuck(ctx, m.gen, "renders time out",
			"chrome's renders time out one after another while the other browsers render: killed and replaced", "timeouts", m.timeouts)
	case *ChromeExited:
		if m.Gen != b.gen || b.browser == nil {
			return // the second signal of the same death, or an old process
		}
		b.log.Warn().Int("chrome_gen", m.Gen).Int("pid", b.browser.PID()).Str("reason", m.Reason).Msg("chrome died")
		b.ended()
		b.closeCurrent(ctx, m.Reason)
	case *chromeClosed:
		if m.gen != b.gen {
			return
		}
		b.closing = nil
		d := backoff(b.failures)
		if b.failures == 0 {
			d = 0 // it ended healthy (recycled, or after a long life): replaced at once
		}
		b.relaunchAfter(ctx, d)
	case *ListBrowsers:
		info := shotd.BrowserInfo{ID: b.id, Gen: b.gen, Up: b.browser != nil && !b.draining, Inflight: b.inflight, Renders: b.renders}
		if b.browser != nil {
			info.PID = b.browser.PID()
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
	if time.Since(b.upSince) < 30*time.Second {
		b.failures++
	} else {
		b.failures = 0
	}
}

// maxBounces bounds how often a render is handed back to the supervisor (render).
const maxBounces = 4

// startLaunch launches a process of a new generation in a goroutine.
func (b *browserActor) startLaunch(ctx actor.Context) {
	b.gen++
	gen, self, root, stop := b.gen, ctx.Self(), ctx.ActorSystem().Root, b.stop
	b.launches.Add(1)
	go func() {
		defer b.launches.Done()
		lctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	if m.gen != b.gen || b.browser != nil {
		// A launch that finished after we moved on: close it, it is ours alone.
		go m.browser.Close(context.Background())
		return
	}
	b.browser, b.draining, b.renders, b.upSince = m.browser, false, 0, time.Now()
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
	ctx.Send(ctx.Parent(), up)
}

// render runs one render in a goroutine; the reply goes straight to the requester.
func (b *browserActor) render(ctx actor.Context, m *Render) {
	sender := ctx.Sender()
	if b.browser == nil || b.draining {
		ctx.Send(ctx.Parent(), &RenderFinished{ID: b.id})
		if m.bounces < maxBounces {
			// The supervisor sent it before it heard this browser's BrowserDown, which reaches
			// it before this: handed back, the render goes to another browser or waits for a
			// slot instead of failing while the pool still has one. The other browser may have
			// begun its own recycle meanwhile, hence more than one bounce; the bound is only
			// against a loop.
			ctx.RequestWithCustomSender(ctx.Parent(), &Render{Ctx: m.Ctx, Options: m.Options, bounces: m.bounces + 1}, sender)
			return
		}
		ctx.Send(sender, &RenderResult{Err: shotd.Errorf(shotd.CodeRendererUnavailable, "the browser is restarting")})
		return
	}
	b.inflight++
	b.renders++
	if b.recycleAfter > 0 && b.renders >= b.recycleAfter && !b.draining {
		b.draining = true
		ctx.Send(ctx.Parent(), &BrowserDown{ID: b.id, Reason: "recycling"})
	}
	gen, self, parent, root, br := b.gen, ctx.Self(), ctx.Parent(), ctx.ActorSystem().Root, b.browser
	id := b.id
	go func() {
		out, err := br.Render(m.Ctx, m.Options)
		if shotd.CodeOf(err) == shotd.CodeTimeout && !b.health.answers(br) {
			// A render on a Chrome that stopped answering times out before the probes take
			// the Chrome out: the service's fault, not the page's, so released and retried
			// like the renders that the replacement ends.
			err = shotd.Wrap(shotd.CodeRendererUnavailable, err, "the browser stopped answering during the render")
		}
		// The slot is given back before the answer goes out: the supervisor then sees it free
		// before the requester's next render arrives.
		root.Send(parent, &RenderFinished{ID: id, Gen: gen, Outcome: outcomeOf(err)})
		root.Send(self, &renderDone{gen: gen})
		root.Send(sender, &RenderResult{Output: out, Err: err})
	}()
}

// closeCurrent takes the current process down in a goroutine; chromeClosed follows.
func (b *browserActor) closeCurrent(ctx actor.Context, reason string) {
	br := b.browser
	if br == nil {
		return
	}
	b.browser = nil
	b.draining = false
	ctx.Send(ctx.Parent(), &BrowserDown{ID: b.id, Reason: reason})
	gen, self, root := b.gen, ctx.Self(), ctx.ActorSystem().Root
	done := make(chan struct{})
	b.closing = done
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
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(d, func() { root.Send(self, &launchChrome{}) })
}

// stopNow closes the process synchronously: the actor is stopping and must not leave Chrome behind.
func (b *browserActor) stopNow() {
	b.gen++
	if b.stopAll != nil {
		b.stopAll()
	}
	b.launches.Wait() // a launch not taken closes its process itself
	if b.browser != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := b.browser.Close(cctx); err != nil && !errors.Is(err, context.Canceled) {
			b.log.Warn().Err(err).Msg("chrome close on stop")
		}
		cancel()
		b.browser = nil
	}
	if b.closing != nil {
		select {
		case <-b.closing:
		case <-time.After(20 * time.Second):
		}
	}
}

// replaceStuck kills and replaces the process of generation gen, still running but stuck (its
// probe or its renders say so); an older generation is gone already.
func (b *browserActor) replaceStuck(ctx actor.Context, gen int, reason, msg, countName string, count int) {
	if gen != b.gen || b.browser == nil {
		return
	}
	b.ended()
	b.log.Error().Int("chrome_gen", gen).Int("pid", b.browser.PID()).Int(countName, count).Msg(msg)
	b.closeCurrent(ctx, reason)
}
