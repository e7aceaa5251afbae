package shotd

import (
	"math"
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
	Proxy       *UpstreamProxy
	proxyBypass []string // proxy_bypass_hosts, until checkProxyOptions puts them in Proxy

	// Background.
	ExternalIdentifier string
	NoWebhookErrors    bool // webhook_errors=false: no webhook for a failed job

	refused []string // trueOnly options given false
}

// Values of the ScreenshotOne options.
var (
	ContentFormats            = []string{"html", "markdown"}
	FullPageAlgorithms        = []string{"default", "by_sections"}
	ScriptsWaitConditions     = []string{"load", "domcontentloaded", "networkidle0", "networkidle2"}
	WaitForSelectorAlgorithms = []string{"at_least_one", "at_least_by_count"}
	SelectorAlgorithms        = []string{"default", "clip"}
)

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
// fix it (image_height, or a clip of the page not resized); 0 when the page decides.
func knownSlicedHeight(o *Options) int {
	switch {
	case o.ImageHeight > 0:
		return o.ImageHeight
	case o.HasClip && o.Selector == "" && o.ImageWidth == 0 && o.ClipHeight > 0:
		return int(math.Round(float64(o.ClipHeight) * max(o.DeviceScaleFactor, 1)))
	}
	return 0
}

// WantsMetadata reports whether any metadata_* option asks for something.
func (s *S1Options) WantsMetadata() bool {
	return s.MetaImageSize || s.MetaFonts || s.MetaIcon || s.MetaOpenGraph || s.MetaPageTitle ||
		s.MetaContent || s.MetaStatusCode || s.MetaHeaders
}

