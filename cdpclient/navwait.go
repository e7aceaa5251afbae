package cdpclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shotd/shotd"
)

// Waiting beyond wait_until: navigation_timeout, scripts_wait_until, and the selector list of
// wait_for_selector.

var errNavigationTimeout = errors.New("navigation timeout")

// scriptsWaitIdle reports whether scripts_wait_until asks for a quiet network.
func (r *render) scriptsWaitIdle() bool {
	return r.scriptsIdleMax() >= 0
}

// scriptsIdleMax is how many requests may stay in flight after the scripts (networkidle0: 0,
// networkidle2: 2), -1 when scripts_wait_until asks for no network idleness.
func (r *render) scriptsIdleMax() int {
	n := -1
	for _, w := range r.o.ScriptsWaitUntil {
		switch w {
		case "networkidle0":
			n = 0
		case "networkidle2":
			if n < 0 {
				n = 2
			}
		}
	}
	return n
}

// navBounded bounds navigate and wait by navigation_timeout, counted from the navigation's start.
// The two share one context, which lives until the render's: navigate subscribes to events on it
// that wait reads, and a stream ends with its context.
func (r *render) navBounded(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		d := r.o.NavigationTimeout
		if d <= 0 || r.html {
			return run(ctx)
		}
		if r.side.navCtx == nil {
			nctx, cancel := context.WithDeadlineCause(ctx, time.Now().Add(d), errNavigationTimeout)
			context.AfterFunc(ctx, cancel)
			r.side.navCtx = nctx
		}
		nctx := r.side.navCtx
		err := run(nctx)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(nctx), errNavigationTimeout) {
			return shotd.Wrap(shotd.CodeTimeout, err, fmt.Sprintf("the page did not load within the navigation_timeout of %s", d))
		}
		return err
	}
}

// splitSelectorList cuts a CSS selector list at its top-level commas.
func splitSelectorList(sel string) []string {
	var parts []string
	depth, start := 0, 0
	var quote rune
	for i, c := range sel {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(sel[start:i]))
			start = i + 1
		}
	}
	parts = append(parts, strings.TrimSpace(sel[start:]))
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
