package media

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
)

// imageKind is the encoding of a frame image.
type imageKind int

const (
	kindJPEG imageKind = iota + 1
	kindPNG
)

// decoder is the ffmpeg decoder of the image2pipe stream.
func (k imageKind) decoder() string {
	if k == kindPNG {
		return "png"
	}
	return "mjpeg"
}

// imageInfo is the encoding and size of one frame image, read from its header only.
type imageInfo struct {
	kind imageKind
	w, h int
}

var errNotImage = errors.New("frame is neither a JPEG nor a PNG image")

// sniff reads the kind and size of a frame without decoding its pixels.
func sniff(data []byte) (imageInfo, error) {
	var (
		cfg  image.Config
		err  error
		kind imageKind
	)
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		kind = kindJPEG
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		kind = kindPNG
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	default:
		return imageInfo{}, errNotImage
	}
	if err != nil {
		return imageInfo{}, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return imageInfo{}, errors.New("frame has an empty size")
	}
	return imageInfo{kind: kind, w: cfg.Width, h: cfg.Height}, nil
}

// conform re-encodes a frame to the kind and size of the stream, fitting it in (scaled with its
// aspect ratio kept, centred, padded with black). ffmpeg's image2pipe stream must keep one codec
// and one size: a size change mid-stream would rebuild the filter graph and lose what gif's
// palettegen has gathered. It is the rare path (the page changed size during the recording), so
// plain Go is fast enough.
func conform(data []byte, to imageInfo) ([]byte, error) {
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), src, b.Min, draw.Src)

	dst := image.NewRGBA(image.Rect(0, 0, to.w, to.h))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.Black), image.Point{}, draw.Src)
	scale := math.Min(float64(to.w)/float64(b.Dx()), float64(to.h)/float64(b.Dy()))
	nw := max(1, min(to.w, int(math.Round(float64(b.Dx())*scale))))
	nh := max(1, min(to.h, int(math.Round(float64(b.Dy())*scale))))
	ox, oy := (to.w-nw)/2, (to.h-nh)/2
	bilinear(dst, image.Rect(ox, oy, ox+nw, oy+nh), rgba)

	var out bytes.Buffer
	if to.kind == kindPNG {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, dst)
	} else {
		err = jpeg.Encode(&out, dst, &jpeg.Options{Quality: 90})
	}
	return out.Bytes(), err
}

// bilinear scales src into the rectangle r of dst.
func bilinear(dst *image.RGBA, r image.Rectangle, src *image.RGBA) {
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	fx := float64(sw) / float64(r.Dx())
	fy := float64(sh) / float64(r.Dy())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		sy := (float64(y-r.Min.Y)+0.5)*fy - 0.5
		y0 := int(math.Floor(sy))
		wy := sy - float64(y0)
		y0c, y1c := clamp(y0, sh-1), clamp(y0+1, sh-1)
		for x := r.Min.X; x < r.Max.X; x++ {
			sx := (float64(x-r.Min.X)+0.5)*fx - 0.5
			x0 := int(math.Floor(sx))
			wx := sx - float64(x0)
			x0c, x1c := clamp(x0, sw-1), clamp(x0+1, sw-1)
			p00 := src.PixOffset(x0c, y0c)
			p10 := src.PixOffset(x1c, y0c)
			p01 := src.PixOffset(x0c, y1c)
			p11 := src.PixOffset(x1c, y1c)
			d := dst.PixOffset(x, y)
			for c := range 4 {
				top := float64(src.Pix[p00+c])*(1-wx) + float64(src.Pix[p10+c])*wx
				bot := float64(src.Pix[p01+c])*(1-wx) + float64(src.Pix[p11+c])*wx
				dst.Pix[d+c] = uint8(math.Round(top*(1-wy) + bot*wy))
			}
		}
	}
}

func clamp(v, hi int) int {
	return max(0, min(v, hi))
}
