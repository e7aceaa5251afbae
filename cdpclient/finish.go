package cdpclient

import (
	"context"

	"github.com/shotd/shotd"
)

// What a render keeps beside its capture (the network watch, the navigation_timeout context,
// metadata, extra files and slices), and the step after the capture that fills it.

// sideState is what the render keeps beside the capture.
type sideState struct {
	net    *netWatch       // response and failure events; nil when no option needs them
	navCtx context.Context // navigate's and wait's context under navigation_timeout
	meta   *shotd.Metadata
	extras []shotd.Extra
	slices []shotd.Slice
	zipped bool // Data is a zip of the slices
	width  int  // the size of the sliced image, when zipped
	height int
}

// afterCapture runs after the capture: the page metadata and the slices. It is the render's last
// step.
func (r *render) afterCapture(ctx context.Context) error {
	s := r.o
	if s.WantsMetadata() {
		if err := r.readMetadata(ctx); err != nil {
			return err
		}
	}
	if s.Slices && r.o.FullPage && r.video == nil && r.format != shotd.FormatPDF && !shotd.IsDocument(r.format) {
		return r.slice(ctx)
	}
	return nil
}

// sideOutput puts the metadata and the slices into out.
func (r *render) sideOutput(out *shotd.Output) {
	if m := r.side.meta; m != nil {
		if r.o.MetaImageSize && out.Width > 0 {
			m.ImageSize = &shotd.ImageSize{Width: out.Width, Height: out.Height}
		}
		out.Metadata = m
	}
	out.Extras, out.Slices = r.side.extras, r.side.slices
	if r.side.zipped {
		out.Format, out.ContentType = "zip", "application/zip"
	}
}
