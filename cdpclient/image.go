package cdpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	stddraw "image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"strings"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"golang.org/x/image/draw"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/media"
)

// Stitching and resizing happen in Go on lossless PNG captures: png and jpeg are then encoded
// by the standard library. Go has no WebP encoder, so a webp result goes back to Chrome as a PNG
// and Chrome's canvas encodes it. Resizing in Go (x/image/draw, Catmull-Rom) rather than in a
// canvas gives the exact requested size whatever the source size (a canvas tops out near
// 32,767 px a side, a tall stitched page does not), a proper filter when shrinking a lot, and
// the same result for every format.

// fitted is where a resized capture goes: a w x h image, the capture scaled into the rectangle
// at (which overhangs the image for cover, the rest cropped, and leaves room for contain,
// filled with bg).
type fitted struct {
	w, h int
	at   image.Rectangle
	bg   color.NRGBA
}

// fitLayout places a w x h capture for image_width ow, image_height oh and image_fit: fill (or
// only one side given) is outputSize's exact size, the others keep the aspect ratio as sharp's
// fits of the same names do.
func fitLayout(w, h, ow, oh int, fit, pos string, bg [4]uint8) fitted {
	f := fitted{bg: color.NRGBA{R: bg[0], G: bg[1], B: bg[2], A: bg[3]}}
	if ow <= 0 || oh <= 0 || fit == "" || fit == shotd.FitFill {
		f.w, f.h = outputSize(w, h, ow, oh)
		f.at = image.Rect(0, 0, f.w, f.h)
		return f
	}
	sx, sy := float64(ow)/float64(w), float64(oh)/float64(h)
	s := min(sx, sy) // contain, inside
	if fit == shotd.FitCover || fit == shotd.FitOutside {
		s = max(sx, sy)
	}
	sw, sh := max(1, int(math.Round(float64(w)*s))), max(1, int(math.Round(float64(h)*s)))
	switch fit {
	case shotd.FitInside, shotd.FitOutside:
		f.w, f.h = sw, sh
		f.at = image.Rect(0, 0, sw, sh)
		return f
	case shotd.FitCover:
		sw, sh = max(sw, ow), max(sh, oh) // rounding must not leave an edge uncovered
	default: // contain
		sw, sh = min(sw, ow), min(sh, oh)
	}
	f.w, f.h = ow, oh
	x, y := align(ow-sw, pos, "left", "right"), align(oh-sh, pos, "top", "bottom")
	f.at = image.Rect(x, y, x+sw, y+sh)
	return f
}

// align is the offset of one axis for image_position: room (negative when the image overhangs)
// at the start, the end, or shared.
func align(room int, pos, start, end string) int {
	switch {
	case strings.Contains(pos, start):
		return 0
	case strings.Contains(pos, end):
		return room
	}
	return room / 2
}

// composeFit stitches the PNG tiles of a dw x dh capture and draws it as f places it.
func composeFit(tiles []tile, dw, dh int, f fitted) (image.Image, error) {
	ow, oh := f.w, f.h
	var src image.Image
	if len(tiles) == 1 {
		img, err := png.Decode(bytes.NewReader(tiles[0].data))
		if err != nil {
			return nil, fmt.Errorf("decode capture: %w", err)
		}
		src = img
	} else {
		canvas := image.NewRGBA(image.Rect(0, 0, dw, dh))
		for i, t := range tiles {
			img, err := png.Decode(bytes.NewReader(t.data))
			if err != nil {
				return nil, fmt.Errorf("decode tile %d: %w", i, err)
			}
			b := img.Bounds()
			// A later tile overwrites the row a rounding may have doubled.
			stddraw.Draw(canvas, image.Rect(0, t.y, b.Dx(), t.y+b.Dy()), img, b.Min, stddraw.Src)
		}
		src = canvas
	}
	b := src.Bounds()
	full := image.Rect(0, 0, ow, oh)
	if b.Dx() == ow && b.Dy() == oh && f.at == full {
		return src, nil
	}
	dst := image.NewRGBA(full)
	if !f.at.Eq(full) && !full.In(f.at) {
		// contain's padding.
		stddraw.Draw(dst, full, image.NewUniform(f.bg), image.Point{}, stddraw.Src)
	}
	// Scale clips to dst: cover's overhang is cropped.
	draw.CatmullRom.Scale(dst, f.at, src, b, draw.Src, nil)
	return dst, nil
}

