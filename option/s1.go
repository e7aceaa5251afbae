package option

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
)

// This file is ScreenshotOne's dialect as their own paths (/take, /animate, /bulk) read it:
// their defaults, their bounds, their companions (an option they accept without the one it
// refines means nothing there, and is dropped rather than refused), and their names for
// values. What it leaves is shotd options, parsed by ParseOptions with S1Limits.

// CloudOnly are ScreenshotOne's options that need their hosted service, each refused on every
// path with why: never as an unknown option.
var CloudOnly = map[string]string{
	"vision_prompt":               "it asks ScreenshotOne's hosted AI (OpenAI) to describe the screenshot",
	"vision_max_tokens":           "it bounds ScreenshotOne's hosted AI description",
	"openai_api_key":              "it is the key of ScreenshotOne's hosted AI description",
	"ip_country_code":             "it picks a country of ScreenshotOne's own proxies; give your own proxy instead",
	"servers_region":              "it picks a region of ScreenshotOne's servers",
	"request_gpu_rendering":       "shotd renders with the host's software rasteriser, never on a GPU",
	"fail_if_gpu_rendering_fails": "shotd renders with the host's software rasteriser, never on a GPU",
}

// notHere is the start of every refusal of a cloud-only option.
const notHere = "not available on this server: "

// s1Bounds are ScreenshotOne's bounds where they differ from the spec's; S1Limits applies them
// on their paths only.
var s1Bounds = map[string][2]float64{
	"device_scale_factor": {1, 5},
	"timeout":             {1, 90},
	"image_quality":       {1, 100},
	"cache_ttl":           {14400, 2592000},
}

// S1Limits is lim with ScreenshotOne's bounds; async raises timeout to their 600 s.
func S1Limits(lim Limits, async bool) Limits {
	b := make(map[string][2]float64, len(s1Bounds)+1)
	for k, v := range s1Bounds {
		b[k] = v
	}
	if async {
		b["timeout"] = [2]float64{1, 600}
	}
	lim.Bounds = b
	return lim
}

// waitRank orders ScreenshotOne's wait_until events from the earliest to the latest; an array
// of them is met when all are, which is when its latest is.
var waitRank = map[string]int{"domcontentloaded": 1, "load": 2, "networkidle2": 3, "networkidle0": 4, "networkidle": 4, "commit": 0}

// waitAliases are ScreenshotOne's wait_until names: shotd's networkidle waits for no request
// in flight, which is their networkidle0 and meets their networkidle2.
var waitAliases = map[string]string{"networkidle0": shotd.WaitNetworkIdle, "networkidle2": shotd.WaitNetworkIdle}

// foldWaitUntil reads wait_until as ScreenshotOne sends it on any path: a list (repeated, or
// a JSON array) is met when its latest event is, so it becomes that one. An empty list is the
// default.
func foldWaitUntil(ps Params) Params {
	i := slices.IndexFunc(ps, func(p Param) bool { return p.Name == "wait_until" })
	if i < 0 {
		return ps
	}
	p := ps[i]
	var items []string
	for _, v := range p.Values {
		for _, it := range strings.Split(v, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
	}
	if !p.Array && len(p.Values) == 1 && len(items) == 1 {
		if a, ok := waitAliases[items[0]]; ok {
			ps = slices.Clone(ps)
			ps[i] = Param{Name: p.Name, Values: []string{a}}
		}
		return ps
	}
	best := ""
	for _, it := range items {
		r, ok := waitRank[it]
		if !ok {
			return ps // refused by the enum, naming the value
		}
		if best == "" || r > waitRank[best] {
			best = it
		}
	}
	ps = slices.Clone(ps)
	if best == "" {
		return slices.Delete(ps, i, i+1)
	}
	if a, ok := waitAliases[best]; ok {
		best = a
	}
	ps[i] = Param{Name: p.Name, Values: []string{best}}
	return ps
}

// S1Format maps a format name of ScreenshotOne's /take to shotd's (S1TakeFormats), or says why
// it is refused.
func S1Format(v string) (string, string) {
	v = strings.ToLower(strings.TrimSpace(v))
	if f, ok := S1TakeFormats[v]; ok {
		return f, ""
	}
	return "", fmt.Sprintf("%q is not one of %s", clip(v), strings.Join(slices.Sorted(maps.Keys(S1TakeFormats)), ", "))
}

// params is an editable view of a request's options by name.
type params struct {
	ps   Params
	errs []shotd.FieldError
}

func (q *params) has(n string) bool { return q.ps.Has(n) }

func (q *params) get(n string) string { v, _ := q.ps.Get(n); return v }

func (q *params) isTrue(n string) bool {
	v := strings.ToLower(q.get(n))
	return v == "true" || v == "1"
}

func (q *params) drop(names ...string) {
	q.ps = slices.DeleteFunc(q.ps, func(p Param) bool { return slices.Contains(names, p.Name) })
}

func (q *params) set(n, v string) {
	q.drop(n)
	q.ps = append(q.ps, Param{Name: n, Values: []string{v}})
}

func (q *params) setDefault(n, v string) {
	if !q.has(n) {
		q.set(n, v)
	}
}

func (q *params) fail(field, msg string) {
	q.errs = append(q.errs, shotd.FieldError{Field: field, Message: msg})
}

func (q *params) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: summarize(q.errs), Fields: q.errs}
}

