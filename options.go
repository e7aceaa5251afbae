package shotd

import (
	"encoding/json"
	"time"
)

// Formats.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	FormatWebP = "webp"
	FormatPDF  = "pdf"
	FormatMP4  = "mp4"
	FormatWebM = "webm"
	FormatGIF  = "gif"
	FormatMOV  = "mov" // H.264 in a QuickTime container, as mp4 (ScreenshotOne's animate offers it)
	FormatAVI  = "avi" // MPEG-4 Part 2 (Xvid) in AVI, what AVI players expect (ScreenshotOne's animate)

	// Still images that Chrome does not encode: the capture, taken as PNG, goes through media's
	// encoders. FormatGIFStill is a one-frame GIF, what ScreenshotOne's /take means by gif
	// (shotd's own gif is the scrolling video).
	FormatGIFStill = "gif_still"
	FormatAVIF     = "avif"
	FormatTIFF     = "tiff"
	FormatJP2      = "jp2"
	FormatHEIF     = "heif"

	// The rendered page as text: its DOM serialized after the waits, scripts and hiding, or that
	// DOM converted to Markdown.
	FormatHTML     = "html"
	FormatMarkdown = "markdown"
)

// ContentTypes maps each format to the Content-Type of its file.
var ContentTypes = map[string]string{
	FormatPNG:  "image/png",
	FormatJPEG: "image/jpeg",
	FormatWebP: "image/webp",
	FormatPDF:  "application/pdf",
	FormatMP4:  "video/mp4",
	FormatWebM: "video/webm",
	FormatGIF:  "image/gif",
	FormatMOV:  "video/quicktime",
	FormatAVI:  "video/x-msvideo",

	FormatGIFStill: "image/gif",
	FormatAVIF:     "image/avif",
	FormatTIFF:     "image/tiff",
	FormatJP2:      "image/jp2",
	FormatHEIF:     "image/heif",
	FormatHTML:     "text/html; charset=utf-8",
	FormatMarkdown: "text/markdown; charset=utf-8",
}

// extensions are the file extensions that are not the format's own name.
var extensions = map[string]string{FormatGIFStill: "gif", FormatMarkdown: "md"}

// Extension is the file extension (without the dot) of a file in format.
func Extension(format string) string {
	if e, ok := extensions[format]; ok {
		return e
	}
	return format
}

// IsVideo reports whether format records a video.
func IsVideo(format string) bool {
	return format == FormatMP4 || format == FormatWebM || format == FormatGIF || format == FormatMOV ||
		format == FormatAVI
}

// IsDocument reports whether format is the page's DOM as text (html, markdown) rather than a
// capture of what it shows.
func IsDocument(format string) bool { return format == FormatHTML || format == FormatMarkdown }

// IsImage reports whether format is a still image: neither a video, a PDF nor a document.
func IsImage(format string) bool {
	_, known := ContentTypes[format]
	return known && !IsVideo(format) && !IsDocument(format) && format != FormatPDF
}

// PNG encodings of png_compression: Chrome's fast zlib setting, which takes about a third off the
// capture of a large page, or its default, for the smallest file.
const (
	PNGFast = "fast"
	PNGBest = "best"
)

// Values of image_fit, as sharp names them: how a capture goes into image_width x image_height.
const (
	FitFill    = "fill"    // stretched to the exact size (the behaviour before image_fit)
	FitCover   = "cover"   // scaled to cover the size, the rest cropped at image_position
	FitContain = "contain" // scaled to fit inside, padded with image_background at image_position
	FitInside  = "inside"  // scaled to fit inside, no padding: at most the size
	FitOutside = "outside" // scaled to cover, no crop: at least the size
)

// Wait conditions of wait_until.
const (
	WaitLoad             = "load"
	WaitDOMContentLoaded = "domcontentloaded"
	WaitNetworkIdle      = "networkidle"
	WaitCommit           = "commit"
)

// Header is one parsed entry of the headers option.
type Header struct {
	Name  string
	Value string
}

// Cookie is one parsed entry of the cookies option ("name=value; Domain=example.com").
type Cookie struct {
	Name     string
	Value    string
	Domain   string
	Path     string
	Secure   bool
	HTTPOnly bool
}

