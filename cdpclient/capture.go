package cdpclient

import (
	"context"
	"fmt"
	"image"
	"math"
	"time"

	"github.com/mafredri/cdp/protocol/page"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/media"
)

// Limits of a capture, in device pixels.
const (
	// maxSingleShot is the tallest capture Chrome makes in one go; taller ones are taken in
	// tiles of tileHeight and stitched. Chrome's compositor textures top out at 16,384 px on
	// many GPUs; beyond that a single capture can come out repeated or blank.
	maxSingleShot = 16384
	tileHeight    = 8192
	// maxCapturePixels bounds the stitched image (4 bytes a pixel: 512 MiB). A full page is cut
	// to it; a larger clip or element is content_too_large.
	maxCapturePixels = 1 << 27
	defaultMaxHeight = 20000 // full_page_max_height when the parser did not set it
)

// maxDimension is the largest width or height each encoder can write.
var maxDimension = map[string]int{
	shotd.FormatPNG:  1 << 30, // no limit of its own; maxCapturePixels bounds it
	shotd.FormatJPEG: 65535,
	shotd.FormatWebP: 16383,
	// The formats media encodes from a PNG. heif: x265 writes one HEVC picture, whose
	// levels end near 16,888 px a side.
	shotd.FormatGIFStill: 65535,
	shotd.FormatAVIF:     65536,
	shotd.FormatTIFF:     1 << 30,
	shotd.FormatJP2:      1 << 30,
	shotd.FormatHEIF:     16384,
}

// chromeEncodes reports whether Chrome's capture writes format itself.
func chromeEncodes(format string) bool {
	return format == shotd.FormatPNG || format == shotd.FormatJPEG || format == shotd.FormatWebP
}

// area is a part of the page in CSS pixels, document coordinates.
type area struct {
	x, y, w, h float64
	fullPage   bool // cut rather than refused when too large
}

// screenshot captures the area the options ask for and encodes it in the output format.
func (r *render) screenshot(ctx context.Context) error {
	a, err := r.area(ctx)
	if err != nil {
		return err
	}
	resize := r.o.ImageWidth > 0 || r.o.ImageHeight > 0
	if a == nil {
		// The viewport as it is (a click may have scrolled it), encoded by Chrome.
		if !resize && chromeEncodes(r.format) {
			r.data, err = r.shoot(ctx, r.format, nil)
			return err
		}
		data, err := r.shoot(ctx, shotd.FormatPNG, nil)
		if err != nil {
			return err
		}
		w, h, err := imageSize(shotd.FormatPNG, data)
		if err != nil {
			return err
		}
		return r.finish(ctx, []tile{{0, data}}, w, h)
	}
	dw, dh := r.devicePx(a.w), r.devicePx(a.h)
	if dw < 1 || dh < 1 {
		return shotd.Errorf(shotd.CodeInvalidOptions, "the area to capture is empty")
	}
	// The encoder's limit applies to the capture only when it is not resized.
	limit := maxDimension[r.format]
	if resize {
		limit = maxDimension[shotd.FormatPNG]
	}
	if dw > limit {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the capture is %d px wide; %s allows at most %d", dw, r.format, limit)
	}
	if maxH := min(limit, maxCapturePixels/dw); dh > maxH {
		if !a.fullPage {
			return shotd.Errorf(shotd.CodeContentTooLarge, "the capture is %dx%d px; at most %d px high fit at this width in %s", dw, dh, maxH, r.format)
		}
		a.h = math.Floor(float64(maxH) / r.scale)
		dh = r.devicePx(a.h)
	}
	if a.fullPage && r.o.FullPageAlgorithm == "by_sections" {
		tiles, err := r.bySections(ctx, a) // fullpage.go
		if err != nil {
			return err
		}
		return r.finish(ctx, tiles, dw, dh)
	}
	if !resize && dh <= maxSingleShot && chromeEncodes(r.format) {
		r.data, err = r.shoot(ctx, r.format, a.clip())
		return err
	}
	// Lossless tiles, composed and encoded once.
	tiles, err := r.tiles(ctx, a, dh)
	if err != nil {
		return err
	}
	return r.finish(ctx, tiles, dw, dh)
}

