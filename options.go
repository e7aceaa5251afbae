package shotd

import "time"

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
}

// IsVideo reports whether format records a video.
func IsVideo(format string) bool {
	return format == FormatMP4 || format == FormatWebM || format == FormatGIF || format == FormatMOV
}

// PNG encodings of png_compression: Chrome's fast zlib setting, which takes about a third off the
// capture of a large page, or its default, for the smallest file.
const (
	PNGFast = "fast"
	PNGBest = "best"
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

// Options is one validated render request. It is built once, by ParseOptions, and never changed
// afterwards: actors and cdpclient read it from several goroutines.
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
	// How a resize with both sides fits the capture (renderopts.go): ImageFit, where the crop or
	// the padding goes, and the padding's colour (RGBA).
	ImageFit        string
	ImagePosition   string
	ImageBackground [4]uint8
	OmitBackground  bool
	PNGCompression  string // PNGFast or PNGBest
	ResponseType    string

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

	// Waiting.
	WaitUntil       string
	Delay           time.Duration
	Timeout         time.Duration
	WaitForSelector string
	// WaitForExpression is JavaScript the page must make true; WaitForSelectorHidden a selector
	// whose element must be gone or hidden (renderopts.go).
	WaitForExpression     string
	WaitForSelectorHidden string

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

	// Blocking.
	BlockAds           bool
	BlockTrackers      bool
	BlockCookieBanners bool
	BlockChats         bool
	BlockResources     []string
	BlockRequests      []string

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
	// outline (renderopts.go).
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

	// ScreenshotOne's take options beyond the api-v1 set (s1options.go).
	S1 S1Options

	// Storage: store=true uploads the result to Storage (storage.go).
	Store   bool
	Storage StorageTarget

	// Authentication parameters, validated here, used by httpd.
	AccessKey  string
	Signature  string
	Expires    int64
	HasExpires bool

	// Given lists the option names that the request set explicitly, in table order. The cache
	// key and bulk defaults use it.
	Given []string
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