// encode writes img in the output format.
func (r *render) encode(ctx context.Context, img image.Image) ([]byte, error) {
	if media.IsStill(r.format) {
		return media.EncodeStillImage(ctx, r.stillSpec(), img)
	}
	var buf bytes.Buffer
	switch r.format {
	case shotd.FormatJPEG:
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: r.quality()}); err != nil {
			return nil, fmt.Errorf("encode jpeg: %w", err)
		}
		return buf.Bytes(), nil
	case shotd.FormatWebP:
		// Speed over size: the PNG only carries the pixels to Chrome.
		data, err := fastPNG(img)
		if err != nil {
			return nil, err
		}
		return r.webpInChrome(ctx, data)
	default:
		// BestSpeed: on a tall stitched page it takes about 40% less time than the default
		// level for files about 5% larger.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if r.o.PNGCompression == shotd.PNGBest {
			enc.CompressionLevel = png.BestCompression
		}
		if err := enc.Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("encode png: %w", err)
		}
		return buf.Bytes(), nil
	}
}

// webpJS decodes a PNG, draws it into a canvas of its size and encodes it as WebP. It runs in an
// isolated world, whose globals the page cannot have replaced; createImageBitmap of a Blob is
// not subject to the page's Content-Security-Policy.
const webpJS = `async function (b64, quality) {
	const bin = atob(b64);
	const bytes = new Uint8Array(bin.length);
	for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
	const bmp = await createImageBitmap(new Blob([bytes], {type: 'image/png'}), {premultiplyAlpha: 'none', colorSpaceConversion: 'none'});
	const canvas = new OffscreenCanvas(bmp.width, bmp.height);
	canvas.getContext('2d').drawImage(bmp, 0, 0);
	bmp.close();
	const blob = await canvas.convertToBlob({type: 'image/webp', quality: quality});
	if (blob.type !== 'image/webp') throw new Error('no webp encoder, got ' + blob.type);
	const out = new Uint8Array(await blob.arrayBuffer());
	let s = '';
	for (let i = 0; i < out.length; i += 0x8000) s += String.fromCharCode.apply(null, out.subarray(i, i + 0x8000));
	return btoa(s);
}`

// webpInChrome has the page's renderer encode a PNG as WebP at the render's quality.
func (r *render) webpInChrome(ctx context.Context, pngData []byte) ([]byte, error) {
	world, err := r.t.c.Page.CreateIsolatedWorld(ctx, page.NewCreateIsolatedWorldArgs(r.t.frameID).SetWorldName("shotd-encode"))
	if err != nil {
		return nil, err
	}
	b64, _ := json.Marshal(base64.StdEncoding.EncodeToString(pngData))
	q, _ := json.Marshal(float64(r.quality()) / 100)
	rep, err := r.t.c.Runtime.CallFunctionOn(ctx, runtime.NewCallFunctionOnArgs(webpJS).
		SetExecutionContextID(world.ExecutionContextID).
		SetArguments([]runtime.CallArgument{{Value: b64}, {Value: q}}).
		SetAwaitPromise(true).SetReturnByValue(true))
	if err != nil {
		return nil, err
	}
	if rep.ExceptionDetails != nil {
		return nil, fmt.Errorf("encode webp: %s", exceptionText(rep.ExceptionDetails))
	}
	var s string
	if err := json.Unmarshal(rep.Result.Value, &s); err != nil {
		return nil, fmt.Errorf("encode webp: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("encode webp: %w", err)
	}
	if len(data) < 12 || string(data[8:12]) != "WEBP" {
		return nil, errors.New("encode webp: not a webp file")
	}
	return data, nil
}

// fastPNG is img as a PNG that only carries its pixels to an encoder: speed over size.
func fastPNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// stillSpec is how media encodes the render's still image.
func (r *render) stillSpec() media.StillSpec {
	return media.StillSpec{Format: r.format, Quality: r.quality(), TempDir: r.p.cfg.Dir, Nice: r.p.cfg.Nice}
}

// encodeStill has media encode the w x h PNG capture pngData as the render's format; it keeps
// the PNG for full_page_slices, which cuts the pixels, not the encoded file.
func (r *render) encodeStill(ctx context.Context, pngData []byte, w, h int) error {
	data, err := media.EncodeStill(ctx, r.stillSpec(), pngData)
	if err != nil {
		return err
	}
	r.data, r.stillSize = data, image.Pt(w, h)
	if r.o.Slices {
		r.stillPNG = pngData
	}
	return nil
}
