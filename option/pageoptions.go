package option

import (
	"github.com/shotd/shotd"
)

// Values of the waiting and selector options.
var (
	ScriptsWaitConditions     = []string{"load", "domcontentloaded", "networkidle0", "networkidle2"}
	WaitForSelectorAlgorithms = []string{"at_least_one", "at_least_by_count"}
	SelectorAlgorithms        = []string{"default", "clip"}
)

// pageOptionSpecs are the rows of the page actions (hover, scroll_into_view), the page's
// emulation (CSP, touch, geolocation), the content checks and the true-only options: those
// whose only honest value is shotd's own behaviour accept that value alone (trueOnly).
func pageOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		boolean("Page", "bypass_csp", "false", "Set the page's Content-Security-Policy aside, so that styles and scripts are not refused.",
			func(o *draft, v bool) { o.BypassCSP = v }),
		str("Page", "hover", "", "Move the mouse over the first matching element before capture.",
			func(o *draft, v string) { o.Hover = v }).checked(checkSelector),
		str("Page", "scroll_into_view", "", "Scroll the first matching element to the top of the viewport before capture.",
			func(o *draft, v string) { o.ScrollIntoView = v }).checked(checkSelector),
		integer("Page", "scroll_into_view_adjust_top", "", "Pixels to scroll further down (or up, negative) after scroll_into_view.",
			func(o *draft, v int) { o.ScrollIntoViewAdjust = v }).withBounds(-10000, 10000),
		boolean("Viewport", "viewport_has_touch", "false", "Emulate a touch screen.",
			func(o *draft, v bool) { o.HasTouch = o.HasTouch || v }),
		number("Viewport", "geolocation_latitude", "", "Latitude the page's geolocation API reports; needs geolocation_longitude.",
			func(o *draft, v float64) { o.Latitude, o.HasGeolocation = v, true }).withBounds(-90, 90),
		number("Viewport", "geolocation_longitude", "", "Longitude the page's geolocation API reports; needs geolocation_latitude.",
			func(o *draft, v float64) { o.Longitude, o.HasGeolocation = v, true }).withBounds(-180, 180),
		number("Viewport", "geolocation_accuracy", "", "Accuracy of the position, in metres.",
			func(o *draft, v float64) { o.Accuracy = v }).withBounds(0, 1e7),
		list("Waiting", "fail_if_content_contains", ArrayRepeat, "Fail with content_check_failed when the page's text or HTML contains any of these texts (case-insensitive).",
			func(o *draft, v []string) { o.FailIfContentContains = v }).checked(notEmpty),
		list("Waiting", "fail_if_content_missing", ArrayRepeat, "Fail with content_check_failed when the page's text and HTML lack any of these texts (case-insensitive).",
			func(o *draft, v []string) { o.FailIfContentMissing = v }).checked(notEmpty),
		boolean("Waiting", "error_on_selector_not_found", "true", "false: when nothing matches selector, capture the viewport instead of failing with selector_not_found (ScreenshotOne's default on its /take).",
			func(o *draft, v bool) { o.SelectorOptional = !v }),
		boolean("Waiting", "error_on_click_selector_not_found", "true", "false: when nothing matches click, render without clicking instead of failing with selector_not_found.",
			func(o *draft, v bool) { o.ClickOptional = !v }),
		boolean("Waiting", "error_on_hover_selector_not_found", "true", "false: when nothing matches hover, render without hovering instead of failing with selector_not_found.",
			func(o *draft, v bool) { o.HoverOptional = !v }),
		boolean("Waiting", "ignore_host_errors", "true", "false: fail with host_returned_error when the page's document answers an HTTP status of 400 or more (ScreenshotOne's default on its paths); true renders it as it is.",
			func(o *draft, v bool) { o.FailOnHostError = !v }),
		trueOnly("Area", "capture_beyond_viewport", "full_page, selector and clip capture beyond the viewport.",
			"shotd always captures beyond the viewport for full_page, selector and clip"),
	}
}

// waitOptionSpecs are the rows of navigation_timeout, scripts_wait_until, the selector
// algorithms, fail_if_request_failed and the heuristic blocking.
func waitOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		number("Waiting", "navigation_timeout", "", "Seconds the navigation may take until wait_until is met; past it the render fails with timeout. The timeout option still bounds the whole loading.",
			func(o *draft, v float64) { o.NavigationTimeout = seconds(v) }).withBounds(1, 90),
		withEnum(list("Waiting", "scripts_wait_until", ArrayRepeat, "When scripts navigate the page: what to wait for on the new page (networkidle0: no request in flight for 500 ms; networkidle2: at most two).",
			func(o *draft, v []string) { o.ScriptsWaitUntil = v }), ScriptsWaitConditions),
		enum("Waiting", "wait_for_selector_algorithm", "at_least_one", "at_least_one: wait_for_selector waits for any element its selector list matches; at_least_by_count: for a match of every selector of the comma-separated list.", WaitForSelectorAlgorithms,
			func(o *draft, v string) { o.WaitForSelectorAlgorithm = v }),
		enum("Area", "selector_algorithm", "default", "How selector is captured: default and clip both capture the element's box as a clip of the page (shotd has one way).", SelectorAlgorithms,
			func(o *draft, v string) { o.SelectorAlgorithm = v }),
		boolean("Area", "selector_scroll_into_view", "true", "Scroll the selector's element into view before capturing it, so that lazy content in it loads; false captures it where it is.",
			func(o *draft, v bool) { o.SelectorNoScroll = !v }),
		list("Waiting", "fail_if_request_failed", ArrayRepeat, "Fail with navigation_failed when a request whose URL matches one of these patterns (`*` wildcard) fails at the network level (refused, reset, DNS). Requests the render blocks itself do not count.",
			func(o *draft, v []string) { o.FailIfRequestFailed = v }).checked(checkPattern),
		boolean("Blocking", "block_socials", "false", "Block social-media widgets and embeds (share buttons, like boxes, embedded posts).",
			func(o *draft, v bool) { o.BlockSocials = v }),
		boolean("Blocking", "block_banners_by_heuristics", "false", "Hide banners found by their look: fixed or sticky boxes along the top or bottom edge that are not the page's header or navigation, and full-screen overlays.",
			func(o *draft, v bool) { o.BlockBannersByHeuristics = v }),
	}
}

