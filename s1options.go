package shotd

// S1Options are the options taken from ScreenshotOne's take endpoint that api-v1 lacked
// (issue 14), kept apart so that Options' own fields stay as api-v1 lists them.
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

	refused []string // onlyValue options given another value
}

// s1OptionSpecs are the ScreenshotOne take options shotd honours. The ones whose only honest
// value is shotd's own behaviour accept that value alone (onlyValue).
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
			func(o *Options, v string) { o.S1.FailIfContentContains = v }),
		str("Waiting", "fail_if_content_missing", "", "Fail with content_check_failed when the page's text and HTML lack this (case-insensitive).",
			func(o *Options, v string) { o.S1.FailIfContentMissing = v }),
		onlyValue(boolean("Waiting", "error_on_selector_not_found", "true",
			"true only: nothing matching selector or wait_for_selector answers selector_not_found.", nil), "true",
			"shotd always answers selector_not_found when selector matches nothing; it never captures something else instead"),
		onlyValue(boolean("Waiting", "error_on_click_selector_not_found", "true",
			"true only: nothing matching click answers selector_not_found.", nil), "true",
			"shotd always answers selector_not_found when click matches nothing"),
		onlyValue(boolean("Waiting", "error_on_hover_selector_not_found", "true",
			"true only: nothing matching hover answers selector_not_found.", nil), "true",
			"shotd always answers selector_not_found when hover matches nothing"),
		onlyValue(boolean("Waiting", "ignore_host_errors", "true",
			"true only: a page answered with an HTTP error status is rendered as it is.", nil), "true",
			"shotd renders a page whatever its HTTP status; failing on an error status is not available"),
		onlyValue(boolean("Area", "capture_beyond_viewport", "true",
			"true only: full_page, selector and clip capture beyond the viewport.", nil), "true",
			"shotd always captures beyond the viewport for full_page, selector and clip"),
		str("Output", "attachment_name", "", "File name of the answer's Content-Disposition: attachment header.",
			func(o *Options, v string) { o.S1.AttachmentName = v }).checked(checkAttachmentName).nonRender(),
	}
}

// onlyValue makes the boolean option s accept want alone; another value is refused with why
// (checkS1Options), as the parser checks no boolean beyond its kind.
func onlyValue(s *OptionSpec, want, why string) *OptionSpec {
	name, w := s.Name, want == "true"
	onlyWhy[name] = "only " + want + " is accepted: " + why
	s.apply = func(o *Options, v any) {
		if v.(bool) != w {
			o.S1.refused = append(o.S1.refused, name)
		}
	}
	return s
}

// onlyWhy holds the refusal of each onlyValue option.
var onlyWhy = map[string]string{}

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

// checkS1Options validates the rules between the ScreenshotOne options (from crossCheck).
func checkS1Options(o *Options, given map[string]bool, fail func(string, string, ...any)) {
	for _, n := range o.S1.refused {
		fail(n, "%s", onlyWhy[n])
	}
	if given["geolocation_latitude"] != given["geolocation_longitude"] {
		fail("geolocation_latitude", "geolocation_latitude and geolocation_longitude go together")
	}
	if given["geolocation_accuracy"] && !o.S1.HasGeolocation {
		fail("geolocation_accuracy", "needs geolocation_latitude and geolocation_longitude")
	}
	if given["scroll_into_view_adjust_top"] && o.S1.ScrollIntoView == "" {
		fail("scroll_into_view_adjust_top", "needs scroll_into_view")
	}
	for _, n := range []string{"fail_if_content_contains", "fail_if_content_missing"} {
		if given[n] && (n == "fail_if_content_contains" && o.S1.FailIfContentContains == "" ||
			n == "fail_if_content_missing" && o.S1.FailIfContentMissing == "") {
			fail(n, "must not be empty")
		}
	}
}

// selfHosted is why an option of ScreenshotOne's hosted service means nothing on one's own.
const selfHosted = "it belongs to ScreenshotOne's hosted service and has no meaning on a self-hosted shotd"

// RefusedOptions are ScreenshotOne option names shotd knows but does not honour, each with the
// reason its refusal gives, so that none is refused as unknown (issue 14).
var RefusedOptions = map[string]string{
	"fail_if_request_failed":             "not yet available in shotd",
	"scripts_wait_until":                 "not yet available; scripts run after the page has loaded (wait_until)",
	"wait_for_selector_algorithm":        "not yet available; wait_for_selector waits for the first match",
	"selector_algorithm":                 "not yet available; selector captures the first match",
	"selector_scroll_into_view":          "not yet available; shotd captures the selector's element where it is",
	"include_shadow_dom":                 "not yet available; selectors match the light DOM only",
	"block_socials":                      "not yet available; use block_requests with the widgets' addresses",
	"block_banners_by_heuristics":        "not yet available; use block_cookie_banners or hide_selectors",
	"full_page_algorithm":                "not yet available; full_page scrolls (full_page_scroll) then captures in one piece",
	"full_page_scroll_by":                "not yet available; full_page_scroll scrolls by one viewport",
	"full_page_scroll_delay":             "not yet available; full_page_scroll scrolls at a fixed pace",
	"full_page_slices":                   "not yet available; one image of the whole page is returned",
	"full_page_slice_height":             "not yet available; one image of the whole page is returned",
	"full_page_slice_overlap_height":     "not yet available; one image of the whole page is returned",
	"navigation_timeout":                 "not yet available; timeout bounds the whole loading",
	"external_identifier":                "not yet available in job records",
	"webhook_errors":                     "not yet available; webhooks are sent for failed jobs too (job.failed)",
	"metadata_content":                   "not yet available; render markdown or use format=pdf for the content",
	"metadata_content_format":            "not yet available",
	"metadata_fonts":                     "not yet available",
	"metadata_http_response_headers":     "not yet available",
	"metadata_http_response_status_code": "not yet available",
	"metadata_icon":                      "not yet available",
	"metadata_image_size":                "not yet available; response_type=json gives width and height",
	"metadata_open_graph":                "not yet available",
	"metadata_page_title":                "not yet available",
	"proxy":                              "not yet available; the egress guard's proxy carries every render",
	"proxy_bypass_hosts":                 "not yet available; the egress guard's proxy carries every render",
	"request_gpu_rendering":              selfHosted + "; shotd renders with the host's software rasteriser",
	"fail_if_gpu_rendering_fails":        selfHosted + "; shotd renders with the host's software rasteriser",
}
