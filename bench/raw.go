package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/protocol/storage"

	"github.com/shotd/shotd/cdpclient"
)

// Kinds of raw capture.
const (
	rawPNG      = "png"  // the viewport as PNG
	rawPDF      = "pdf"  // Page.printToPDF, A4, the file read back from its stream
	rawFullPage = "full" // the whole page as PNG, measured after the load, without scrolling
)

// rawLoop is the floor the service is measured against: ONE target, reused n times for
// navigate, wait for load, capture (kind), with none of a render's isolation, checks or options,
// pausing gap after each (spread over a frame: pause). With clean, each capture is followed by
// the cheapest cleaning known to pass the service's isolation tests (rawClean), outside the
// iteration's duration as the service's wipe is outside its answer, but inside the loop's wall
// time. It returns the duration of each iteration, cleanings and pauses left out.
func rawLoop(ctx context.Context, p *cdpclient.Process, url, kind string, n int, gap time.Duration, clean bool) ([]time.Duration, error) {
	t, err := p.OpenTarget(ctx)
	if err != nil {
		return nil, fmt.Errorf("raw loop: open a target: %w", err)
	}
	defer t.Close()
	durs := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := rawLoad(ctx, t, url); err != nil {
			return durs, err
		}
		if err := rawCapture(ctx, t.Client, kind); err != nil {
			return durs, fmt.Errorf("raw loop: capture %d: %w", i, err)
		}
		durs = append(durs, time.Since(start))
		if clean {
			if err := rawClean(ctx, t, url); err != nil {
				return durs, fmt.Errorf("raw loop: clean %d: %w", i, err)
			}
		}
		if gap > 0 {
			select {
			case <-ctx.Done():
				return durs, ctx.Err()
			case <-time.After(pause(gap, i)):
			}
		}
	}
	return durs, nil
}

// rawLoad navigates t to url and waits for the load event of that navigation.
func rawLoad(ctx context.Context, t *cdpclient.Target, url string) error {
	nav, err := t.Client.Page.Navigate(ctx, page.NewNavigateArgs(url))
	if err != nil {
		return fmt.Errorf("raw loop: navigate: %w", err)
	}
	if nav.ErrorText != nil && *nav.ErrorText != "" {
		return fmt.Errorf("raw loop: navigation failed: %s", *nav.ErrorText)
	}
	if nav.LoaderID == nil {
		return nil // a same-document navigation: no load of its own
	}
	if err := t.AwaitLoad(ctx, *nav.LoaderID); err != nil {
		return fmt.Errorf("raw loop: lifecycle: %w", err)
	}
	return nil
}

// originStorage is the storage the service's wipe clears per origin (cdpclient's originStorage):
// every kind a page can write, the origin's cookies and the GPU shader cache left out.
const originStorage = "local_storage,indexeddb,cache_storage,service_workers,file_systems,websql,shared_storage,storage_buckets,interest_groups"

// rawClean is the clean floor's cleaning of t after a render of pageURL: the tab leaves the page
// for about:blank (a navigation from the browser, as the service's wipe makes it: the page's
// unload handlers run, its timers and workers end), then the context's cookies and HTTP cache
// and the page's origin's storage are cleared, the three calls at once.
func rawClean(ctx context.Context, t *cdpclient.Target, pageURL string) error {
	if err := rawLoad(ctx, t, "about:blank"); err != nil {
		return err
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		return err
	}
	c := t.Client
	calls := []func() error{
		func() error { return c.Network.ClearBrowserCookies(ctx) },
		func() error { return c.Network.ClearBrowserCache(ctx) },
		func() error {
			return c.Storage.ClearDataForOrigin(ctx, storage.NewClearDataForOriginArgs(u.Scheme+"://"+u.Host, originStorage))
		},
	}
	errs := make(chan error, len(calls))
	for _, f := range calls {
		go func() { errs <- f() }()
	}
	var all error
	for range calls {
		all = errors.Join(all, <-errs)
	}
	return all
}

// pageSizeJS measures the viewport's width and the page's height, as the service does before a
// full-page capture.
const pageSizeJS = `[window.innerWidth, Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)]`

// rawCapture takes the capture of one iteration, with Chrome's defaults but for PNGs, which are
// encoded with Chrome's fast encoder (optimizeForSpeed), as the service encodes them.
func rawCapture(ctx context.Context, c *cdp.Client, kind string) error {
	switch kind {
	case rawPDF:
		pdf, err := c.Page.PrintToPDF(ctx, page.NewPrintToPDFArgs().SetPaperWidth(8.27).SetPaperHeight(11.69).
			SetTransferMode("ReturnAsStream"))
		if err != nil {
			return err
		}
		if pdf.Stream == nil {
			return fmt.Errorf("no stream")
		}
		_, err = cdpclient.ReadStream(ctx, c, *pdf.Stream, 0) // read as the service reads a PDF
		return err
	case rawFullPage:
		res, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(pageSizeJS).SetReturnByValue(true))
		if err != nil {
			return err
		}
		var size [2]float64
		if err := json.Unmarshal(res.Result.Value, &size); err != nil {
			return fmt.Errorf("page size: %w", err)
		}
		_, err = c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").
			SetClip(page.Viewport{Width: size[0], Height: size[1], Scale: 1}).SetCaptureBeyondViewport(true).SetOptimizeForSpeed(true))
		return err
	default:
		_, err := c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").SetOptimizeForSpeed(true))
		return err
	}
}
