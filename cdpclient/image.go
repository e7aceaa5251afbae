package cdpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	stddraw "image/draw"
	"image/jpeg"
	"image/png"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"golang.org/x/image/draw"

	"github.com/shotd/shotd"
)

// Stitching and resizing happen in Go on lossless PNG captures: png and jpeg are then encoded
// by the standard library. Go has no WebP encoder, so a webp result goes back to Chrome as a PNG
// and Chrome's canvas encodes it. Resizing in Go (x/image/draw, Catmull-Rom) rather than in a
// canvas gives the exact requested size whatever the source size (a canvas tops out near
// 32,767 px a side, a tall stitched page does not), a proper filter when shrinking a lot, and
// the same result for every format.

// compose stitches the PNG tiles of a dw x dh capture and scales the result to ow x oh.
func compose(tiles []tile, dw, dh, ow, oh int) (image.Image, error) {
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
	if b.Dx() == ow && b.Dy() == oh {
		return src, nil
	}
	dst := image.NewRGBA(image.Rect(0, 0, ow, oh))
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return dst, nil
}

// encode writes img in the output format.
func (r *render) encode(ctx context.Context, img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	switch r.format {
	case shotd.FormatJPEG:
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: r.quality()}); err != nil {
			return nil, fmt.Errorf("encode jpeg: %w", err)
		}
		return buf.Bytes(), nil
	case shotd.FormatWebP:
		// Speed over size: the PNG only carries the pixels to Chrome.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, img); err != nil {
			return nil, fmt.Errorf("encode png: %w", err)
		}
		return r.webpInChrome(ctx, buf.Bytes())
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
