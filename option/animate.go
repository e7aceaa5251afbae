package option

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shotd/shotd"
)

// AnimateOption is one option of ScreenshotOne's animate endpoint that shotd reads under another
// name, or refuses because its video engine cannot honour it.
type AnimateOption struct {
	Name string
	Doc  string
	// To is the shotd option the value goes to; "" with Refuse set: refused.
	To string
	// Map turns the value into To's; nil: the value as it is. A message refuses it.
	Map    func(v string) (string, string)
	Refuse string
}

// DefaultAnimateDuration is ScreenshotOne's animation length when duration is not given.
const DefaultAnimateDuration = "5"

// stepScroll is why ScreenshotOne's step-by-step scroll timing cannot be honoured.
const stepScroll = "shotd scrolls the page in one continuous motion over the whole duration " +
	"(shaped by scroll_easing); step timing is not available"

// AnimateOptions are the names of /api/v1/animate that differ from the screenshot options. All
// other names are the screenshot options, video_* included.
var AnimateOptions = []AnimateOption{
	{Name: "scenario", Doc: "default: record the page as it stands; scroll: scroll it top to bottom.",
		To: "video_scroll", Map: func(v string) (string, string) {
			switch v {
			case "default":
				return "false", ""
			case "scroll":
				return "true", ""
			}
			return "", "must be default or scroll"
		}},
	{Name: "duration", Doc: "Video length in seconds, 1..30; default 5.", To: "video_duration"},
	{Name: "width", Doc: "Output width in pixels; the frames are scaled to it.", To: "image_width"},
	{Name: "height", Doc: "Output height in pixels; the frames are scaled to it.", To: "image_height"},
	{Name: "scroll_back", Doc: "Scroll back to the top at the end.", To: "video_scroll_back"},
	{Name: "scroll_easing", Doc: "linear, or one of the ease_in_out_* curves (all played as ease_in_out).",
		To: "video_scroll_easing", Map: func(v string) (string, string) {
			switch {
			case v == "linear":
				return "linear", ""
			case v == "ease_in_out" || strings.HasPrefix(v, "ease_in_out_"):
				return "ease_in_out", ""
			}
			return "", "shotd plays linear and ease_in_out (every ease_in_out_* curve); " +
				"the one-sided ease_in_* and ease_out_* curves are not available"
		}},
	{Name: "scroll_complete", Doc: "true (the default): the scroll reaches the bottom within duration.",
		Map: onlyTrue("shotd's scroll always reaches the bottom within duration")},
	{Name: "scroll_start_immediately", Doc: "true (the default): scrolling starts with the video.",
		Map: onlyTrue("shotd's scroll starts with the video; use delay to wait before recording")},
	{Name: "scroll_try_navigate", Doc: "false (the default) only.",
		Map: onlyFalse("shotd records one page and does not follow links while scrolling")},
	{Name: "scroll_delay", Refuse: stepScroll},
	{Name: "scroll_duration", Refuse: stepScroll},
	{Name: "scroll_by", Refuse: stepScroll},
	{Name: "scroll_start_delay", Refuse: stepScroll + "; use delay to wait before recording"},
	{Name: "scroll_back_after_duration", Refuse: stepScroll},
	{Name: "scroll_stop_after_duration", Refuse: stepScroll},
	{Name: "scroll_back_algorithm", Refuse: stepScroll},
	{Name: "scroll_navigate_after", Refuse: "shotd records one page and does not follow links while scrolling"},
	{Name: "scroll_navigate_to_url", Refuse: "shotd records one page and does not follow links while scrolling"},
	{Name: "scroll_navigate_link_hints", Refuse: "shotd records one page and does not follow links while scrolling"},
	{Name: "aspect_ratio", Refuse: "set the output size with width and height, or the viewport with viewport_width and viewport_height"},
}

func onlyTrue(why string) func(string) (string, string) {
	return func(v string) (string, string) {
		if v == "true" {
			return "", ""
		}
		return "", "only true is accepted: " + why
	}
}

func onlyFalse(why string) func(string) (string, string) {
	return func(v string) (string, string) {
		if v == "false" {
			return "", ""
		}
		return "", "only false is accepted: " + why
	}
}

// AnimateFormats are the formats of /api/v1/animate, ScreenshotOne's five.
var AnimateFormats = []string{shotd.FormatMP4, shotd.FormatWebM, shotd.FormatGIF, shotd.FormatMOV, shotd.FormatAVI}

// AnimateParams turns the options of a /api/v1/animate request into screenshot options: their
// names mapped, ScreenshotOne's defaults (mp4, 5 s, no scroll) filled in, and what the video
// engine cannot honour refused with an invalid_options error that says why.
func AnimateParams(ps Params) (Params, error) {
	var out Params
	var errs []shotd.FieldError
	fail := func(field, msg string) { errs = append(errs, shotd.FieldError{Field: field, Message: msg}) }
	for _, p := range ps {
		i := slices.IndexFunc(AnimateOptions, func(a AnimateOption) bool { return a.Name == p.Name })
		if i < 0 {
			out = append(out, p) // a screenshot option (video_* too); the format is checked below
			continue
		}
		a := AnimateOptions[i]
		if a.Refuse != "" {
			fail(p.Name, "not supported: "+a.Refuse)
			continue
		}
		if len(p.Values) != 1 {
			fail(p.Name, "given more than once")
			continue
		}
		v := p.Values[0]
		if a.Map != nil {
			mv, msg := a.Map(v)
			if msg != "" {
				fail(p.Name, msg)
				continue
			}
			v = mv
		}
		if a.To == "" {
			continue // accepted, and what shotd does anyway
		}
		if ps.Has(a.To) {
			fail(p.Name, fmt.Sprintf("conflicts with %s: give one of them", a.To))
			continue
		}
		out = append(out, Param{Name: a.To, Values: []string{v}, Array: p.Array})
	}
	if f, ok := ps.Get("format"); ok && !slices.Contains(AnimateFormats, f) {
		fail("format", "animate records a video: mp4, webm, gif, mov or avi")
	}
	defaults := [][2]string{{"format", shotd.FormatMP4}, {"video_duration", DefaultAnimateDuration}, {"video_scroll", "false"}}
	for _, d := range defaults {
		if !out.Has(d[0]) {
			out = append(out, Param{Name: d[0], Values: []string{d[1]}})
		}
	}
	if len(errs) > 0 {
		return nil, &shotd.Error{Code: shotd.CodeInvalidOptions, Message: summarize(errs), Fields: errs}
	}
	return out, nil
}