// s1OptionSpecs are the ScreenshotOne take options shotd honours. The ones whose only honest
// value is shotd's own behaviour accept that value alone (trueOnly).
func s1OptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		boolean("Page", "bypass_csp", "false", "Set the page's Content-Security-Policy aside, so that styles and scripts are not refused.",
			func(o *Options, v bool) { o.S1.BypassCSP = v }),
		str("Page", "hover", "", "Move the mouse over the first matching element before capture.",
			func(o *Options, v string) { o.S1.Hover = v }).checked(checkSelector),
		str("Page", "scroll_into_view", "", "Scroll the first matching element to the top of the viewport before capture.",
			func(o *Options, v string) { o.S1.ScrollIntoView = v }).checked(checkSelector),
		integer("Page", "scroll_into_view_adjust_top", "", "Pixels to scroll further down (or up, negative) after scroll_into_view.",
			func(o *Options, v int) { o.S1.ScrollIntoViewAdjust = v }).withBounds(-10000, 10000),
		boolean("Viewport", "viewport_has_touch", "false", "Emulate a touch screen.",
			func(o *Options, v bool) { o.HasTouch = o.HasTouch || v }),
		number("Viewport", "geolocation_latitude", "", "Latitude the page's geolocation API reports; needs geolocation_longitude.",
			func(o *Options, v float64) { o.S1.Latitude, o.S1.HasGeolocation = v, true }).withBounds(-90, 90),
		number("Viewport", "geolocation_longitude", "", "Longitude the page's geolocation API reports; needs geolocation_latitude.",
			func(o *Options, v float64) { o.S1.Longitude, o.S1.HasGeolocation = v, true }).withBounds(-180, 180),
		number("Viewport", "geolocation_accuracy", "", "Accuracy of the position, in metres.",
			func(o *Options, v float64) { o.S1.Accuracy = v }).withBounds(0, 1e7),
		str("Waiting", "fail_if_content_contains", "", "Fail with content_check_failed when the page's text or HTML contains this (case-insensitive).",
			func(o *Options, v string) { o.S1.FailIfContentContains = v }).checked(notEmpty),
		str("Waiting", "fail_if_content_missing", "", "Fail with content_check_failed when the page's text and HTML lack this (case-insensitive).",
			func(o *Options, v string) { o.S1.FailIfContentMissing = v }).checked(notEmpty),
		trueOnly("Waiting", "error_on_selector_not_found", "nothing matching selector or wait_for_selector answers selector_not_found.",
			"shotd always answers selector_not_found when selector matches nothing; it never captures something else instead"),
		trueOnly("Waiting", "error_on_click_selector_not_found", "nothing matching click answers selector_not_found.",
			"shotd always answers selector_not_found when click matches nothing"),
		trueOnly("Waiting", "error_on_hover_selector_not_found", "nothing matching hover answers selector_not_found.",
			"shotd always answers selector_not_found when hover matches nothing"),
		trueOnly("Waiting", "ignore_host_errors", "a page answered with an HTTP error status is rendered as it is.",
			"shotd renders a page whatever its HTTP status; failing on an error status is not available"),
		trueOnly("Area", "capture_beyond_viewport", "full_page, selector and clip capture beyond the viewport.",
			"shotd always captures beyond the viewport for full_page, selector and clip"),
		metadataOption("metadata_image_size", "metadata.image_size, the image's width and height in pixels.",
			func(s *S1Options) *bool { return &s.MetaImageSize }),
		metadataOption("metadata_page_title", "metadata.page_title, the document's title.",
			func(s *S1Options) *bool { return &s.MetaPageTitle }),
		metadataOption("metadata_open_graph", "metadata.open_graph, the page's og: meta tags (og:title as title, and so on).",
			func(s *S1Options) *bool { return &s.MetaOpenGraph }),
		metadataOption("metadata_icon", "metadata.icon, the url and type of the page's icon (its link rel=icon, else /favicon.ico).",
			func(s *S1Options) *bool { return &s.MetaIcon }),
		metadataOption("metadata_fonts", "metadata.fonts, the font families the page's text is set in and the web fonts it loaded.",
			func(s *S1Options) *bool { return &s.MetaFonts }),
		metadataOption("metadata_http_response_status_code", "metadata.http_response_status_code, the HTTP status of the page's document (url sources).",
			func(s *S1Options) *bool { return &s.MetaStatusCode }),
		metadataOption("metadata_http_response_headers", "metadata.http_response_headers, the response headers of the page's document (url sources).",
			func(s *S1Options) *bool { return &s.MetaHeaders }),
		metadataOption("metadata_content", "metadata.content, a link to the page's content as a file of its own (see metadata_content_format).",
			func(s *S1Options) *bool { return &s.MetaContent }),
		enum("Metadata", "metadata_content_format", "html", "Format of metadata_content: the page's HTML as it is rendered, or that HTML converted to Markdown.", ContentFormats,
			func(o *Options, v string) { o.S1.MetaContentFormat = v }),
		boolean("Metadata", "include_shadow_dom", "false", "metadata_content includes the content of the page's open shadow roots.",
			func(o *Options, v bool) { o.S1.IncludeShadowDOM = v }),
		enum("Area", "full_page_algorithm", "default", "default captures the whole page in one piece; by_sections scrolls the viewport down the page and stitches what each position shows, so that sticky and fixed elements and scroll-driven content look as a visitor sees them.", FullPageAlgorithms,
			func(o *Options, v string) { o.S1.FullPageAlgorithm = v }),
		integer("Area", "full_page_scroll_by", "", "CSS pixels each full_page_scroll step moves (default: one viewport).",
			func(o *Options, v int) { o.S1.FullPageScrollBy = v }).withBounds(50, 10000),
		integer("Area", "full_page_scroll_delay", "", "Milliseconds to wait after each full_page_scroll step (default: until the page stops adding content, at most 300).",
			func(o *Options, v int) { o.S1.FullPageScrollDelay = time.Duration(v) * time.Millisecond }).withBounds(0, 5000),
		boolean("Area", "full_page_slices", "false", "Cut the full-page image into vertical slices: a JSON answer lists them (slices, each with its own file), any other answer is a zip of them.",
			func(o *Options, v bool) { o.S1.Slices = v }),
		integer("Area", "full_page_slice_height", "4000", "Height of each slice in pixels; the last one may be shorter. A render makes at most 100 slices.",
			func(o *Options, v int) { o.S1.SliceHeight = v }).withBounds(1, MaxSliceHeight),
		integer("Area", "full_page_slice_overlap_height", "0", "Pixels each slice repeats of the one before it.",
			func(o *Options, v int) { o.S1.SliceOverlap = v }).withBounds(0, MaxSliceHeight-1),
		number("Waiting", "navigation_timeout", "", "Seconds the navigation may take until wait_until is met; past it the render fails with timeout. The timeout option still bounds the whole loading.",
			func(o *Options, v float64) { o.S1.NavigationTimeout = seconds(v) }).withBounds(1, 90),
		withEnum(list("Waiting", "scripts_wait_until", ArrayRepeat, "When scripts navigate the page: what to wait for on the new page (networkidle0: no request in flight for 500 ms; networkidle2: at most two).",
			func(o *Options, v []string) { o.S1.ScriptsWaitUntil = v }), ScriptsWaitConditions),
		enum("Waiting", "wait_for_selector_algorithm", "at_least_one", "at_least_one: wait_for_selector waits for any element its selector list matches; at_least_by_count: for a match of every selector of the comma-separated list.", WaitForSelectorAlgorithms,
			func(o *Options, v string) { o.S1.WaitForSelectorAlgorithm = v }),
		enum("Area", "selector_algorithm", "default", "How selector is captured: default and clip both capture the element's box as a clip of the page (shotd has one way).", SelectorAlgorithms,
			func(o *Options, v string) { o.S1.SelectorAlgorithm = v }),
		boolean("Area", "selector_scroll_into_view", "true", "Scroll the selector's element into view before capturing it, so that lazy content in it loads; false captures it where it is.",
			func(o *Options, v bool) { o.S1.SelectorNoScroll = !v }),
		list("Waiting", "fail_if_request_failed", ArrayRepeat, "Fail with navigation_failed when a request whose URL matches one of these patterns (`*` wildcard) fails at the network level (refused, reset, DNS). Requests the render blocks itself do not count.",
			func(o *Options, v []string) { o.S1.FailIfRequestFailed = v }).checked(checkPattern),
		boolean("Blocking", "block_socials", "false", "Block social-media widgets and embeds (share buttons, like boxes, embedded posts).",
			func(o *Options, v bool) { o.S1.BlockSocials = v }),
		boolean("Blocking", "block_banners_by_heuristics", "false", "Hide banners found by their look: fixed or sticky boxes along the top or bottom edge that are not the page's header or navigation, and full-screen overlays.",
			func(o *Options, v bool) { o.S1.BlockBannersByHeuristics = v }),
		str("Network", "proxy", "", "Your HTTP proxy, http://user:password@host:port, that the render's connections leave through. Only http:// proxies; https sites go through CONNECT tunnels. The egress guard still checks every host the page asks for, and the proxy's own address (resolved once); the proxy is asked for the address checked, not the name. The credentials are never logged; a background job keeps them sealed.",
			func(o *Options, v string) { o.S1.Proxy, _ = parseProxy(v) }).checked(checkProxy),
		list("Network", "proxy_bypass_hosts", ArrayRepeat, "Hosts reached directly rather than through proxy (still through the egress guard): names, *.example.com for a domain and its subdomains, IP addresses; repeated or comma-separated.",
			func(o *Options, v []string) {
				for _, it := range v {
					for _, h := range splitBypass(it) {
						o.S1.proxyBypass = append(o.S1.proxyBypass, bypassHost(h))
					}
				}
			}).checked(checkBypassHosts),
		str("Background", "external_identifier", "", "Your own identifier for the job, kept in its record and in its webhook (up to 256 printable characters).",
			func(o *Options, v string) { o.S1.ExternalIdentifier = v }).checked(checkExternalID).nonRender(),
		boolean("Background", "webhook_errors", "true", "Send the webhook for failed jobs too (job.failed); false sends it for succeeded jobs only.",
			func(o *Options, v bool) { o.S1.NoWebhookErrors = !v }).nonRender(),
		str("Output", "attachment_name", "", "File name of the answer's Content-Disposition: attachment header.",
			func(o *Options, v string) { o.S1.AttachmentName = v }).checked(checkAttachmentName).nonRender(),
	}
}