// dropUnless drops names when the option they refine is not there: ScreenshotOne accepts them
// alone, where they mean nothing.
func (q *params) dropUnless(cond bool, names ...string) {
	if !cond {
		q.drop(names...)
	}
}

// s1Common translates the options /take and /animate share.
func s1Common(ps Params) *params {
	q := &params{ps: slices.Clone(ps)}
	for _, n := range []string{"request_gpu_rendering", "fail_if_gpu_rendering_fails"} {
		if q.has(n) && !q.isTrue(n) {
			q.drop(n) // false is what shotd does
		}
	}
	if v := q.get("servers_region"); v == "us-east" {
		q.drop("servers_region") // their one region, their default: nowhere in particular here
	}
	for _, p := range q.ps {
		if why, ok := CloudOnly[p.Name]; ok {
			q.fail(p.Name, notHere+why)
		}
	}
	q.refuseTheirs()
	// Their defaults where shotd's differ.
	q.setDefault("timeout", "60")
	if t, err := strconv.ParseFloat(q.get("timeout"), 64); err == nil && t == 0 {
		q.set("timeout", "90") // 0: as long as they allow a request to take
	}
	q.setDefault("webhook_errors", "false")
	q.setDefault("ignore_host_errors", "false")
	// Companions: what they accept alone means nothing alone.
	q.dropUnless(q.has("scripts"), "scripts_wait_until")
	q.dropUnless(q.has("wait_for_selector"), "wait_for_selector_algorithm")
	q.dropUnless(q.has("geolocation_latitude") && q.has("geolocation_longitude"), "geolocation_latitude", "geolocation_longitude", "geolocation_accuracy")
	q.dropUnless(q.isTrue("metadata_content"), "include_shadow_dom")
	q.dropUnless(q.isTrue("cache"), "cache_ttl", "cache_key")
	if n, err := strconv.ParseFloat(q.get("navigation_timeout"), 64); q.has("navigation_timeout") && (err == nil && n == 0 || !q.has("url")) {
		q.drop("navigation_timeout") // 0, or a page that is not navigated to: timeout alone bounds it
	}
	q.dropUnless(q.isTrue("store"), StorageOptions...)
	if q.get("storage_acl") == "" {
		q.drop("storage_acl")
	}
	if c := q.get("storage_class"); c != "" {
		q.set("storage_class", strings.ToUpper(c))
	}
	if q.isTrue("block_annoyances") {
		for _, n := range []string{"block_cookie_banners", "block_chats", "block_banners_by_heuristics"} {
			q.setDefault(n, "true")
		}
	}
	q.drop("block_annoyances")
	q.ps = foldWaitUntil(q.ps)
	q.foldList("fail_if_content_contains")
	q.foldList("fail_if_content_missing")
	if rt := strings.ToLower(strings.TrimSpace(q.get("response_type"))); q.has("response_type") {
		q.set("response_type", rt)
	}
	return q
}

