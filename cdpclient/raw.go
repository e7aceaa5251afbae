package cdpclient

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"

	"github.com/shotd/shotd"
)

// Kinds of RawLoop capture.
const (
	RawPNG      = "png"  // the viewport as PNG
	RawPDF      = "pdf"  // Page.printToPDF, A4, the file read back from its stream
	RawFullPage = "full" // the whole page as PNG, measured after the load, without scrolling
)

// RawLoop is the floor the service is measured against: ONE target, reused n times for navigate,
// wait for load, capture (kind), with none of Render's isolation, checks or options, pausing gap
// after each. It returns the duration of each iteration, pauses left out.
func RawLoop(ctx context.Context, p *Process, url, kind string, n int, gap time.Duration) ([]time.Duration, error) {
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
		if err := rawCapture(ctx, t, kind); err != nil {
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

// rawCapture takes the capture of one RawLoop iteration, with Chrome's defaults.
func rawCapture(ctx context.Context, t *tab, kind string) error {
	c := t.c
	switch kind {
	case RawPDF:
		pdf, err := c.Page.PrintToPDF(ctx, page.NewPrintToPDFArgs().SetPaperWidth(8.27).SetPaperHeight(11.69).
			SetTransferMode("ReturnAsStream"))
		if err != nil {
			return err
		}
		if pdf.Stream == nil {
			return fmt.Errorf("no stream")
		}
		_, err = readStream(ctx, c, *pdf.Stream, math.MaxInt64)
		return err
	case RawFullPage:
		res, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(measureHeightJS).SetReturnByValue(true))
		if err != nil {
			return err
		}
		var h float64
		if _, err := fmt.Sscan(string(res.Result.Value), &h); err != nil {
			return err
		}
		_, err = c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").
			SetClip(page.Viewport{Width: defaultWidth, Height: h, Scale: 1}).SetCaptureBeyondViewport(true))
		return err
	default:
		_, err := c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png"))
		return err
	}
}
