package cdpclient

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"image"
	"math"
	"strings"

	"github.com/mafredri/cdp/protocol/domdebugger"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	_ "golang.org/x/image/webp" // decode a webp capture for full_page_slices

	"github.com/shotd/shotd"
)

// Full pages beyond one capture: full_page_algorithm=by_sections and full_page_slices.

// slice cuts the full-page image into full_page_slice_height slices that overlap by
// full_page_slice_overlap_height, encoded like the image. A JSON answer or a job gets them as
// files of their own; any other answer is a zip of them.
func (r *render) slice(ctx context.Context) error {
	h := r.o.SliceHeight
	if h <= 0 {
		h = shotd.DefaultSliceHeight
	}
	overlap := min(max(r.o.SliceOverlap, 0), h-1)
	// The page's height decides the count: refused from the image's header, before a single
	// slice is decoded or encoded.
	src, srcFormat := r.data, r.format
	if r.stillPNG != nil {
		src, srcFormat = r.stillPNG, shotd.FormatPNG // media's formats have no Go decoder
	}
	iw, ih, err := imageSize(srcFormat, src)
	if err != nil {
		return fmt.Errorf("read the capture's size to slice it: %w", err)
	}
	if n := shotd.SliceCount(ih, h, overlap); n > shotd.MaxSlices {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the %d px high image would make %d slices of %d px; at most %d are allowed (raise full_page_slice_height, lower full_page_slice_overlap_height or full_page_max_height)", ih, n, h, shotd.MaxSlices)
	}
	if px := int64(shotd.SliceRows(ih, h, overlap)) * int64(iw); px > maxCapturePixels {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the slices of the %dx%d px image would hold %d pixels, more than %d (lower full_page_slice_overlap_height)", iw, ih, px, maxCapturePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(src))
	if err != nil {
		return fmt.Errorf("decode the capture to slice it: %w", err)
	}
	b := img.Bounds()
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return fmt.Errorf("slice: %T cannot be cut", img)
	}
	var slices []shotd.Slice
	var files []shotd.Extra
	for y, i := 0, 0; ; i++ {
		if err := ctx.Err(); err != nil { // the render's deadline: encoding is the long part
			return err
		}
		bottom := min(y+h, b.Dy())
		part := sub.SubImage(image.Rect(b.Min.X, b.Min.Y+y, b.Max.X, b.Min.Y+bottom))
		data, err := r.encode(ctx, part)
		if err != nil {
			return err
		}
		files = append(files, shotd.Extra{Data: data, Format: r.format, ContentType: shotd.ContentTypes[r.format]})
		slices = append(slices, shotd.Slice{Index: i, OffsetY: y, Width: b.Dx(), Height: bottom - y,
			FileRef: shotd.FileRef{Format: r.format}})
		if bottom >= b.Dy() {
			break
		}
		y = bottom - overlap
	}
	if r.o.ResponseType == "json" || r.o.Async {
		for i := range slices {
			slices[i].Extra = len(r.side.extras)
			r.side.extras = append(r.side.extras, files[i])
		}
		r.side.slices = slices
		return nil
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	ext := map[string]string{shotd.FormatJPEG: "jpg"}[r.format]
	if ext == "" {
		ext = shotd.Extension(r.format)
	}
	for i, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("slice-%03d.%s", i, ext), Method: zip.Store})
		if err != nil {
			return err
		}
		if _, err := w.Write(f.Data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	r.data, r.side.zipped, r.side.width, r.side.height = buf.Bytes(), true, b.Dx(), b.Dy()
	r.side.slices = nil
	return nil
}