// alnum is ScreenshotOne's rule for identifiers: letters and digits only.
func alnum(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// refuseTheirs refuses what ScreenshotOne refuses and shotd alone would take: their paths
// answer as they do.
func (q *params) refuseTheirs() {
	if q.has("cache_ttl") && !q.isTrue("cache") || q.has("cache_key") && !q.isTrue("cache") {
		q.fail("cache", "cache_ttl and cache_key need cache=true")
	}
	if v := q.get("cache_key"); q.has("cache_key") && !alnum(v, 250) {
		q.fail("cache_key", "must be 1 to 250 letters and digits")
	}
	if v := q.get("external_identifier"); q.has("external_identifier") && !alnum(v, 64) {
		q.fail("external_identifier", "must be 1 to 64 letters and digits")
	}
	if v := q.get("storage_acl"); v != "" && v != "public-read" {
		q.fail("storage_acl", "must be public-read or empty")
	}
	if q.has("storage_path") && !q.isTrue("store") {
		q.fail("storage_path", "needs store=true")
	}
	if q.isTrue("store") && !q.has("storage_path") {
		q.fail("storage_path", "is required with store=true")
	}
	if q.has("webhook_url") && strings.EqualFold(q.get("response_type"), "empty") {
		q.fail("webhook_url", "is not accepted with response_type=empty")
	}
	if q.has("metadata_content_format") && !q.isTrue("metadata_content") {
		q.fail("metadata_content_format", "needs metadata_content=true")
	}
	for _, p := range q.ps {
		if p.Name != "scripts_wait_until" {
			continue
		}
		for _, v := range p.Values {
			for _, it := range strings.Split(v, ",") {
				if it = strings.TrimSpace(it); it != "" && !slices.Contains(ScriptsWaitConditions, it) {
					q.fail(p.Name, fmt.Sprintf("%q is not one of %s", clip(it), strings.Join(ScriptsWaitConditions, ", ")))
				}
			}
		}
	}
	q.number("navigation_timeout", 0, 30)
	q.number("geolocation_latitude", -90, 90)
	q.number("geolocation_longitude", -180, 180)
	q.number("geolocation_accuracy", 0, 1e7)
	if !q.has("url") {
		for _, n := range []string{"metadata_http_response_status_code", "metadata_http_response_headers"} {
			if q.has(n) {
				q.fail(n, "needs url")
			}
		}
	}
}

// number refuses a value of n that is not a number within their bounds: an option their paths
// may drop is checked before.
func (q *params) number(n string, lo, hi float64) {
	if !q.has(n) {
		return
	}
	f, err := strconv.ParseFloat(q.get(n), 64)
	if err != nil || f < lo || f > hi {
		q.fail(n, fmt.Sprintf("must be a number between %s and %s", fmtNum(lo), fmtNum(hi)))
	}
}

// s1Easings are the scroll_easing values of their /animate.
var s1Easings = []string{"linear", "ease_in_quad", "ease_out_quad", "ease_in_out_quad", "ease_in_cubic",
	"ease_out_cubic", "ease_in_out_cubic", "ease_in_quart", "ease_out_quart", "ease_in_out_quart",
	"ease_in_quint", "ease_out_quint", "ease_in_out_quint"}

// foldList reads one of ScreenshotOne's text arrays (fail_if_content_*): empty items are
// dropped, and an empty array is the default, no check.
func (q *params) foldList(n string) {
	i := slices.IndexFunc(q.ps, func(p Param) bool { return p.Name == n })
	if i < 0 {
		return
	}
	var items []string
	for _, v := range q.ps[i].Values {
		if v != "" {
			items = append(items, v)
		}
	}
	if len(items) == 0 {
		q.drop(n) // their empty array: no check
		return
	}
	q.ps[i].Values = items
}

// S1Take turns the options of ScreenshotOne's /take into shotd's, with their defaults and
// companions; a refusal is invalid_options naming each option.
func S1Take(ps Params) (Params, error) {
	q := s1Common(ps)
	f := "jpg"
	if q.has("format") {
		f = q.get("format")
	}
	format, why := S1Format(f)
	if why != "" {
		q.fail("format", why)
	} else {
		q.set("format", format)
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(q.get("image_quality")), 64); err == nil && f == 0 {
		q.set("image_quality", "1") // their 0 (any spelling of it, 0.0 in JSON) is our lowest
	}
	if format == shotd.FormatJPEG || format == shotd.FormatWebP {
		q.setDefault("image_quality", "100")
	}
	f = strings.ToLower(f)
	if q.has("omit_background") && f != "png" {
		q.fail("omit_background", "only with format=png")
	}
	if q.has("image_quality") && !slices.Contains([]string{"jpeg", "jpg", "webp", "png", "tiff", "jp2", "avif", "heif"}, f) {
		q.fail("image_quality", "only with image formats")
	}
	if q.has("selector") && f == "pdf" {
		q.fail("selector", "rendering PDFs by selector is not allowed")
	}
	if q.isTrue("full_page_slices") && !q.isTrue("full_page") {
		q.fail("full_page_slices", "needs full_page=true")
	}
	if q.isTrue("full_page_slices") && q.isTrue("store") {
		q.fail("full_page_slices", "does not support store=true")
	}
	for _, n := range []string{"full_page_scroll", "full_page_scroll_delay", "full_page_scroll_by", "full_page_max_height", "full_page_algorithm"} {
		if q.has(n) && !q.isTrue("full_page") {
			q.fail(n, "needs full_page=true")
		}
	}
	for _, n := range []string{"selector_algorithm", "selector_scroll_into_view"} {
		if q.has(n) && !q.has("selector") {
			q.fail(n, "needs selector")
		}
	}
	q.setDefault("error_on_selector_not_found", "false")
	q.dropUnless(q.has("scroll_into_view"), "scroll_into_view_adjust_top")
	q.dropUnless(!q.has("full_page_scroll") || q.isTrue("full_page_scroll"), "full_page_scroll_delay", "full_page_scroll_by")
	q.dropUnless(q.isTrue("full_page_slices"), "full_page_slice_height", "full_page_slice_overlap_height")
	q.dropUnless(q.has("selector") || q.has("clip_width") && q.has("clip_height"), ClipOptions...)
	if q.has("capture_beyond_viewport") {
		if !q.isTrue("capture_beyond_viewport") && q.isTrue("full_page") {
			// Their false captures the page viewport by viewport.
			q.setDefault("full_page_algorithm", "by_sections")
		}
		q.drop("capture_beyond_viewport")
	}
	if v, err := strconv.Atoi(q.get("full_page_scroll_delay")); err == nil && v > 5000 {
		q.set("full_page_scroll_delay", "5000")
	}
	if v, err := strconv.Atoi(q.get("full_page_max_height")); err == nil {
		q.set("full_page_max_height", strconv.Itoa(min(max(v, 100), 30000)))
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	return q.ps, nil
}

// s1AnimateIgnored are /animate options whose step timing shotd's one continuous scroll plays
// as that scroll: accepted, and shaped by duration and scroll_easing.
var s1AnimateIgnored = []string{"scroll_duration", "scroll_delay", "scroll_by", "scroll_start_immediately",
	"scroll_start_delay", "scroll_complete", "scroll_back_after_duration", "scroll_back_algorithm",
	"scroll_stop_after_duration", "scroll_till_selector_adjust_top", "scroll_try_navigate",
	"scroll_navigate_after", "scroll_navigate_to_url", "scroll_navigate_link_hints", "scroll_to_end_after"}

// S1Animate turns the options of ScreenshotOne's /animate into shotd's: their defaults
// (mp4, 5 s, 4:3, scroll back on), their step timing played as one continuous scroll.
func S1Animate(ps Params) (Params, error) {
	q := s1Common(ps)
	f := strings.ToLower(strings.TrimSpace(q.get("format")))
	if q.has("format") {
		q.set("format", f)
	}
	if v := strings.ToLower(strings.TrimSpace(q.get("scroll_easing"))); q.has("scroll_easing") && !slices.Contains(s1Easings, v) {
		q.fail("scroll_easing", "must be one of "+strings.Join(s1Easings, ", "))
	}
	if q.has("omit_background") && f != "mov" {
		q.fail("omit_background", "only with format=mov")
	}
	if q.has("scroll_stop_after_duration") && (!q.has("scroll_back") || q.isTrue("scroll_back")) {
		q.fail("scroll_stop_after_duration", "needs scroll_back=false")
	}
	if q.has("scroll_stop_after_duration") && q.has("scroll_back_after_duration") {
		q.fail("scroll_back_after_duration", "conflicts with scroll_stop_after_duration")
	}
	if q.has("scroll_to_end_after") && strings.ToLower(q.get("scenario")) != "scroll" {
		q.fail("scroll_to_end_after", "needs scenario=scroll")
	}
	if r := q.get("aspect_ratio"); q.has("aspect_ratio") && r != "4:3" && r != "16:9" {
		q.fail("aspect_ratio", "must be 4:3 or 16:9")
	}
	for _, n := range ClipOptions {
		if q.has(n) && f != "gif" {
			q.fail(n, "only with format=gif")
		}
	}
	q.drop(s1AnimateIgnored...)
	if v := strings.ToLower(strings.TrimSpace(q.get("scenario"))); v == "" {
		q.drop("scenario")
	}
	if q.has("scroll_till_selector") {
		// Played as the one continuous scroll; a scenario given with it (scroll, as their
		// clients send it, or default) decides, and is the one name of the scroll it maps to.
		if !q.has("scenario") {
			q.set("scenario", "scroll")
		}
		q.drop("scroll_till_selector")
	}
	if v := q.get("scroll_easing"); v != "" && v != "linear" {
		q.set("scroll_easing", "ease_in_out") // every curve played as ease_in_out
	}
	q.setDefault("scroll_back", "true")
	ratio := strings.TrimSpace(q.get("aspect_ratio"))
	q.drop("aspect_ratio")
	if !q.has("viewport_height") && !q.has("viewport_device") {
		w := 1280
		if v, err := strconv.Atoi(q.get("viewport_width")); err == nil {
			w = v
		}
		h := w * 3 / 4
		if ratio == "16:9" {
			h = w * 9 / 16
		}
		q.set("viewport_height", strconv.Itoa(max(h, 100)))
	}
	if !q.has("clip_width") || !q.has("clip_height") {
		q.drop(ClipOptions...)
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	return AnimateParams(q.ps)
}
