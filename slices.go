package shotd

// Sizes of full_page_slices, as ScreenshotOne bounds them.
const (
	DefaultSliceHeight = 4000
	MaxSliceHeight     = 16000
	// MaxSlices bounds the slices of one render: each is encoded, and as JSON or a job stored,
	// on its own, so a small step over a tall page would otherwise make thousands.
	MaxSlices = 100
)

// SliceCount is the number of slices full_page_slices cuts an image height px high into, with
// slices sliceHeight px high (the default when 0) that repeat overlap px of the one before.
func SliceCount(height, sliceHeight, overlap int) int {
	if sliceHeight <= 0 {
		sliceHeight = DefaultSliceHeight
	}
	overlap = min(max(overlap, 0), sliceHeight-1)
	if height <= sliceHeight {
		return 1
	}
	step := sliceHeight - overlap
	return 1 + (height-sliceHeight+step-1)/step
}

// SliceRows is the pixel rows of all the slices of an image height px high: each overlap is
// encoded twice.
func SliceRows(height, sliceHeight, overlap int) int {
	if sliceHeight <= 0 {
		sliceHeight = DefaultSliceHeight
	}
	overlap = min(max(overlap, 0), sliceHeight-1)
	return height + (SliceCount(height, sliceHeight, overlap)-1)*overlap
}

// knownSlicedHeight is the height of the image full_page_slices cuts when the options alone