// finish stitches the PNG tiles of a dw x dh capture, resizes the result as image_width and
// image_height ask, and encodes it in the output format.
func (r *render) finish(ctx context.Context, tiles []tile, dw, dh int) error {
	f := fitLayout(dw, dh, r.o.ImageWidth, r.o.ImageHeight, r.o.ImageFit, r.o.ImagePosition, r.o.ImageBackground)
	ow, oh := f.w, f.h
	if lim := maxDimension[r.format]; ow > lim || oh > lim {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the image would be %dx%d px; %s allows at most %d", ow, oh, r.format, lim)
	}
	if int64(ow)*int64(oh) > maxCapturePixels {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the image would be %dx%d px, more than %d pixels", ow, oh, maxCapturePixels)
	}
	if media.IsStill(r.format) && len(tiles) == 1 {
		// A capture as it is goes to the encoder as Chrome wrote it, without a decode.
		if w, h, err := imageSize(shotd.FormatPNG, tiles[0].data); err == nil && f.at == image.Rect(0, 0, w, h) && w == ow && h == oh {
			return r.encodeStill(ctx, tiles[0].data, w, h)
		}
	}
	img, err := composeFit(tiles, dw, dh, f)
	if err != nil {
		return err
	}
	if media.IsStill(r.format) {
		b := img.Bounds()
		if r.o.Slices {
			data, err := fastPNG(img)
			if err != nil {
				return err
			}
			return r.encodeStill(ctx, data, b.Dx(), b.Dy())
		}
		r.stillSize = image.Pt(b.Dx(), b.Dy())
	}
	r.data, err = r.encode(ctx, img)
	return err
}

func (r *render) devicePx(css float64) int { return int(math.Round(css * r.scale)) }

func (a *area) clip() *page.Viewport {
	return &page.Viewport{X: a.x, Y: a.y, Width: a.w, Height: a.h, Scale: 1}
}

// outputSize is the size after image_width and image_height: one of them keeps the aspect
// ratio, both give the exact size, none keeps the capture's size.
func outputSize(w, h, ow, oh int) (int, int) {
	switch {
	case ow > 0 && oh > 0:
		return ow, oh
	case ow > 0:
		return ow, max(1, int(math.Round(float64(h)*float64(ow)/float64(w))))
	case oh > 0:
		return max(1, int(math.Round(float64(w)*float64(oh)/float64(h)))), oh
	}
	return w, h
}

// tile is one PNG capture and the device row of the whole capture it starts at.
type tile struct {
	y    int
	data []byte
}

// tiles captures a as PNG, in slices of at most tileHeight device pixels when it is taller
// than maxSingleShot.
func (r *render) tiles(ctx context.Context, a *area, dh int) ([]tile, error) {
	if dh <= maxSingleShot {
		data, err := r.shoot(ctx, shotd.FormatPNG, a.clip())
		if err != nil {
			return nil, err
		}
		return []tile{{0, data}}, nil
	}
	step := math.Floor(tileHeight / r.scale) // CSS px per tile
	var ts []tile
	for top := 0.0; top < a.h; top += step {
		// One CSS px more than the step: with a fractional device scale the tiles' device
		// heights round, and the overlap (overwritten by the next tile) leaves no empty row.
		part := &area{x: a.x, y: a.y + top, w: a.w, h: min(step+1, a.h-top)}
		data, err := r.shoot(ctx, shotd.FormatPNG, part.clip())
		if err != nil {
			return nil, err
		}
		ts = append(ts, tile{y: r.devicePx(top), data: data})
	}
	return ts, nil
}