// Options is one validated render request. It is built once, by option.ParseOptions, and never
// changed afterwards: actors and cdpclient read it from several goroutines.
type Options struct {
	// Source: exactly one is set.
	URL      string
	HTML     string
	Markdown string

	// Output.
	Format       string
	ImageQuality int
	ImageWidth   int // 0: keep
	ImageHeight  int // 0: keep
	// How a resize with both sides fits the capture (option/renderopts.go): ImageFit, where the
	// crop or the padding goes, and the padding's colour (RGBA).
	ImageFit        string
	ImagePosition   string
	ImageBackground [4]uint8
	OmitBackground  bool
	PNGCompression  string // PNGFast or PNGBest
	ResponseType    string
	AttachmentName  string // the file name of a download answer

	// Viewport. ViewportWidth, ViewportHeight, DeviceScaleFactor and ViewportMobile already
	// include the device preset and landscape rotation; UserAgent includes the preset's.
	ViewportWidth     int
	ViewportHeight    int
	DeviceScaleFactor float64
	ViewportDevice    string
	ViewportMobile    bool
	ViewportLandscape bool
	HasTouch          bool // from a mobile or tablet device preset

	// Area.
	FullPage          bool
	FullPageScroll    bool
	FullPageMaxHeight int
	Selector          string
	HasClip           bool
	ClipX, ClipY      int
	ClipWidth         int
	ClipHeight        int
	SelectorAlgorithm string // "default" or "clip"
	SelectorNoScroll  bool   // selector_scroll_into_view=false
	// How a full page is captured (full_page_algorithm "default" or "by_sections", and the
	// scroll steps of by_sections: CSS pixels per step, 0 one viewport; the wait after each, 0
	// shotd's settling) and whether it is cut into slices (device pixels).
	FullPageAlgorithm   string
	FullPageScrollBy    int
	FullPageScrollDelay time.Duration
	Slices              bool
	SliceHeight         int
	SliceOverlap        int

	// Waiting.
	WaitUntil       string
	Delay           time.Duration
	Timeout         time.Duration
	WaitForSelector string
	// WaitForExpression is JavaScript the page must make true; WaitForSelectorHidden a selector
	// whose element must be gone or hidden (option/renderopts.go).
	WaitForExpression        string
	WaitForSelectorHidden    string
	WaitForSelectorAlgorithm string        // "at_least_one" or "at_least_by_count"
	NavigationTimeout        time.Duration // 0: bounded by timeout alone
	ScriptsWaitUntil         []string

	// Content checks: the render fails (content_check_failed, navigation_failed) when the page
	// holds or lacks a text, or when a request matching one of the URL patterns fails.
	FailIfContentContains []string // any one found fails the render
	FailIfContentMissing  []string // any one missing fails the render
	FailIfRequestFailed   []string
	// ScreenshotOne's softer and stricter ends (error_on_*_not_found=false, ignore_host_errors=
	// false): a selector, click or hover that matches nothing is skipped rather than failing the
	// render, and an HTTP error status of the page's document fails it (host_returned_error).
	SelectorOptional, ClickOptional, HoverOptional bool
	FailOnHostError                                bool

	// Page behaviour.
	DarkMode      bool
	ReducedMotion bool
	MediaType     string
	HideSelectors []string
	Styles        string
	Scripts       string
	Click         string
	UserAgent     string
	Headers       []Header
	Cookies       []Cookie
	Authorization string
	// SealedRequest holds Headers, Cookies and Authorization encrypted in a job record, which
	// never keeps them in clear (objstore.Sealer).
	SealedRequest []byte `json:",omitempty"`
	TimeZone      string
	// DisableJavaScript renders with the page's scripts off (Emulation.setScriptExecutionDisabled).
	DisableJavaScript bool
	BypassCSP         bool
	Hover             string
	ScrollIntoView    string
	// ScrollIntoViewAdjust is CSS pixels added to the element's top after scrolling to it.
	ScrollIntoViewAdjust int
	HasGeolocation       bool
	Latitude, Longitude  float64
	Accuracy             float64

	// Blocking.
	BlockAds           bool
	BlockTrackers      bool
	BlockCookieBanners bool
	BlockChats         bool
	BlockResources     []string
	BlockRequests      []string
	BlockSocials       bool
	// BlockBannersByHeuristics hides fixed banners that no list names.
	BlockBannersByHeuristics bool

	// Network: the user's upstream proxy (proxy, proxy_bypass_hosts); nil: none.
	Proxy *UpstreamProxy

	// Metadata of the JSON answer (metadata_*). MetaContentFormat is "html" or "markdown";
	// IncludeShadowDOM serialises open shadow roots into metadata_content.
	MetaImageSize, MetaFonts, MetaIcon, MetaOpenGraph, MetaPageTitle bool
	MetaContent, MetaStatusCode, MetaHeaders                         bool
	MetaContentFormat                                                string
	IncludeShadowDOM                                                 bool

	// PDF. Margins are kept as validated CSS lengths ("" = none).
	PDFPaperFormat     string
	PDFLandscape       bool
	PDFPrintBackground bool
	PDFMargin          string
	PDFMarginTop       string
	PDFMarginRight     string
	PDFMarginBottom    string
	PDFMarginLeft      string
	PDFFitOnePage      bool
	// Header and footer templates (Chrome's printToPDF ones), page ranges, scale, a paper size
	// of its own (validated lengths, both or none), the page's CSS @page size, tagging and
	// outline (option/renderopts.go).
	PDFHeader            string
	PDFFooter            string
	PDFPageRanges        string
	PDFScale             float64
	PDFPaperWidth        string
	PDFPaperHeight       string
	PDFPreferCSSPageSize bool
	PDFUntagged          bool // pdf_tagged=false; the zero value is Chrome's default, tagged
	PDFOutline           bool

	// Video.
	VideoDuration     time.Duration // 0: follows the page height
	VideoMaxDuration  time.Duration
	VideoFPS          int
	VideoScroll       bool
	VideoScrollBack   bool
	VideoScrollEasing string

	// Cache.
	Cache    bool
	CacheTTL time.Duration
	CacheKey string

	// Background and webhook.
	Async       bool
	WebhookURL  string
	WebhookSign bool
	// ExternalIdentifier is the caller's own id of a job; NoWebhookErrors (webhook_errors=false)
	// sends no webhook for a failed job.
	ExternalIdentifier string
	NoWebhookErrors    bool

	// Storage: store=true uploads the result to Storage (storage.go).
	Store   bool
	Storage StorageTarget

	// Authentication parameters, validated here, used by httpd.
	AccessKey  string
	Signature  string
	Expires    int64
	HasExpires bool

	// Dialect is "s1" for a request made on ScreenshotOne's paths, whose job answers their way
	// (their webhook body and signature); "" for shotd's own.
	Dialect string `json:",omitempty"`

	// Given lists the option names that the request set explicitly, in table order. The cache
	// key and bulk defaults use it.
	Given []string
}

