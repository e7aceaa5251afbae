package cdpclient

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"image"
	"math"

	"github.com/mafredri/cdp/protocol/page"
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

// watchMarkJS runs in every new document of such a render and remembers, in its closure, once an
// IntersectionObserver of the page observes something or a scroll listener (scroll, scrollend)
// is added to the window or the document: what scrollPageJS asks, beside the onscroll handlers.
// Nothing cheaper tells: Runtime.queryObjects, which finds every observer, collects all garbage
// first (50 ms on the bench's heavy page, and about 23 ms more a MB of script heap), and the two
// round trips of DOMDebugger.getEventListeners on the window and the document took 19 ms there.
// The wrappers are proxies of the native methods: a page that checks them (their source text,
// name and length, as bot-detection scripts do) finds native code, where a function of ours
// would show its source. Nothing is put on the window for the page to find: scrollPageJS asks
// by calling observe with the render's key (render.watchKey), which no page can guess. A bare
// addEventListener call has no this (the window's).
const watchMarkJS = `(key) => {
	let watched = false;
	const apply = Reflect.apply;
	const io = IntersectionObserver.prototype;
	io.observe = new Proxy(io.observe, {apply(f, self, args) {
		if (args[0] === key) return watched;
		watched = true;
		return apply(f, self, args);
	}});
	const et = EventTarget.prototype;
	et.addEventListener = new Proxy(et.addEventListener, {apply(f, self, args) {
		const type = args[0];
		if ((self == null || self === globalThis || self === document) && typeof type === 'string' && type.startsWith('scroll')) {
			watched = true;
		}
		return apply(f, self, args);
	}});
}`

// watchMark is watchMarkJS when the render may use it, "" otherwise; no script of the page runs
// under disable_javascript.
func (r *render) watchMark() string {
	if !r.scrollSkippable() || r.o.DisableJavaScript {
		return ""
	}
	if r.watchKey == "" {
		r.watchKey = rand.Text()
	}
	return jsCall(watchMarkJS, r.watchKey)
}