// jobOptionSpecs are the rows of a job's identifier, its webhook on failure and the
// answer's attachment name.
func jobOptionSpecs() []*OptionSpec {
	return []*OptionSpec{
		str("Background", "external_identifier", "", "Your own identifier for the job, kept in its record and in its webhook (up to 256 printable characters).",
			func(o *draft, v string) { o.ExternalIdentifier = v }).checked(checkExternalID).nonRender(),
		boolean("Background", "webhook_errors", "true", "Send the webhook for failed jobs too (job.failed); false sends it for succeeded jobs only.",
			func(o *draft, v bool) { o.NoWebhookErrors = !v }).nonRender(),
		str("Output", "attachment_name", "", "File name of the answer's Content-Disposition: attachment header.",
			func(o *draft, v string) { o.AttachmentName = v }).checked(checkAttachmentName).nonRender(),
	}
}

// trueOnly is a boolean option whose only honest value is true, shotd's own behaviour: false is
// refused with why (checkRefinements), as the parser checks no boolean beyond its kind.
func trueOnly(group, name, doc, why string) *OptionSpec {
	onlyWhy[name] = "only true is accepted: " + why
	return boolean(group, name, "true", "true only: "+doc, func(o *draft, v bool) {
		if !v {
			o.refused = append(o.refused, name)
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

// refinements lists the options that refine another one: each of names, given without what has
// finds in the request, is refused as needing it.
var refinements = []struct {
	names []string
	needs string
	has   func(o *shotd.Options) bool
}{
	{[]string{"geolocation_accuracy"}, "geolocation_latitude and geolocation_longitude", func(o *shotd.Options) bool { return o.HasGeolocation }},
	{[]string{"scroll_into_view_adjust_top"}, "scroll_into_view", func(o *shotd.Options) bool { return o.ScrollIntoView != "" }},
	{[]string{"metadata_content_format", "include_shadow_dom"}, "metadata_content=true", func(o *shotd.Options) bool { return o.MetaContent }},
	{[]string{"full_page_algorithm", "full_page_scroll_by", "full_page_scroll_delay", "full_page_slices"}, "full_page=true", func(o *shotd.Options) bool { return o.FullPage }},
	{[]string{"full_page_slice_height", "full_page_slice_overlap_height"}, "full_page_slices=true", func(o *shotd.Options) bool { return o.Slices }},
	{[]string{"scripts_wait_until"}, "scripts", func(o *shotd.Options) bool { return o.Scripts != "" }},
	{[]string{"wait_for_selector_algorithm"}, "wait_for_selector", func(o *shotd.Options) bool { return o.WaitForSelector != "" }},
	{[]string{"selector_algorithm", "selector_scroll_into_view"}, "selector", func(o *shotd.Options) bool { return o.Selector != "" }},
	{[]string{"proxy_bypass_hosts"}, "proxy", func(o *shotd.Options) bool { return o.Proxy != nil }},
}

// checkRefinements validates the rules between the options of this file, metadata.go and
// fullpage.go (from crossCheck).
func checkRefinements(d *draft, given map[string]bool, fail func(string, string, ...any)) {
	for _, n := range d.refused {
		fail(n, "%s", onlyWhy[n])
	}
	o := d.Options
	for _, r := range refinements {
		for _, n := range r.names {
			if given[n] && !r.has(o) {
				fail(n, "needs %s", r.needs)
			}
		}
	}
	if given["geolocation_latitude"] != given["geolocation_longitude"] {
		fail("geolocation_latitude", "geolocation_latitude and geolocation_longitude go together")
	}
	s := o
	if s.MetaContentFormat == "" {
		s.MetaContentFormat = "html"
	}
	notImage := shotd.IsVideo(o.Format) || o.Format == shotd.FormatPDF || shotd.IsDocument(o.Format)
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
		if n := shotd.SliceCount(h, s.SliceHeight, s.SliceOverlap); n > shotd.MaxSlices {
			fail("full_page_slice_height", "cuts the %d px high image into %d slices; at most %d are allowed (raise full_page_slice_height or lower full_page_slice_overlap_height)", h, n, shotd.MaxSlices)
		}
	}
	if given["full_page_algorithm"] && s.FullPageAlgorithm == "by_sections" && shotd.IsVideo(o.Format) {
		fail("full_page_algorithm", "applies to images only")
	}
	if given["navigation_timeout"] && o.HTML+o.Markdown != "" {
		fail("navigation_timeout", "applies to url sources only")
	}
	checkProxyOptions(d)
}

// notEmpty refuses an empty string value.
func notEmpty(v string) string {
	if v == "" {
		return "must not be empty"
	}
	return ""
}

// RefusedOptions are ScreenshotOne option names shotd knows but does not honour, each with the
// reason its refusal gives, so that none is refused as unknown: a client moving from
// ScreenshotOne learns why, not that it misspelled a name.
var RefusedOptions = map[string]string{}