// metadataOption is a metadata_* option: a boolean that asks for field in the JSON answer.
func metadataOption(name, doc string, field func(*S1Options) *bool) *OptionSpec {
	return boolean("Metadata", name, "false", "JSON answer: "+doc, func(o *Options, v bool) { *field(&o.S1) = v })
}

// trueOnly is a boolean option whose only honest value is true, shotd's own behaviour: false is
// refused with why (checkS1Options), as the parser checks no boolean beyond its kind.
func trueOnly(group, name, doc, why string) *OptionSpec {
	onlyWhy[name] = "only true is accepted: " + why
	return boolean(group, name, "true", "true only: "+doc, func(o *Options, v bool) {
		if !v {
			o.S1.refused = append(o.S1.refused, name)
		}
	})
}

// onlyWhy holds the refusal of each trueOnly option.
var onlyWhy = map[string]string{}

// checkExternalID keeps an identifier that fits a record and a log line.
func checkExternalID(v string) string {
	if v == "" || len(v) > 256 {
		return "must be 1 to 256 characters"
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return "must not contain control characters"
		}
	}
	return ""
}

// checkAttachmentName keeps a file name that fits a quoted Content-Disposition parameter.
func checkAttachmentName(v string) string {
	if v == "" || len(v) > 255 {
		return "must be 1 to 255 characters"
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == '/' || c > 0x7e {
			return "must be printable ASCII without quotes, backslashes or slashes"
		}
	}
	return ""
}

