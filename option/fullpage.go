package option

import (
	"math"
	"time"

	"github.com/shotd/shotd"
)

// FullPageAlgorithms are the values of full_page_algorithm.
var FullPageAlgorithms = []string{"default", "by_sections"}

// fullPageOptionSpecs are the rows of full_page_algorithm and its scroll steps, and of
// full_page_slices.
func fullPageOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		enum("Area", "full_page_algorithm", "default", "default captures the whole page in one piece; by_sections scrolls the viewport down the page and stitches what each position shows, so that sticky and fixed elements and scroll-driven content look as a visitor sees them.", FullPageAlgorithms,
			func(o *draft, v string) { o.FullPageAlgorithm = v }),
		integer("Area", "full_page_scroll_by", "", "CSS pixels each full_page_scroll step moves (default: one viewport).",
			func(o *draft, v int) { o.FullPageScrollBy = v }).withBounds(50, 10000),
		integer("Area", "full_page_scroll_delay", "", "Milliseconds to wait after each full_page_scroll step (default: until the page stops adding content, at most 300).",
			func(o *draft, v int) { o.FullPageScrollDelay = time.Duration(v) * time.Millisecond }).withBounds(0, 5000),
		boolean("Area", "full_page_slices", "false", "Cut the full-page image into vertical slices: a JSON answer lists them (slices, each with its own file), any other answer is a zip of them.",
			func(o *draft, v bool) { o.Slices = v }),
		integer("Area", "full_page_slice_height", "4000", "Height of each slice in pixels; the last one may be shorter. A render makes at most 100 slices.",
			func(o *draft, v int) { o.SliceHeight = v }).withBounds(1, shotd.MaxSliceHeight),
		integer("Area", "full_page_slice_overlap_height", "0", "Pixels each slice repeats of the one before it.",
			func(o *draft, v int) { o.SliceOverlap = v }).withBounds(0, shotd.MaxSliceHeight-1),
	}
}

// knownSlicedHeight is the height of the image full_page_slices cuts when the options alone
// fix it (image_height, or a clip of the page not resized); 0 when the page decides.
func knownSlicedHeight(o *shotd.Options) int {
	switch {
	case o.ImageHeight > 0:
		return o.ImageHeight
	case o.HasClip && o.Selector == "" && o.ImageWidth == 0 && o.ClipHeight > 0:
		return int(math.Round(float64(o.ClipHeight) * max(o.DeviceScaleFactor, 1)))
	}
	return 0
}
