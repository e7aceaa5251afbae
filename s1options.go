package shotd

import (
	//__DEL__
	"time"
)

// S1Options are the options of ScreenshotOne's take endpoint beyond the api-v1 set, kept apart
// so that Options' own fields stay those of the api-v1 option list.
type S1Options struct {
	BypassCSP             bool
	Hover                 string
	ScrollIntoView        string
	ScrollIntoViewAdjust  int // CSS pixels added to the element's top after scrolling to it
	FailIfContentContains string
	FailIfContentMissing  string
	HasGeolocation        bool
	Latitude, Longitude   float64
	Accuracy              float64
	AttachmentName        string

	// Metadata of the JSON answer (metadata_*).
	MetaImageSize, MetaFonts, MetaIcon, MetaOpenGraph, MetaPageTitle bool
	MetaContent, MetaStatusCode, MetaHeaders                         bool
	MetaContentFormat                                                string // "html" or "markdown"
	IncludeShadowDOM                                                 bool   // metadata_content serialises open shadow roots

	// Full page.
	FullPageAlgorithm   string        // "default" or "by_sections"
	FullPageScrollBy    int           // CSS pixels a scroll step moves; 0: one viewport
	FullPageScrollDelay time.Duration // the wait after each scroll step; 0: shotd's settling
	Slices              bool
	SliceHeight         int // device pixels
	SliceOverlap        int

	// Waiting.
	NavigationTimeout        time.Duration // 0: bounded by timeout alone
	ScriptsWaitUntil         []string
	WaitForSelectorAlgorithm string   // "at_least_one" or "at_least_by_count"
	SelectorAlgorithm        string   // "default" or "clip"
	SelectorNoScroll         bool     // selector_scroll_into_view=false
	FailIfRequestFailed      []string // URL patterns

	// Blocking.
	BlockSocials             bool
	BlockBannersByHeuristics bool

	// Network: the user's upstream proxy (proxy, proxy_bypass_hosts); nil: none.
	Proxy *UpstreamProxy

	// Background.
	ExternalIdentifier string
	NoWebhookErrors    bool // webhook_errors=false: no webhook for a failed job

}

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
// WantsMetadata reports whether any metadata_* option asks for something.
func (s *S1Options) WantsMetadata() bool {
	return s.MetaImageSize || s.MetaFonts || s.MetaIcon || s.MetaOpenGraph || s.MetaPageTitle ||
		s.MetaContent || s.MetaStatusCode || s.MetaHeaders
}