// bySections captures the full page as a visitor sees it scrolling: the viewport at each
// position down the page, stitched. Sticky and fixed elements appear in every section, and
// content that reacts to scrolling is captured in the state it has there.
func (r *render) bySections(ctx context.Context, a *area) ([]tile, error) {
	var vh float64
	if err := r.eval(ctx, `innerHeight`, &vh); err != nil {
		return nil, err
	}
	if !(vh >= 1) || math.IsInf(vh, 0) {
		vh = float64(r.height)
	}
	var ts []tile
	for top := 0.0; top < a.h; top += vh {
		var y float64
		js := `async (y) => { scrollTo({top: y, left: 0, behavior: 'instant'});
			await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res))); return scrollY; }`
		if err := r.eval(ctx, jsCall(js, top), &y); err != nil {
			return nil, err
		}
		// The page may not scroll as far as asked (the last section): capture from where it is.
		from := math.Max(top, y)
		part := math.Min(vh-(from-y), a.h-from)
		if part <= 0 {
			break
		}
		clip := page.Viewport{X: 0, Y: from, Width: a.w, Height: part, Scale: 1}
		shot, err := r.t.c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").
			SetOptimizeForSpeed(true).SetClip(clip))
		if err != nil {
			return nil, err
		}
		ts = append(ts, tile{y: r.devicePx(from), data: shot.Data})
		top = from + part - vh // the next section starts where this one ended
	}
	if err := r.eval(ctx, `scrollTo({top: 0, left: 0, behavior: 'instant'})`, nil); err != nil {
		return nil, err
	}
	return ts, nil
}

// The lazy-load scroll (scrollPageJS) stops at every viewport only for a page that may react
// to being scrolled: one whose scripts observe intersections or listen to the scroll.

// scrollSkippable reports whether this render's lazy-load scroll may leave out steps for a page
// that does not watch its scroll: a full page with the scroll on and no step or delay asked for.
func (r *render) scrollSkippable() bool {
	o := r.o
	return o.FullPage && o.FullPageScroll && o.Selector == "" && !o.HasClip &&
		o.FullPageScrollBy <= 0 && o.FullPageScrollDelay <= 0
}

// observeMarkJS runs in every new document of such a render and marks its window once an
// IntersectionObserver of the page observes something: the mark scrollPageJS reads. Nothing
// cheaper tells: Runtime.queryObjects, which finds every observer, collects all garbage first
// (50 ms on the bench's heavy page, and about 23 ms more a MB of script heap).
const observeMarkJS = `(() => {
	const p = IntersectionObserver.prototype, observe = p.observe;
	p.observe = {observe(target) {
		globalThis[Symbol.for('shotd.observed')] = true;
		return observe.apply(this, arguments);
	}}.observe;
})()`

// observeMark is observeMarkJS when the render may use it, "" otherwise; no script of the page
// runs under disable_javascript.
func (r *render) observeMark() string {
	if !r.scrollSkippable() || r.o.DisableJavaScript {
		return ""
	}
	return observeMarkJS
}

// scrollListenerObjects is the object group of scrollListened's handles.
const scrollListenerObjects = "shotd-scroll-listeners"

// scrollListened reports whether the window or the document has a scroll listener (scroll,
// scrollend; an onscroll attribute of the body is the window's): two round trips, each sent at
// once. Under disable_javascript no listener of the page runs, an onscroll attribute neither.
func (r *render) scrollListened(ctx context.Context) (bool, error) {
	if r.o.DisableJavaScript {
		return false, nil
	}
	defer func() {
		// The handles keep the objects alive until released; if the render ends first, its
		// document goes with them.
		_ = r.t.c.Runtime.ReleaseObjectGroup(ctx, runtime.NewReleaseObjectGroupArgs(scrollListenerObjects))
	}()
	var ids [2]runtime.RemoteObjectID
	var listens [2]bool
	calls := make([]func() error, 2)
	for i, expr := range []string{"window", "document"} {
		calls[i] = func() error {
			rep, err := r.t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(expr).SetObjectGroup(scrollListenerObjects))
			if err != nil {
				return err
			}
			if rep.ExceptionDetails != nil || rep.Result.ObjectID == nil {
				return &errScript{msg: "no handle on the " + expr}
			}
			ids[i] = *rep.Result.ObjectID
			return nil
		}
	}
	if err := concurrently(calls); err != nil {
		return true, err
	}
	for i := range calls {
		calls[i] = func() error {
			rep, err := r.t.c.DOMDebugger.GetEventListeners(ctx, domdebugger.NewGetEventListenersArgs(ids[i]))
			if err != nil {
				return err
			}
			for _, l := range rep.Listeners {
				listens[i] = listens[i] || strings.HasPrefix(l.Type, "scroll")
			}
			return nil
		}
	}
	if err := concurrently(calls); err != nil {
		return true, err
	}
	return listens[0] || listens[1], nil
}
