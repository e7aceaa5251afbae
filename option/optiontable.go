package option

import (
	"slices"
	"strings"
	"time"

	"github.com/shotd/shotd"
)

// Kind is the value type of an option.
type Kind int

// Option kinds.
const (
	KindString Kind = iota
	KindInt
	KindNumber
	KindBool
	KindList
)

func (k Kind) String() string {
	return [...]string{"string", "integer", "number", "boolean", "array of string"}[k]
}

// ArrayStyle says how a list option travels in a query string.
type ArrayStyle int

// How an option takes several values.
const (
	ArrayNone   ArrayStyle = iota
	ArrayComma             // one comma-separated value
	ArrayRepeat            // the parameter repeated once per item
)

// OptionSpec is one row of the option table: the documented option list as data. The GET and
// POST parsers, the validation, the docs and the table-driven tests all read it.
type OptionSpec struct {
	Name    string
	Group   string
	Kind    Kind
	Array   ArrayStyle
	Min     float64 // bounds apply when HasMin / HasMax
	Max     float64
	HasMin  bool
	HasMax  bool
	Enum    []string // allowed values (for lists: allowed items)
	Default string   // default as query text; "" = none
	Doc     string
	// Render is false for options that do not change the rendered bytes (auth, async, webhook,
	// response_type, cache control); the cache key leaves them out.
	Render bool
	// Aliases are other spellings of Enum values, read as the value they stand for before the
	// enum check (format's jpg, ScreenshotOne's name for jpeg).
	Aliases map[string]string
	// check validates one string value (or list item) beyond kind, bounds and enum.
	check func(v string) string
	// apply stores the typed value.
	apply func(o *draft, v any)
}

func (s *OptionSpec) withBounds(min, max float64) *OptionSpec {
	s.Min, s.Max, s.HasMin, s.HasMax = min, max, true, true
	return s
}

func (s *OptionSpec) withMin(min float64) *OptionSpec {
	s.Min, s.HasMin = min, true
	return s
}

func str(group, name, def, doc string, apply func(*draft, string)) *OptionSpec {
	return &OptionSpec{Name: name, Group: group, Kind: KindString, Default: def, Doc: doc, Render: true,
		apply: func(o *draft, v any) { apply(o, v.(string)) }}
}

func enum(group, name, def, doc string, values []string, apply func(*draft, string)) *OptionSpec {
	s := str(group, name, def, doc, apply)
	s.Enum = values
	return s
}

func integer(group, name, def, doc string, apply func(*draft, int)) *OptionSpec {
	return &OptionSpec{Name: name, Group: group, Kind: KindInt, Default: def, Doc: doc, Render: true,
		apply: func(o *draft, v any) { apply(o, v.(int)) }}
}

func number(group, name, def, doc string, apply func(*draft, float64)) *OptionSpec {
	return &OptionSpec{Name: name, Group: group, Kind: KindNumber, Default: def, Doc: doc, Render: true,
		apply: func(o *draft, v any) { apply(o, v.(float64)) }}
}

func boolean(group, name, def, doc string, apply func(*draft, bool)) *OptionSpec {
	return &OptionSpec{Name: name, Group: group, Kind: KindBool, Default: def, Doc: doc, Render: true,
		apply: func(o *draft, v any) { apply(o, v.(bool)) }}
}

func list(group, name string, style ArrayStyle, doc string, apply func(*draft, []string)) *OptionSpec {
	return &OptionSpec{Name: name, Group: group, Kind: KindList, Array: style, Doc: doc, Render: true,
		apply: func(o *draft, v any) { apply(o, v.([]string)) }}
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func (s *OptionSpec) nonRender() *OptionSpec { s.Render = false; return s }

func (s *OptionSpec) checked(fn func(string) string) *OptionSpec { s.check = fn; return s }

// The values each enumerated option accepts.
var (
	// Formats: the spec's, then mov, avi and the still and document formats born of ScreenshotOne's
	// list (formats.go), which the spec does not contradict.
	Formats = []string{shotd.FormatPNG, shotd.FormatJPEG, shotd.FormatWebP, shotd.FormatPDF, shotd.FormatMP4, shotd.FormatWebM, shotd.FormatGIF, shotd.FormatMOV, shotd.FormatAVI,
		shotd.FormatGIFStill, shotd.FormatAVIF, shotd.FormatTIFF, shotd.FormatJP2, shotd.FormatHEIF, shotd.FormatHTML, shotd.FormatMarkdown}
	ResponseTypes   = []string{"by_format", "json", "empty"}
	PNGCompressions = []string{shotd.PNGFast, shotd.PNGBest}
	WaitConditions  = []string{shotd.WaitLoad, shotd.WaitDOMContentLoaded, shotd.WaitNetworkIdle, shotd.WaitCommit}
	MediaTypes      = []string{"screen", "print"}
	ResourceTypes   = []string{"document", "stylesheet", "image", "media", "font", "script", "xhr",
		"fetch", "websocket", "texttrack", "eventsource", "manifest", "other"}
	PaperFormats = []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "letter", "legal", "tabloid", "ledger"}
	Easings      = []string{"ease_in_out", "linear"}
)