// area resolves selector, clip and full_page into the part of the page to capture; nil is the
// viewport.
func (r *render) area(ctx context.Context) (*area, error) {
	o := r.o
	switch {
	case o.Selector != "":
		box, err := r.elementBox(ctx, o.Selector)
		if err != nil {
			return nil, err
		}
		if o.HasClip {
			// With a selector, the clip options cut inside the element's box (the parser refuses
			// clip_width with selector).
			box.x += float64(o.ClipX)
			box.y += float64(o.ClipY)
			box.w -= float64(o.ClipX)
			box.h -= float64(o.ClipY)
			if o.ClipHeight > 0 {
				box.h = min(box.h, float64(o.ClipHeight))
			}
			if box.w <= 0 || box.h <= 0 {
				return nil, shotd.Errorf(shotd.CodeSelectorNotFound, "the clip leaves nothing of the element %q", clipText(o.Selector))
			}
		}
		return box, nil
	case o.HasClip:
		return &area{x: float64(o.ClipX), y: float64(o.ClipY), w: float64(o.ClipWidth), h: float64(o.ClipHeight)}, nil
	case o.FullPage:
		h, err := r.pageHeight(ctx)
		if err != nil {
			return nil, err
		}
		maxH := o.FullPageMaxHeight
		if maxH <= 0 {
			maxH = defaultMaxHeight
		}
		return &area{w: float64(r.width), h: math.Min(h, float64(maxH)), fullPage: true}, nil
	}
	return nil, nil
}

// elementBoxJS scrolls the first match of sel into view, so that lazy content in it loads, and
// returns its box in document coordinates.
var elementBoxJS = withShadowQuery(`async (sel, scroll = true) => {
	const el = shotdQuery(sel);
	if (!el) return {found: false};
	if (scroll) el.scrollIntoView({block: 'center', inline: 'nearest', behavior: 'instant'});
	await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res)));
	const r = el.getBoundingClientRect();
	return {found: true, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height};
}`)

// elementBox waits for the first match of sel and returns its box, rounded out to whole CSS
// pixels.
func (r *render) elementBox(ctx context.Context, sel string) (*area, error) {
	if err := r.waitElement(ctx, "selector", sel, false); err != nil {
		return nil, err
	}
	var b struct {
		Found      bool `json:"found"`
		X, Y, W, H float64
	}
	if err := r.eval(ctx, jsCall(elementBoxJS, sel, !r.o.SelectorNoScroll), &b); err != nil {
		return nil, err
	}
	if !b.Found || !(b.W > 0 && b.H > 0) || math.IsInf(b.W+b.H+b.X+b.Y, 0) || math.IsNaN(b.X+b.Y) {
		return nil, shotd.Errorf(shotd.CodeSelectorNotFound, "nothing matched selector %q", clipText(sel))
	}
	x0, y0 := math.Floor(math.Max(b.X, 0)), math.Floor(math.Max(b.Y, 0))
	x1, y1 := math.Ceil(b.X+b.W), math.Ceil(b.Y+b.H)
	return &area{x: x0, y: y0, w: x1 - x0, h: y1 - y0}, nil
}

