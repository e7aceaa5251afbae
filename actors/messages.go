package actors

import (
	"context"

	"github.com/shotd/shotd"
)

// Render asks the supervisor for one render. The reply is a *RenderResult.
type Render struct {
	Ctx     context.Context
	Options *shotd.Options
	// bounces counts the browser actors that could not take the render (their Chrome just
	// died or was taken out) and handed it back to the supervisor.
	bounces int
}

// RenderResult answers a Render.
type RenderResult struct {
	Output *shotd.Output
	Err    error
}

// ListBrowsers asks the supervisor for the state of its browsers; the reply is a *BrowsersResult.
type ListBrowsers struct{}

// BrowsersResult answers ListBrowsers.
type BrowsersResult struct {
	Browsers []shotd.BrowserInfo
}

// Messages from a browser actor to the supervisor.
type (
	// BrowserUp says the browser accepts renders on a new process, generation Gen.
	BrowserUp struct {
		ID, Gen, PID int
		// Replaced, when set, says why the process that served until now was replaced without
		// a BrowserDown ("recycled"): it takes no more renders, finishes those it has and is
		// closed.
		Replaced string
		// ReadyTabs, when the Browser reports them, counts its tabs ready for a render; safe
		// to call from any goroutine.
		ReadyTabs func() int
		// Background, when the Browser reports it, counts the tabs it is cleaning, disposing
		// or creating off the renders' path; safe to call from any goroutine.
		Background func() int
	}
	// BrowserDown says the browser takes no more renders until the next BrowserUp.
	BrowserDown struct {
		ID     int
		Reason string
	}
	// RenderFinished says a render slot of the browser is free again; Gen is the process
	// that rendered, Outcome how the render ended.
	RenderFinished struct {
		ID, Gen int
		Outcome RenderOutcome
	}
)

// Messages a browser actor sends itself from its goroutines.
type (
	chromeStarted struct {
		gen     int
		browser Browser
		taken   chan struct{} // closed by the actor: the process is its own from then on
	}
	chromeLaunchFailed struct {
		gen int
		err error
	}
	// ChromeExited merges the two crash signals, process exit and CDP disconnect, into one
	// message that carries the process generation so that the second signal is dropped.
	ChromeExited struct {
		Gen    int
		Reason string
	}
	chromeClosed struct {
		gen int
	}
	// chromeUnresponsive: the process of generation gen missed its health probe missed times
	// in a row.
	chromeUnresponsive struct {
		gen, missed int
	}
	// rendersTimingOut: the supervisor saw the process of generation gen time out timeouts
	// renders in a row while the pool's other browsers rendered.
	rendersTimingOut struct {
		gen, timeouts int
	}
	launchChrome struct{}
	renderDone   struct {
		gen int
	}
)

// RenderOutcome is how a render ended, as far as the health of its browser goes.
type RenderOutcome int

const (
	RenderOther    RenderOutcome = iota // a failure of the page's or the caller's making
	RenderOK                            // a file
	RenderTimedOut                      // timeout: the page's fault, or a browser that is stuck
)

// outcomeOf classifies a render's error for RenderFinished.
func outcomeOf(err error) RenderOutcome {
	switch {
	case err == nil:
		return RenderOK
	case shotd.CodeOf(err) == shotd.CodeTimeout:
		return RenderTimedOut
	}
	return RenderOther
}

// waiterExpired tells the supervisor that a queued render waited too long for a slot.
type waiterExpired struct {
	id uint64
}