// OptionTable is every option, in the order of the documented option list, then the storage
// options (storage.go).
var OptionTable = slices.Concat([]*OptionSpec{
	// Source.
	str("Source", "url", "", "Full http:// or https:// address to capture.", func(o *draft, v string) { o.URL = v }),
	str("Source", "html", "", "HTML to render instead of a URL.", func(o *draft, v string) { o.HTML = v }),
	str("Source", "markdown", "", "Markdown rendered as a styled page.", func(o *draft, v string) { o.Markdown = v }),

	// Output.
	withAliases(enum("Output", "format", shotd.FormatPNG, "Result format; mp4, webm, gif, mov and avi record a video; gif_still is a one-frame gif; html and markdown are the rendered page as text. jpg is read as jpeg.", Formats,
		func(o *draft, v string) { o.Format = v }), map[string]string{"jpg": shotd.FormatJPEG}),
	integer("Output", "image_quality", "80", "Compression for jpeg, webp, avif, jp2 and heif.",
		func(o *draft, v int) { o.ImageQuality = v }).withBounds(1, 100),
	integer("Output", "image_width", "", "Resize final image width.",
		func(o *draft, v int) { o.ImageWidth = v }).withBounds(1, 8000),
	integer("Output", "image_height", "", "Resize final image height.",
		func(o *draft, v int) { o.ImageHeight = v }).withBounds(1, 8000),
	enum("Output", "image_fit", shotd.FitFill, "With image_width and image_height both: fill stretches to the size; cover fills it and crops; contain fits inside and pads with image_background; inside fits inside (smaller, no padding); outside covers it (larger, no crop).", ImageFits,
		func(o *draft, v string) { o.ImageFit = v }),
	enum("Output", "image_position", "center", "Where cover keeps the image and contain places it.", ImagePositions,
		func(o *draft, v string) { o.ImagePosition = v }),
	str("Output", "image_background", "ffffff", "Colour of contain's padding: rrggbb or rrggbbaa (hex, # optional) or transparent (png, webp).",
		func(o *draft, v string) { o.ImageBackground, _ = parseColour(v) }).checked(checkColour),
	enum("Output", "png_compression", shotd.PNGFast, "PNG encoding: fast (quicker, larger file) or best (the smallest file, slower).", PNGCompressions,
		func(o *draft, v string) { o.PNGCompression = v }),
	boolean("Output", "omit_background", "false", "Transparent page background (png, webp).",
		func(o *draft, v bool) { o.OmitBackground = v }),
	enum("Output", "response_type", "by_format", "Return the file itself, JSON with a link to it, or nothing (empty: render, store if asked, answer 200 without a body).", ResponseTypes,
		func(o *draft, v string) { o.ResponseType = v }).nonRender(),

	// Viewport.
	integer("Viewport", "viewport_width", "1280", "Browser window width.",
		func(o *draft, v int) { o.ViewportWidth = v }).withBounds(100, 3840),
	integer("Viewport", "viewport_height", "1024", "Window height; a video uses 720 unless set.",
		func(o *draft, v int) { o.ViewportHeight = v }).withBounds(100, 4320),
	number("Viewport", "device_scale_factor", "1", "Pixel density.",
		func(o *draft, v float64) { o.DeviceScaleFactor = v }).withBounds(1, 3),
	enum("Viewport", "viewport_device", "", "Device preset emulation.", nil,
		func(o *draft, v string) { o.ViewportDevice = v }),
	boolean("Viewport", "viewport_mobile", "false", "Mobile layout (honours the viewport meta tag).",
		func(o *draft, v bool) { o.ViewportMobile = v }),
	boolean("Viewport", "viewport_landscape", "false", "Rotate viewport to landscape.",
		func(o *draft, v bool) { o.ViewportLandscape = v }),

	// Area.
	boolean("Area", "full_page", "false", "Capture the whole page.", func(o *draft, v bool) { o.FullPage = v }),
	boolean("Area", "full_page_scroll", "true", "Scroll first so lazy images load.",
		func(o *draft, v bool) { o.FullPageScroll = v }),
	integer("Area", "full_page_max_height", "20000", "Cut a full-page capture at this height.",
		func(o *draft, v int) { o.FullPageMaxHeight = v }).withBounds(100, 30000),
	str("Area", "selector", "", "Capture only the first matching element.",
		func(o *draft, v string) { o.Selector = v }).checked(checkSelector),
	integer("Area", "clip_x", "", "Left edge of the area.", func(o *draft, v int) { o.ClipX = v }).withMin(0),
	integer("Area", "clip_y", "", "Top edge of the area.", func(o *draft, v int) { o.ClipY = v }).withMin(0),
	integer("Area", "clip_width", "", "Area width.", func(o *draft, v int) { o.ClipWidth = v }).withBounds(1, 8000),
	integer("Area", "clip_height", "", "Area height.", func(o *draft, v int) { o.ClipHeight = v }).withBounds(1, 30000),

	// Waiting.
	enum("Waiting", "wait_until", shotd.WaitLoad, "Page event that marks the page loaded.", WaitConditions,
		func(o *draft, v string) { o.WaitUntil = v }),
	number("Waiting", "delay", "0", "Extra wait after load, in seconds.",
		func(o *draft, v float64) { o.Delay = seconds(v) }).withBounds(0, 30),
	number("Waiting", "timeout", "30", "Give up if the page is not ready (error timeout), in seconds.",
		func(o *draft, v float64) { o.Timeout = seconds(v) }).withBounds(1, 90),
	str("Waiting", "wait_for_selector", "", "Wait until the element is visible.",
		func(o *draft, v string) { o.WaitForSelector = v }).checked(checkSelector),
	str("Waiting", "wait_for_expression", "", "Wait until this JavaScript expression is true (a promise is awaited), within timeout.",
		func(o *draft, v string) { o.WaitForExpression = v }).checked(checkExpression),
	str("Waiting", "wait_for_selector_hidden", "", "Wait until no element matching this selector is visible (a spinner gone), within timeout.",
		func(o *draft, v string) { o.WaitForSelectorHidden = v }).checked(checkSelector),

	// Page behaviour.
	boolean("Page", "dark_mode", "false", "Ask for the dark theme.", func(o *draft, v bool) { o.DarkMode = v }),
	boolean("Page", "reduced_motion", "false", "Ask for animations off.", func(o *draft, v bool) { o.ReducedMotion = v }),
	enum("Page", "media_type", "screen", "CSS media type.", MediaTypes, func(o *draft, v string) { o.MediaType = v }),
	list("Page", "hide_selectors", ArrayComma, "Hide all matching elements.",
		func(o *draft, v []string) { o.HideSelectors = v }).checked(checkSelector),
	str("Page", "styles", "", "CSS added to the page.", func(o *draft, v string) { o.Styles = v }),
	str("Page", "scripts", "", "Script run before capture.", func(o *draft, v string) { o.Scripts = v }),
	str("Page", "click", "", "Click the first matching element before capture.",
		func(o *draft, v string) { o.Click = v }).checked(checkSelector),
	str("Page", "user_agent", "", "User-Agent header the browser sends.",
		func(o *draft, v string) { o.UserAgent = v }).checked(checkHeaderValue),
	list("Page", "headers", ArrayRepeat, "Extra HTTP headers, each `Name: value`.",
		func(o *draft, v []string) { o.Headers = parseHeaders(v) }).checked(checkHeader),
	list("Page", "cookies", ArrayRepeat, "Cookies to set, each `name=value; Domain=<domain>`.",
		func(o *draft, v []string) { o.Cookies = parseCookies(v) }).checked(checkCookie),
	str("Page", "authorization", "", "Authorization header sent to the target site only.",
		func(o *draft, v string) { o.Authorization = v }).checked(checkHeaderValue),
	str("Page", "time_zone", "", "IANA time zone the page sees.",
		func(o *draft, v string) { o.TimeZone = v }).checked(checkTimeZone),
	boolean("Page", "disable_javascript", "false", "Render with the page's JavaScript turned off.",
		func(o *draft, v bool) { o.DisableJavaScript = v }),

	// Blocking.
	boolean("Blocking", "block_ads", "false", "Block ad network requests.", func(o *draft, v bool) { o.BlockAds = v }),
	boolean("Blocking", "block_trackers", "false", "Block analytics and tracking scripts.",
		func(o *draft, v bool) { o.BlockTrackers = v }),
	boolean("Blocking", "block_cookie_banners", "false", "Hide cookie consent banners.",
		func(o *draft, v bool) { o.BlockCookieBanners = v }),
	boolean("Blocking", "block_chats", "false", "Block live-chat widgets.", func(o *draft, v bool) { o.BlockChats = v }),
	withEnum(list("Blocking", "block_resources", ArrayComma, "Block whole resource kinds.",
		func(o *draft, v []string) { o.BlockResources = v }), ResourceTypes),
	list("Blocking", "block_requests", ArrayComma, "Block matching request URLs (`*` wildcard).",
		func(o *draft, v []string) { o.BlockRequests = v }).checked(checkPattern),

	// PDF.
	enum("PDF", "pdf_paper_format", "a4", "Paper size.", PaperFormats, func(o *draft, v string) { o.PDFPaperFormat = v }),
	boolean("PDF", "pdf_landscape", "false", "Landscape pages.", func(o *draft, v bool) { o.PDFLandscape = v }),
	boolean("PDF", "pdf_print_background", "true", "Print backgrounds.",
		func(o *draft, v bool) { o.PDFPrintBackground = v }),
	str("PDF", "pdf_margin", "", "Margin on all sides (px, in, cm, mm).",
		func(o *draft, v string) { o.PDFMargin = v }).checked(checkLength),
	str("PDF", "pdf_margin_top", "", "Top margin; overrides pdf_margin.",
		func(o *draft, v string) { o.PDFMarginTop = v }).checked(checkLength),
	str("PDF", "pdf_margin_right", "", "Right margin; overrides pdf_margin.",
		func(o *draft, v string) { o.PDFMarginRight = v }).checked(checkLength),
	str("PDF", "pdf_margin_bottom", "", "Bottom margin; overrides pdf_margin.",
		func(o *draft, v string) { o.PDFMarginBottom = v }).checked(checkLength),
	str("PDF", "pdf_margin_left", "", "Left margin; overrides pdf_margin.",
		func(o *draft, v string) { o.PDFMarginLeft = v }).checked(checkLength),
	boolean("PDF", "pdf_fit_one_page", "false", "Whole page on one tall PDF page.",
		func(o *draft, v bool) { o.PDFFitOnePage = v }),
	str("PDF", "pdf_header", "", "HTML of each page's header, in the top margin; Chrome fills elements of class pageNumber, totalPages, title, url and date.",
		func(o *draft, v string) { o.PDFHeader = v }).checked(checkTemplate),
	str("PDF", "pdf_footer", "", "HTML of each page's footer, in the bottom margin; the same classes as pdf_header.",
		func(o *draft, v string) { o.PDFFooter = v }).checked(checkTemplate),
	str("PDF", "pdf_page_ranges", "", "Pages to keep, one-based: 1-3,5,8- (8- is 8 to the end).",
		func(o *draft, v string) { o.PDFPageRanges = v }).checked(checkPageRanges),
	number("PDF", "pdf_scale", "1", "Scale of the page's rendering.",
		func(o *draft, v float64) { o.PDFScale = v }).withBounds(0.1, 2),
	str("PDF", "pdf_paper_width", "", "Paper width (px, in, cm, mm), with pdf_paper_height; instead of pdf_paper_format.",
		func(o *draft, v string) { o.PDFPaperWidth = v }).checked(checkPaperLength),
	str("PDF", "pdf_paper_height", "", "Paper height (px, in, cm, mm), with pdf_paper_width.",
		func(o *draft, v string) { o.PDFPaperHeight = v }).checked(checkPaperLength),
	boolean("PDF", "pdf_prefer_css_page_size", "false", "Use the page's CSS @page size where it sets one.",
		func(o *draft, v bool) { o.PDFPreferCSSPageSize = v }),
	boolean("PDF", "pdf_tagged", "true", "Tagged (accessible) PDF, as Chrome makes by default; false leaves the structure out.",
		func(o *draft, v bool) { o.PDFUntagged = !v }),
	boolean("PDF", "pdf_outline", "false", "Document outline (bookmarks) from the page's headings; makes the PDF tagged too.",
		func(o *draft, v bool) { o.PDFOutline = v }),

	// Video.
	number("Video", "video_duration", "", "Video length in seconds (default: follows page height).",
		func(o *draft, v float64) { o.VideoDuration = seconds(v) }).withBounds(1, 30),
	number("Video", "video_max_duration", "30", "Longest length when it follows the page, in seconds.",
		func(o *draft, v float64) { o.VideoMaxDuration = seconds(v) }).withBounds(1, 30),
	integer("Video", "video_fps", "24", "Frames per second; a gif uses at most 15.",
		func(o *draft, v int) { o.VideoFPS = v }).withBounds(5, 30),
	boolean("Video", "video_scroll", "true", "Scroll top to bottom while recording.",
		func(o *draft, v bool) { o.VideoScroll = v }),
	boolean("Video", "video_scroll_back", "false", "Scroll back to top at the end.",
		func(o *draft, v bool) { o.VideoScrollBack = v }),
	enum("Video", "video_scroll_easing", "ease_in_out", "Scroll motion.", Easings,
		func(o *draft, v string) { o.VideoScrollEasing = v }),

	// Cache.
	boolean("Cache", "cache", "false", "Serve a stored copy when the same request was made before.",
		func(o *draft, v bool) { o.Cache = v }).nonRender(),
	integer("Cache", "cache_ttl", "14400", "Validity of a cached copy, in seconds.",
		func(o *draft, v int) { o.CacheTTL = time.Duration(v) * time.Second }).withBounds(60, 2592000).nonRender(),
	str("Cache", "cache_key", "", "Change the value to force a fresh render.",
		func(o *draft, v string) { o.CacheKey = v }),

	// Background and webhook.
	boolean("Background", "async", "false", "Return at once (202) and render in the background.",
		func(o *draft, v bool) { o.Async = v }).nonRender(),
	str("Background", "webhook_url", "", "Address that receives the result when the render is done.",
		func(o *draft, v string) { o.WebhookURL = v }).nonRender(),
	boolean("Background", "webhook_sign", "true", "Sign the webhook body.",
		func(o *draft, v bool) { o.WebhookSign = v }).nonRender(),

	// Authentication parameters.
	str("Authentication", "access_key", "", "Access key (query form).",
		func(o *draft, v string) { o.AccessKey = v }).nonRender(),
	str("Authentication", "signature", "", "Hex HMAC-SHA256 signature for signed requests.",
		func(o *draft, v string) { o.Signature = v }).nonRender(),
	// Bounded below 1e11 so that a millisecond timestamp is refused rather than read as year 50000.
	integer("Authentication", "expires", "", "Unix time in whole seconds after which the request is refused.",
		func(o *draft, v int) { o.Expires, o.HasExpires = int64(v), true }).withBounds(0, 99999999999).nonRender(),
}, storageOptionSpecs(), pageOptionSpecs(), metadataOptionSpecs(), fullPageOptionSpecs(), waitOptionSpecs(),
	proxyOptionSpecs(), jobOptionSpecs())

func withEnum(s *OptionSpec, values []string) *OptionSpec { s.Enum = values; return s }

func withAliases(s *OptionSpec, aliases map[string]string) *OptionSpec { s.Aliases = aliases; return s }

var optionsByName = func() map[string]*OptionSpec {
	m := make(map[string]*OptionSpec, len(OptionTable))
	for _, s := range OptionTable {
		m[s.Name] = s
	}
	// viewport_device's values live in devices.go; bind them here so the table stays one source.
	m["viewport_device"].Enum = DeviceNames
	return m
}()

// LookupOption returns the spec of an option name.
func LookupOption(name string) (*OptionSpec, bool) {
	s, ok := optionsByName[name]
	return s, ok
}

// ClosestOption returns the known option name nearest to name, for "did you mean" messages.
func ClosestOption(name string) string {
	best, bestDist := "", 1<<30
	lname := strings.ToLower(name)
	for _, s := range OptionTable {
		if d := editDistance(lname, s.Name); d < bestDist {
			best, bestDist = s.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