// scrollPageJS scrolls through the page in viewport steps until maxH or the time budget, so
// that lazy images and infinite-scroll loaders fire. After each step it waits for the end of the
// next rendering update (an animation frame, then a task): that update computes the
// intersections of the new view, which intersection observers and the browser's own lazy loading
// are told of (their callbacks are queued then and start the loads wherever the scroll has gone
// meanwhile); only after the last step does it wait a whole frame more, for those callbacks to
// have run, and scrolls on should they have made the page taller. It waits longer only while the
// page is still adding content (child nodes, up to settleMs); images load meanwhile, in
// parallel. Then it waits (at most imgMs) for the displayed images above maxH that are still
// loading, and for content still being added, scrolling on should the page have grown; returns
// to the top and reports the document height. scrollTo with behavior 'instant' overrides a
// smooth scroll-behavior of the page.
//
// When the render may skip (skippable: scrollSkippable) and nothing of the page watches the
// scroll (watchMarkJS, asked with watchKey, saw nothing; no onscroll handler of the window or the
// document), only the browser's own lazy loading reacts to it: without lazy images or frames (a
// frame's scripts are not looked at) the page is not scrolled at all; with lazy images only, the
// steps are reachPx (lazyReach) longer than the viewport, as Chrome starts loading a lazy image
// that far from it and farther. Under disable_javascript no script of the page runs, and nothing
// is watched.
const scrollPageJS = `async (maxH, budget, settleMs, imgMs, stepPx, delayMs, skippable, reachPx, watchKey) => {
	const t0 = performance.now();
	const sleep = ms => new Promise(res => setTimeout(res, ms));
	const frame = () => new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res)));
	const update = () => new Promise(res => requestAnimationFrame(() => setTimeout(res, 0)));
	const height = () => Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
	let step = stepPx > 0 ? stepPx : Math.max(innerHeight, 100);
	let y = 0;
	// Only the watch's own answer, false, says nothing watches: a page that replaced observe by
	// something that does not pass the answer on is scrolled as if watched.
	const watched = () => {
		if (!watchKey) return false; // no watch: no script of the page runs (disable_javascript)
		try {
			return IntersectionObserver.prototype.observe.call(null, watchKey) !== false;
		} catch (e) {
			return true;
		}
	};
	if (skippable && onscroll === null && document.onscroll === null && !watched() && !document.querySelector('iframe, frame')) {
		if (document.querySelector('img[loading=lazy i]')) step += reachPx;
		else y = Infinity; // nothing to scroll for
	}
	const scrolls = y === 0;
	let added = 0; // when the page last added nodes
	const mo = new MutationObserver(() => { added = performance.now(); });
	mo.observe(document, {childList: true, subtree: true});
	const settle = async limit => {
		while (performance.now() - added < 50 && performance.now() < limit) await sleep(25);
	};
	const pending = () => [...document.images].some(i => {
		if (i.complete) return false;
		const r = i.getBoundingClientRect();
		return r.width > 0 && r.height > 0 && r.top + scrollY < maxH;
	});
	const scrollOn = async () => {
		for (;;) {
			for (; y < Math.min(height(), maxH) && performance.now() - t0 < budget; y += step) {
				scrollTo({top: y, left: 0, behavior: 'instant'});
				await update();
				if (delayMs > 0) await sleep(Math.min(delayMs, Math.max(0, t0 + budget - performance.now())));
				else await settle(Math.min(performance.now() + settleMs, t0 + budget));
			}
			if (performance.now() - t0 >= budget) return;
			// The callbacks of the last step's update have run after one more frame: a loader
			// at the end of the page may have made it taller.
			await frame();
			if (!(y < Math.min(height(), maxH))) return;
		}
	};
	if (scrolls) await scrollOn();
	const end = Math.min(performance.now() + imgMs, t0 + budget);
	while (performance.now() < end && (pending() || performance.now() - added < 50)) {
		await sleep(25);
		if (y < Math.min(height(), maxH)) await scrollOn();
	}
	mo.disconnect();
	if (scrolls || scrollY !== 0) {
		scrollTo({top: 0, left: 0, behavior: 'instant'});
		await frame();
	}
	return height();
}`

const measureHeightJS = `Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)`

// Timing of full_page_scroll.
const (
	scrollSettle    = 300 * time.Millisecond // the longest wait after a step for content still being added
	scrollImageWait = 2 * time.Second        // wait for images still loading after the scroll
	scrollShare     = 2                      // the scroll may take 1/scrollShare of the time left
	// lazyReach is less than the least distance from the viewport at which Chrome starts to
	// load a lazy image (1,250 px on a fast connection, more on slower ones).
	lazyReach = 1000
)

// pageHeight returns the document's height in CSS pixels, after scrolling through the page
// when full_page_scroll asks for it.
func (r *render) pageHeight(ctx context.Context) (float64, error) {
	var h float64
	expr := measureHeightJS
	if r.o.FullPageScroll {
		maxH := r.o.FullPageMaxHeight
		if maxH <= 0 {
			maxH = defaultMaxHeight
		}
		budget := r.load.timeout / 2
		if d, ok := ctx.Deadline(); ok {
			budget = time.Until(d) / scrollShare
		}
		expr = jsCall(scrollPageJS, maxH, budget.Milliseconds(), scrollSettle.Milliseconds(), scrollImageWait.Milliseconds(),
			r.o.FullPageScrollBy, r.o.FullPageScrollDelay.Milliseconds(), r.scrollSkippable(), lazyReach, r.watchKey) // full_page_scroll_by, _delay; fullpage.go
	}
	if err := r.eval(ctx, expr, &h); err != nil {
		return 0, fmt.Errorf("measure the page: %w", err)
	}
	if !(h >= 1) || math.IsInf(h, 0) {
		h = float64(r.height)
	}
	return h, nil
}
