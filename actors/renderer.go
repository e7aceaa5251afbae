package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// PoolConfig sizes the browser pool.
type PoolConfig struct {
	Size            int           // Chrome processes
	SlotsPerBrowser int           // renders one process serves at once
	RecycleAfter    int           // renders before a process is replaced; 0 = never
	SlotWait        time.Duration // how long a render waits for a free slot
	// Health: every ProbeEvery each Chrome must answer a probe within ProbeTimeout; after
	// ProbeFailures misses in a row it is killed and replaced. Zero values take the defaults
	// (health.go).
	ProbeEvery    time.Duration
	ProbeTimeout  time.Duration
	ProbeFailures int
	Launch        Launcher
	Log           zerolog.Logger
	// ChromeReplaced, when set, hears once why each Chrome was replaced: "process exited",
	// "unresponsive", ... when it stopped taking renders, "recycled" when its replacement took
	// over from it. For /metrics.
	ChromeReplaced func(reason string)
	// SlotWaited, when set, hears how long each render waited for a free slot before it went to
	// a browser (0 when one was free). For /metrics; called in the supervisor: it must not block.
	SlotWaited func(time.Duration)
}

// Renderer is the render pool seen from outside the actor system: it asks the supervisor and
// waits for the answer on a future, so callers never touch actors.
type Renderer struct {
	sys   *actor.ActorSystem
	sup   *actor.PID
	ready atomic.Int32
}

// StartRenderer spawns the supervisor and its browser actors.
func StartRenderer(sys *actor.ActorSystem, cfg PoolConfig) (*Renderer, error) {
	if cfg.Size < 1 || cfg.SlotsPerBrowser < 1 || cfg.Launch == nil {
		return nil, errors.New("actors: pool needs a size, slots and a launcher")
	}
	if cfg.SlotWait <= 0 {
		cfg.SlotWait = 2 * time.Second
	}
	r := &Renderer{sys: sys}
	props := topProps(func() actor.Actor {
		return &supervisor{cfg: cfg, ready: &r.ready, log: cfg.Log}
	})
	pid, err := sys.Root.SpawnNamed(props, "renderer")
	if err != nil {
		return nil, err
	}
	r.sup = pid
	return r, nil
}

// Render renders o on a free browser. Errors are catalogue errors.
func (r *Renderer) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	wait := o.RenderBudget() + 30*time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl) + 5*time.Second // the render ends at its deadline; this is a backstop
	}
	res, err := r.sys.Root.RequestFuture(r.sup, &Render{Ctx: ctx, Options: o}, wait).Result()
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "the renderer did not answer in time")
	}
	rr, ok := res.(*RenderResult)
	if !ok {
		return nil, shotd.Wrap(shotd.CodeInternalError, errors.New("unexpected renderer reply"), "internal error")
	}
	return rr.Output, rr.Err
}

// Ready reports whether at least one browser is up.
func (r *Renderer) Ready() bool { return r.ready.Load() > 0 }

// Up is the number of browsers that accept renders.
func (r *Renderer) Up() int { return int(r.ready.Load()) }

// Browsers lists the browsers as the supervisor sees them.
func (r *Renderer) Browsers(timeout time.Duration) ([]shotd.BrowserInfo, error) {
	res, err := r.sys.Root.RequestFuture(r.sup, &ListBrowsers{}, timeout).Result()
	if err != nil {
		return nil, err
	}
	return res.(*BrowsersResult).Browsers, nil
}

// Close stops the supervisor and its browser actors; every Chrome process is closed when it
// returns.
func (r *Renderer) Close(ctx context.Context) error {
	fut := r.sys.Root.StopFuture(r.sup)
	done := make(chan error, 1)
	go func() { done <- fut.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
