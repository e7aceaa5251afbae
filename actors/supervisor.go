package actors

import (
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// supervisor owns the browser actors and their render slots. It hands each render to the up
// browser with the fewest renders in flight, and queues a render for at most slotWait when every
// slot is taken.
type supervisor struct {
	cfg   PoolConfig
	ready *atomic.Int32
	log   zerolog.Logger

	browsers   []*slotState
	waiters    []*waiter
	nextWaiter uint64
	lastPick   int // index in browsers of the last dispatch
}

type slotState struct {
	pid *actor.PID
	up  bool
	// inflight counts the renders in flight on all of the browser's processes: a process it
	// replaced finishes its renders in the same slots.
	inflight int
	renders  int // renders sent to the current process
	// Renders of the current process that timed out in a row, and the successes of the other
	// browsers when this one last gave a file (or its process came up).
	timeouts, othersAtLastOK int
	successes                int // renders of this browser that gave a file, all processes
	chrome                   int // OS pid of the current process
	gen                      int
	// readyTabs counts the current process's ready tabs; nil when its Browser does not say.
	readyTabs func() int
	// background counts the current process's tabs in cleaning, disposal or creation; nil
	// when its Browser does not say.
	background func() int
}

type waiter struct {
	id     uint64
	msg    *Render
	sender *actor.PID
	at     time.Time // when the render asked for a slot
}

func (s *supervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for i := 0; i < s.cfg.Size; i++ {
			b := &browserActor{id: i, launch: s.cfg.Launch, recycleAfter: s.cfg.RecycleAfter,
				health: newHealth(s.cfg), log: s.log.With().Int("browser", i).Logger()}
			props := childProps(func() actor.Actor {
				// A restart calls the producer again: hand out a fresh actor with the same identity.
				return &browserActor{id: b.id, launch: b.launch, recycleAfter: b.recycleAfter, health: b.health, log: b.log}
			})
			pid, err := ctx.SpawnNamed(props, "browser-"+strconv.Itoa(i))
			if err != nil {
				s.log.Error().Err(err).Msg("spawn browser actor")
				continue
			}
			s.browsers = append(s.browsers, &slotState{pid: pid})
		}
	case *Render:
		s.dispatch(ctx, &waiter{msg: m, sender: ctx.Sender(), at: time.Now()}, true)
	case *BrowserUp:
		if b := s.browser(m.ID); b != nil {
			b.up, b.chrome, b.gen, b.readyTabs, b.background = true, m.PID, m.Gen, m.ReadyTabs, m.Background
			b.renders, b.timeouts, b.othersAtLastOK = 0, 0, s.successesBesides(b)
		}
		if m.Replaced != "" && s.cfg.ChromeReplaced != nil {
			s.cfg.ChromeReplaced(m.Replaced)
		}
		s.publishReady()
		s.drainWaiters(ctx)
	case *BrowserDown:
		if b := s.browser(m.ID); b != nil {
			b.up = false
		}
		if s.cfg.ChromeReplaced != nil {
			s.cfg.ChromeReplaced(m.Reason)
		}
		s.publishReady()
	case *RenderFinished:
		if b := s.browser(m.ID); b != nil {
			if b.inflight > 0 {
				b.inflight--
			}
			s.watchOutcome(ctx, b, m)
		}
		s.drainWaiters(ctx)
	case *waiterExpired:
		for i, w := range s.waiters {
			if w.id == m.id {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				ctx.Send(w.sender, &RenderResult{Err: s.noSlotError()})
				break
			}
		}
	case *ListBrowsers:
		res := &BrowsersResult{}
		for i, b := range s.browsers {
			info := shotd.BrowserInfo{ID: i, PID: b.chrome, Gen: b.gen, Up: b.up, Inflight: b.inflight, Renders: b.renders}
			if b.up && b.readyTabs != nil {
				info.ReadyTabs = b.readyTabs()
			}
			res.Browsers = append(res.Browsers, info)
		}
		ctx.Respond(res)
	}
}

