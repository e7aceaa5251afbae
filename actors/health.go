package actors

import (
	"context"
	"time"
)

// Health probe defaults. A Chrome whose browser process is stopped or deadlocked keeps its
// process and its DevTools socket: only asking it something shows it is gone. Its UI thread
// answers Browser.getVersion within milliseconds when well; the timeout leaves a loaded machine
// (2 cores rendering flat out) a wide margin, and three misses in a row take a stuck Chrome out
// about 15 s after it stopped, well before clients give up on their retries.
const (
	defaultProbeEvery    = 2 * time.Second
	defaultProbeTimeout  = 3 * time.Second
	defaultProbeFailures = 3
)

// health is the probing of one browser actor's processes.
type health struct {
	every, timeout time.Duration
	failures       int
}

func newHealth(cfg PoolConfig) health {
	h := health{every: cfg.ProbeEvery, timeout: cfg.ProbeTimeout, failures: cfg.ProbeFailures}
	if h.every <= 0 {
		h.every = defaultProbeEvery
	}
	if h.timeout <= 0 {
		h.timeout = defaultProbeTimeout
	}
	if h.failures <= 0 {
		h.failures = defaultProbeFailures
	}
	return h
}

// watch probes br until it exits, and calls unresponsive once when it missed h.failures probes
// in a row. It runs on a goroutine of its own: a probe waits up to h.timeout, which no mailbox
// may.
func (h health) watch(br Browser, unresponsive func(missed int)) {
	missed := 0
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	for {
		select {
		case <-br.Exited():
			return
		case <-br.Disconnected():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		err := br.Probe(ctx)
		cancel()
		if err == nil {
			missed = 0
			continue
		}
		if missed++; missed >= h.failures {
			unresponsive(missed)
			return
		}
	}
}

// answers probes br once: whether it answers within h.timeout. A render that timed out asks it,
// to tell a slow page (its renderer busy, the browser answering) from a stuck browser.
func (h health) answers(br Browser) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	return br.Probe(ctx) == nil
}
