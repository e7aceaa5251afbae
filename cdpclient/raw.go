package cdpclient

import (
	"context"
	"fmt"
	"time"

	"github.com/mafredri/cdp/protocol/page"

	"github.com/shotd/shotd"
)

// RawLoop is the floor the service is measured against: ONE target, reused n times for navigate,
// wait for load, capture png, with none of Render's per-request isolation, pausing gap after
// each. It returns the duration of each iteration, pauses left out.
func RawLoop(ctx context.Context, p *Process, url string, n int, gap time.Duration) ([]time.Duration, error) {
	t, err := p.newTab(ctx)
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "raw loop: cannot open a target")
	}
	defer p.disposeTab(t)
	c := t.c
	// The same default viewport as Render (newTab sets it already), so that both capture the
	// same pixels.
	if err := t.setMetrics(ctx, defaultMetrics); err != nil {
		return nil, shotd.Wrap(shotd.CodeInternalError, err, "raw loop: emulation")
	}
	durs := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		nav, err := c.Page.Navigate(ctx, page.NewNavigateArgs(url))
		if err != nil {
			return durs, shotd.Wrap(shotd.CodeInternalError, err, "raw loop: navigate")
		}
		if nav.ErrorText != nil && *nav.ErrorText != "" {
			return durs, shotd.Wrap(shotd.CodeNavigationFailed, fmt.Errorf("%s", *nav.ErrorText), "raw loop: navigation failed")
		}
		for nav.LoaderID != nil {
			select {
			case <-ctx.Done():
				return durs, shotd.Wrap(shotd.CodeInternalError, ctx.Err(), "raw loop: cancelled")
			case <-t.lifecycle.Ready():
			}
			ev, err := t.lifecycle.Recv()
			if err != nil {
				return durs, shotd.Wrap(shotd.CodeInternalError, err, "raw loop: lifecycle")
			}
			if ev.FrameID == t.frameID && ev.LoaderID == *nav.LoaderID && ev.Name == "load" {
				break
			}
		}
		if _, err := c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png")); err != nil {
			return durs, shotd.Wrap(shotd.CodeInternalError, err, fmt.Sprintf("raw loop: capture %d", i))
		}
		durs = append(durs, time.Since(start))
		if gap > 0 {
			if err := sleep(ctx, gap); err != nil {
				return durs, shotd.Wrap(shotd.CodeInternalError, err, "raw loop: cancelled")
			}
		}
	}
	return durs, nil
}
