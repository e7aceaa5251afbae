package option_test

import (
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// The option names ScreenshotOne's Node SDK 1.1.22 can send (TakeOptions and AnimateOptions),
// its AI (openai_api_key, vision_*) and region (servers_region, ip_country_code) ones aside.
var (
	s1TakeNames = []string{
		"access_key", "async", "attachment_name", "authorization", "block_ads", "block_banners_by_heuristics",
		"block_chats", "block_cookie_banners", "block_requests", "block_resources", "block_socials", "block_trackers",
		"bypass_csp", "cache", "cache_key", "cache_ttl", "capture_beyond_viewport", "click",
		"clip_height", "clip_width", "clip_x", "clip_y", "cookies", "dark_mode",
		"delay", "device_scale_factor", "error_on_click_selector_not_found", "error_on_hover_selector_not_found", "error_on_selector_not_found", "external_identifier",
		"fail_if_content_contains", "fail_if_content_missing", "fail_if_gpu_rendering_fails", "fail_if_request_failed", "format", "full_page",
		"full_page_algorithm", "full_page_max_height", "full_page_scroll", "full_page_scroll_by", "full_page_scroll_delay", "full_page_slice_height",
		"full_page_slice_overlap_height", "full_page_slices", "geolocation_accuracy", "geolocation_latitude", "geolocation_longitude", "headers",
		"hide_selectors", "hover", "html", "ignore_host_errors", "image_height", "image_quality",
		"image_width", "include_shadow_dom", "markdown", "media_type", "metadata_content", "metadata_content_format",
		"metadata_fonts", "metadata_http_response_headers", "metadata_http_response_status_code", "metadata_icon", "metadata_image_size", "metadata_open_graph",
		"metadata_page_title", "navigation_timeout", "omit_background", "pdf_fit_one_page", "pdf_landscape", "pdf_margin",
		"pdf_margin_bottom", "pdf_margin_left", "pdf_margin_right", "pdf_margin_top", "pdf_paper_format", "pdf_print_background",
		"proxy", "proxy_bypass_hosts", "reduced_motion", "request_gpu_rendering", "response_type", "scripts",
		"scripts_wait_until", "scroll_into_view", "scroll_into_view_adjust_top", "selector", "selector_algorithm", "selector_scroll_into_view",
		"storage_access_key_id", "storage_acl", "storage_bucket", "storage_class", "storage_endpoint", "storage_path",
		"storage_return_location", "storage_secret_access_key", "store", "styles", "time_zone", "timeout",
		"url", "user_agent", "viewport_device", "viewport_has_touch", "viewport_height", "viewport_landscape",
		"viewport_mobile", "viewport_width", "wait_for_selector", "wait_for_selector_algorithm", "wait_until", "webhook_errors",
		"webhook_sign", "webhook_url",
	}
	s1AnimateNames = []string{
		"aspect_ratio", "async", "authorization", "block_ads", "block_banners_by_heuristics", "block_chats",
		"block_cookie_banners", "block_requests", "block_resources", "block_trackers", "bypass_csp", "cache",
		"cache_key", "cache_ttl", "cookies", "dark_mode", "delay", "device_scale_factor",
		"duration", "fail_if_content_contains", "fail_if_gpu_rendering_fails", "format", "geolocation_accuracy", "geolocation_latitude",
		"geolocation_longitude", "headers", "height", "hide_selectors", "html", "ignore_host_errors",
		"markdown", "media_type", "navigation_timeout", "omit_background", "proxy", "proxy_bypass_hosts",
		"reduced_motion", "request_gpu_rendering", "response_type", "scenario", "scripts", "scripts_wait_until",
		"scroll_back", "scroll_back_after_duration", "scroll_back_algorithm", "scroll_by", "scroll_complete", "scroll_delay",
		"scroll_duration", "scroll_easing", "scroll_navigate_after", "scroll_navigate_link_hints", "scroll_navigate_to_url", "scroll_start_delay",
		"scroll_start_immediately", "scroll_stop_after_duration", "scroll_try_navigate", "storage_access_key_id", "storage_acl", "storage_bucket",
		"storage_class", "storage_path", "storage_return_location", "storage_secret_access_key", "store", "styles",
		"time_zone", "timeout", "url", "user_agent", "viewport_device", "viewport_has_touch",
		"viewport_height", "viewport_landscape", "viewport_mobile", "viewport_width", "wait_for_selector", "webhook_sign",
		"webhook_url", "width",
	}
)

// TestScreenshotOneNames: no name their SDK sends is refused as unknown; each is honoured or
// refused with a reason of its own.
func TestScreenshotOneNames(t *testing.T) {
	cases := []struct {
		name    string
		options []string
		animate bool
	}{
		{"take", s1TakeNames, false},
		{"animate", s1AnimateNames, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range c.options {
				ps := option.Params{{Name: "url", Values: []string{"https://example.com/"}}}
				if n != "url" {
					ps = append(ps, option.Param{Name: n, Values: []string{"x"}})
				}
				var err error
				if c.animate {
					var tr option.Params
					if tr, err = option.AnimateParams(ps); err == nil {
						_, err = option.ParseOptions(tr, option.Limits{})
					}
				} else {
					_, err = option.ParseOptions(ps, option.Limits{})
				}
				var e *shotd.Error
				if err == nil {
					continue
				}
				if !errorsAs(err, &e) {
					t.Fatalf("%s: %v", n, err)
				}
				for _, f := range e.Fields {
					if strings.Contains(f.Message, "unknown option") {
						t.Errorf("%s refused as unknown: %s", n, f.Message)
					}
				}
			}
		})
	}
}

func errorsAs(err error, e **shotd.Error) bool {
	v, ok := err.(*shotd.Error)
	*e = v
	return ok
}