// WantsMetadata reports whether any metadata_* option asks for something.
func (o *Options) WantsMetadata() bool {
	return o.MetaImageSize || o.MetaFonts || o.MetaIcon || o.MetaOpenGraph || o.MetaPageTitle ||
		o.MetaContent || o.MetaStatusCode || o.MetaHeaders
}

// ContentType is the Content-Type of the rendered file.
func (o *Options) ContentType() string { return ContentTypes[o.Format] }

// Features lists the plan features the options need beyond a plain image render.
func (o *Options) Features() []string {
	var fs []string
	switch {
	case o.Format == FormatPDF:
		fs = append(fs, FeaturePDF)
	case IsVideo(o.Format):
		fs = append(fs, FeatureVideo)
	}
	if o.Async {
		fs = append(fs, FeatureAsync)
	}
	if o.Cache {
		fs = append(fs, FeatureCache)
	}
	return fs
}

// UnmarshalJSON reads Options from JSON, as a job record keeps them. A record written before the
// ScreenshotOne options were folded into Options holds them in an "S1" object, under the same
// field names: they are read from there too, so that a job queued before an upgrade renders
// after it as it was asked.
func (o *Options) UnmarshalJSON(b []byte) error {
	type plain Options // without this method
	if err := json.Unmarshal(b, (*plain)(o)); err != nil {
		return err
	}
	var old struct{ S1 json.RawMessage }
	if err := json.Unmarshal(b, &old); err != nil || len(old.S1) == 0 || string(old.S1) == "null" {
		return err
	}
	return json.Unmarshal(old.S1, (*plain)(o))
}