// s1Requires lists the ScreenshotOne options that refine another one: each of names, given
// without what has finds in the request, is refused as needing it.
var s1Requires = []struct {
	names []string
	needs string
	has   func(o *Options) bool
}{
	{[]string{"geolocation_accuracy"}, "geolocation_latitude and geolocation_longitude", func(o *Options) bool { return o.S1.HasGeolocation }},
	{[]string{"scroll_into_view_adjust_top"}, "scroll_into_view", func(o *Options) bool { return o.S1.ScrollIntoView != "" }},
	{[]string{"metadata_content_format", "include_shadow_dom"}, "metadata_content=true", func(o *Options) bool { return o.S1.MetaContent }},
	{[]string{"full_page_algorithm", "full_page_scroll_by", "full_page_scroll_delay", "full_page_slices"}, "full_page=true", func(o *Options) bool { return o.FullPage }},
	{[]string{"full_page_slice_height", "full_page_slice_overlap_height"}, "full_page_slices=true", func(o *Options) bool { return o.S1.Slices }},
	{[]string{"scripts_wait_until"}, "scripts", func(o *Options) bool { return o.Scripts != "" }},
	{[]string{"wait_for_selector_algorithm"}, "wait_for_selector", func(o *Options) bool { return o.WaitForSelector != "" }},
	{[]string{"selector_algorithm", "selector_scroll_into_view"}, "selector", func(o *Options) bool { return o.Selector != "" }},
	{[]string{"proxy_bypass_hosts"}, "proxy", func(o *Options) bool { return o.S1.Proxy != nil }},
}

// checkS1Options validates the rules between the ScreenshotOne options (from crossCheck).
func checkS1Options(o *Options, given map[string]bool, fail func(string, string, ...any)) {
	for _, n := range o.S1.refused {
		fail(n, "%s", onlyWhy[n])
	}
	for _, r := range s1Requires {
		for _, n := range r.names {
			if given[n] && !r.has(o) {
				fail(n, "needs %s", r.needs)
			}
		}
	}
	if given["geolocation_latitude"] != given["geolocation_longitude"] {
		fail("geolocation_latitude", "geolocation_latitude and geolocation_longitude go together")
	}
	s := &o.S1
	if s.MetaContentFormat == "" {
		s.MetaContentFormat = "html"
	}
	notImage := IsVideo(o.Format) || o.Format == FormatPDF
	if s.MetaImageSize && notImage {
		fail("metadata_image_size", "applies to images only")
	}
	if s.Slices && notImage {
		fail("full_page_slices", "applies to images only")
	}
	if s.Slices && s.SliceOverlap >= s.SliceHeight {
		fail("full_page_slice_overlap_height", "must be less than full_page_slice_height (%d)", s.SliceHeight)
	} else if h := knownSlicedHeight(o); s.Slices && h > 0 {
		// The count is known now: refused before any render. Otherwise the render refuses a
		// page that makes too many, before it encodes any.
		if n := SliceCount(h, s.SliceHeight, s.SliceOverlap); n > MaxSlices {
			fail("full_page_slice_height", "cuts the %d px high image into %d slices; at most %d are allowed (raise full_page_slice_height or lower full_page_slice_overlap_height)", h, n, MaxSlices)
		}
	}
	if given["full_page_algorithm"] && s.FullPageAlgorithm == "by_sections" && IsVideo(o.Format) {
		fail("full_page_algorithm", "applies to images only")
	}
	if given["navigation_timeout"] && o.HTML+o.Markdown != "" {
		fail("navigation_timeout", "applies to url sources only")
	}
	checkProxyOptions(o)
}

// notEmpty refuses an empty string value.
func notEmpty(v string) string {
	if v == "" {
		return "must not be empty"
	}
	return ""
}

// selfHosted is why an option of ScreenshotOne's hosted service means nothing on one's own.
const selfHosted = "it belongs to ScreenshotOne's hosted service and has no meaning on a self-hosted shotd"

// RefusedOptions are ScreenshotOne option names shotd knows but does not honour, each with the
// reason its refusal gives, so that none is refused as unknown: a client moving from
// ScreenshotOne learns why, not that it misspelled a name.
var RefusedOptions = map[string]string{
	"request_gpu_rendering":       selfHosted + "; shotd renders with the host's software rasteriser",
	"fail_if_gpu_rendering_fails": selfHosted + "; shotd renders with the host's software rasteriser",
}