// dispatch sends w to a free slot, or queues it when queueing is allowed. It picks the browser
// with the fewest renders in flight, then the least background work (a tab being wiped after
// the previous answer holds Chrome's UI thread, which the next render's navigation needs), then
// the last one picked: renders one after another alternate while each wipes, and renders spaced
// out stay on one Chrome whose renderer and tab are still warm (an idle Chrome's first render is
// the slower one).
func (s *supervisor) dispatch(ctx actor.Context, w *waiter, queue bool) bool {
	var best *slotState
	bestBg := 0
	for i := range s.browsers {
		b := s.browsers[(s.lastPick+i)%len(s.browsers)]
		if !b.up || b.inflight >= s.cfg.SlotsPerBrowser {
			continue
		}
		bg := 0
		if b.background != nil {
			bg = b.background()
		}
		if best == nil || b.inflight < best.inflight || (b.inflight == best.inflight && bg < bestBg) {
			best, bestBg = b, bg
		}
	}
	if best != nil {
		s.lastPick = slices.Index(s.browsers, best)
		best.inflight++
		best.renders++
		if s.cfg.SlotWaited != nil {
			s.cfg.SlotWaited(time.Since(w.at))
		}
		ctx.RequestWithCustomSender(best.pid, w.msg, w.sender)
		return true
	}
	if !queue {
		return false
	}
	// Queue even when no browser is up: a restart takes seconds, and the waiter answers
	// renderer_unavailable at its deadline if none came back.
	s.nextWaiter++
	w.id = s.nextWaiter
	s.waiters = append(s.waiters, w)
	s.expireAfter(ctx, w, s.cfg.SlotWait)
	return false
}

// expireAfter sends waiterExpired for w after wait, or at its render's deadline if sooner.
func (s *supervisor) expireAfter(ctx actor.Context, w *waiter, wait time.Duration) {
	if dl, ok := w.msg.Ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = max(time.Until(dl), 0)
	}
	self, root, id := ctx.Self(), ctx.ActorSystem().Root, w.id
	time.AfterFunc(wait, func() { root.Send(self, &waiterExpired{id: id}) })
}

// stuckAfter is how many renders in a row may time out on one browser while the others render,
// before it is replaced. A page that always times out times out on every browser, and so
// replaces none; a Chrome stuck somewhere the health probe does not reach (a renderer process,
// the GPU process) makes its own renders time out alone.
const stuckAfter = 3

// watchOutcome replaces a browser whose renders time out one after another while the pool's
// other browsers give files: since its last file, they gave some and it timed out stuckAfter
// times in a row.
func (s *supervisor) watchOutcome(ctx actor.Context, b *slotState, m *RenderFinished) {
	switch {
	case m.Gen != b.gen:
		return // a render of a process that is gone
	case m.Outcome == RenderOK:
		b.successes++
		b.timeouts, b.othersAtLastOK = 0, s.successesBesides(b)
	case m.Outcome == RenderTimedOut:
		b.timeouts++
		if b.timeouts >= stuckAfter && s.successesBesides(b) > b.othersAtLastOK {
			ctx.Send(b.pid, &rendersTimingOut{gen: b.gen, timeouts: b.timeouts})
			b.timeouts = 0
		}
	}
}

// successesBesides counts the renders that gave a file on the browsers other than b.
func (s *supervisor) successesBesides(b *slotState) int {
	n := 0
	for _, o := range s.browsers {
		if o != b {
			n += o.successes
		}
	}
	return n
}

// drainWaiters hands queued renders to free slots, oldest first.
func (s *supervisor) drainWaiters(ctx actor.Context) {
	for len(s.waiters) > 0 {
		if !s.dispatch(ctx, s.waiters[0], false) {
			return
		}
		s.waiters = s.waiters[1:]
	}
}

func (s *supervisor) noSlotError() error {
	if s.ready.Load() == 0 {
		return shotd.Errorf(shotd.CodeRendererUnavailable, "no browser is up; retry after a short pause")
	}
	return shotd.Errorf(shotd.CodeRendererBusy, "all render slots are busy; retry after a short pause")
}

func (s *supervisor) browser(id int) *slotState {
	if id < 0 || id >= len(s.browsers) {
		return nil
	}
	return s.browsers[id]
}

func (s *supervisor) publishReady() {
	n := int32(0)
	for _, b := range s.browsers {
		if b.up {
			n++
		}
	}
	s.ready.Store(n)
}
