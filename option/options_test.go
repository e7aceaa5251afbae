package option

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

func q(kv ...string) Params {
	var ps Params
	for i := 0; i < len(kv); i += 2 {
		ps = append(ps, Param{Name: kv[i], Values: []string{kv[i+1]}})
	}
	return ps
}

func mustParse(t *testing.T, ps Params) *shotd.Options {
	t.Helper()
	o, err := ParseOptions(ps, Limits{})
	if err != nil {
		t.Fatalf("ParseOptions(%v): %v", ps, err)
	}
	return o
}

func wantCode(t *testing.T, err error, code shotd.Code, field string) *shotd.Error {
	t.Helper()
	var e *shotd.Error
	if !errors.As(err, &e) {
		t.Fatalf("want %s error, got %v", code, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s (%s)", code, e.Code, e.Message)
	}
	if field != "" {
		found := false
		for _, f := range e.Fields {
			found = found || f.Field == field
		}
		if !found {
			t.Fatalf("want a field error on %q, got %+v", field, e.Fields)
		}
	}
	return e
}

// validValue returns a value of spec s that passes its own rules.
func validValue(s *OptionSpec) string {
	switch {
	case s.Enum != nil:
		return s.Enum[len(s.Enum)-1]
	case s.HasMin:
		return fmtNum(s.Min)
	}
	switch s.Kind {
	case KindBool:
		return "true"
	case KindInt, KindNumber:
		return "5"
	}
	switch s.Name {
	case "url", "webhook_url":
		return "https://example.com/"
	case "storage_endpoint":
		return "https://s3.example.com:9000"
	case "storage_class":
		return "STANDARD_IA"
	case "proxy":
		return "http://user:pass@proxy.example:3128"
	case "proxy_bypass_hosts":
		return "*.example.com"
	case "headers":
		return "X-Test: 1"
	case "cookies":
		return "a=b; Domain=example.com"
	case "time_zone":
		return "Europe/Paris"
	case "image_background":
		return "ff000080"
	case "pdf_page_ranges":
		return "1-2,4,6-"
	case "pdf_paper_width", "pdf_paper_height":
		return "10cm"
	case "pdf_margin", "pdf_margin_top", "pdf_margin_right", "pdf_margin_bottom", "pdf_margin_left":
		return "10mm"
	}
	return "div.main"
}

// base gives a request a source unless the option under test is a source itself.
func base(name string) Params {
	switch name {
	case "url", "html", "markdown":
		return nil
	case "clip_x", "clip_y", "clip_width", "clip_height":
		return q("url", "https://example.com/", "clip_width", "10", "clip_height", "10")
	case "webhook_url":
		return q("url", "https://example.com/", "async", "true")
	case "geolocation_latitude", "geolocation_longitude", "geolocation_accuracy":
		return q("url", "https://example.com/", "geolocation_latitude", "1", "geolocation_longitude", "2")
	case "scroll_into_view_adjust_top":
		return q("url", "https://example.com/", "scroll_into_view", "h1")
	case "full_page_algorithm", "full_page_scroll_by", "full_page_scroll_delay", "full_page_slices":
		return q("url", "https://example.com/", "full_page", "true")
	case "full_page_slice_height", "full_page_slice_overlap_height":
		return q("url", "https://example.com/", "full_page", "true", "full_page_slices", "true", "full_page_slice_height", "16000")
	case "metadata_content_format", "include_shadow_dom":
		return q("url", "https://example.com/", "metadata_content", "true")
	case "scripts_wait_until":
		return q("url", "https://example.com/", "scripts", "1")
	case "wait_for_selector_algorithm":
		return q("url", "https://example.com/", "wait_for_selector", "h1")
	case "selector_algorithm", "selector_scroll_into_view":
		return q("url", "https://example.com/", "selector", "h1")
	case "proxy_bypass_hosts":
		return q("url", "https://example.com/", "proxy", "http://proxy.example:3128")
	case "image_fit":
		return q("url", "https://example.com/", "image_width", "10", "image_height", "10")
	case "image_position":
		return q("url", "https://example.com/", "image_width", "10", "image_height", "10", "image_fit", "cover")
	case "image_background":
		return q("url", "https://example.com/", "image_width", "10", "image_height", "10", "image_fit", "contain")
	case "pdf_paper_width":
		return q("url", "https://example.com/", "pdf_paper_height", "10cm")
	case "pdf_paper_height":
		return q("url", "https://example.com/", "pdf_paper_width", "10cm")
	}
	if slices.Contains(StorageOptions, name) || name == "store" {
		return q("url", "https://example.com/", "store", "true", "storage_bucket", "shots",
			"storage_access_key_id", "AKID", "storage_secret_access_key", "SECRET")
	}
	return q("url", "https://example.com/")
}

func without(ps Params, name string) Params {
	var out Params
	for _, p := range ps {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

// TestOptionTableBounds checks every option of the table at and beyond its bounds and enum.
func TestOptionTableBounds(t *testing.T) {
	type tc struct {
		name  string
		opt   string
		value string
		ok    bool
	}
	var cases []tc
	for _, s := range OptionTable {
		cases = append(cases, tc{s.Name + " valid", s.Name, validValue(s), true})
		if s.HasMin {
			cases = append(cases, tc{s.Name + " at min", s.Name, fmtNum(s.Min), true})
			below := s.Min - 1
			if s.Kind == KindNumber {
				below = s.Min - 0.01
			}
			cases = append(cases, tc{s.Name + " below min", s.Name, fmtNum(below), false})
		}
		if s.HasMax {
			cases = append(cases, tc{s.Name + " at max", s.Name, fmtNum(s.Max), true})
			above := s.Max + 1
			if s.Kind == KindNumber {
				above = s.Max + 0.01
			}
			cases = append(cases, tc{s.Name + " above max", s.Name, fmtNum(above), false})
		}
		for _, e := range s.Enum {
			cases = append(cases, tc{s.Name + "=" + e, s.Name, e, true})
		}
		if s.Enum != nil {
			cases = append(cases, tc{s.Name + " bad enum", s.Name, "nope_value", false})
		}
		switch s.Kind {
		case KindBool:
			cases = append(cases, tc{s.Name + " not bool", s.Name, "yes please", false})
		case KindInt:
			cases = append(cases, tc{s.Name + " fraction", s.Name, "1.5", false}, tc{s.Name + " text", s.Name, "ten", false})
		case KindNumber:
			cases = append(cases, tc{s.Name + " text", s.Name, "ten", false}, tc{s.Name + " NaN", s.Name, "NaN", false})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := append(without(base(c.opt), c.opt), Param{Name: c.opt, Values: []string{c.value}})
			if c.opt == "selector" || c.opt == "clip_width" {
				ps = without(ps, map[string]string{"selector": "clip_width", "clip_width": "selector"}[c.opt])
			}
			_, err := ParseOptions(ps, Limits{})
			if c.ok && err != nil {
				t.Fatalf("%s=%q refused: %v", c.opt, c.value, err)
			}
			if !c.ok {
				wantCode(t, err, shotd.CodeInvalidOptions, c.opt)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o := mustParse(t, q("url", "https://example.com/"))
	checks := []struct {
		name      string
		got, want any
	}{
		{"format", o.Format, "png"},
		{"image_quality", o.ImageQuality, 80},
		{"viewport_width", o.ViewportWidth, 1280},
		{"viewport_height", o.ViewportHeight, 1024},
		{"device_scale_factor", o.DeviceScaleFactor, 1.0},
		{"full_page_scroll", o.FullPageScroll, true},
		{"full_page_max_height", o.FullPageMaxHeight, 20000},
		{"wait_until", o.WaitUntil, "load"},
		{"timeout", o.Timeout, 30 * time.Second},
		{"delay", o.Delay, time.Duration(0)},
		{"media_type", o.MediaType, "screen"},
		{"pdf_paper_format", o.PDFPaperFormat, "a4"},
		{"pdf_print_background", o.PDFPrintBackground, true},
		{"video_max_duration", o.VideoMaxDuration, 30 * time.Second},
		{"video_fps", o.VideoFPS, 24},
		{"video_scroll", o.VideoScroll, true},
		{"video_scroll_easing", o.VideoScrollEasing, "ease_in_out"},
		{"cache_ttl", o.CacheTTL, 14400 * time.Second},
		{"webhook_sign", o.WebhookSign, true},
		{"response_type", o.ResponseType, "by_format"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("default %s = %v, want %v", c.name, c.got, c.want)
			}
		})
	}
}

func TestCrossRules(t *testing.T) {
	cases := []struct {
		name  string
		ps    Params
		code  shotd.Code
		field string
	}{
		{"no source", q("format", "png"), shotd.CodeInvalidOptions, "url"},
		{"url and html", q("url", "https://a.example/", "html", "<p>x</p>"), shotd.CodeInvalidOptions, "html"},
		{"html and markdown", q("html", "<p>x</p>", "markdown", "# x"), shotd.CodeInvalidOptions, "markdown"},
		{"url without scheme", q("url", "example.com"), shotd.CodeInvalidOptions, "url"},
		{"ftp url", q("url", "ftp://example.com/"), shotd.CodeInvalidOptions, "url"},
		{"javascript url", q("url", "javascript:alert(1)"), shotd.CodeInvalidOptions, "url"},
		{"url without host", q("url", "http:///path"), shotd.CodeInvalidURL, "url"},
		{"url with credentials", q("url", "http://u:p@example.com/"), shotd.CodeInvalidURL, "url"},
		{"url bad port", q("url", "http://example.com:99999/"), shotd.CodeInvalidURL, "url"},
		{"url bad ipv4", q("url", "http://999.1.1.1/"), shotd.CodeInvalidURL, "url"},
		{"url ipv4 last part too big", q("url", "http://1.2.3.256/"), shotd.CodeInvalidURL, "url"},
		{"url five-part ipv4", q("url", "http://1.2.3.4.5/"), shotd.CodeInvalidURL, "url"},
		{"url integer over 32 bits", q("url", "http://4294967296/"), shotd.CodeInvalidURL, "url"},
		{"url name ending in a number", q("url", "http://a.123/"), shotd.CodeInvalidURL, "url"},
		{"url name ending in a number, trailing dot", q("url", "https://www.example.123./"), shotd.CodeInvalidURL, "url"},
		{"url name ending in bad octal", q("url", "http://a.09/"), shotd.CodeInvalidURL, "url"},
		{"url name ending in hex", q("url", "http://a.0x1f/"), shotd.CodeInvalidURL, "url"},
		{"url full-width dot before a number", q("url", "http://a．123/"), shotd.CodeInvalidURL, "url"},
		{"url ipv6 zone with a forbidden byte", q("url", "http://[fe80::1%25e$th0]/"), shotd.CodeInvalidURL, "url"},
		{"url bad ipv4, upper-case scheme", q("url", "HTTPS://999.1.1.1/"), shotd.CodeInvalidURL, "url"},
		{"url bad ipv4 and another bad option", q("url", "http://999.1.1.1/", "viewport_width", "5"), shotd.CodeInvalidOptions, "url"},
		{"webhook_url bad ipv4", q("url", "https://a.example/", "webhook_url", "http://999.1.1.1/"), shotd.CodeInvalidOptions, "webhook_url"},
		{"selector with clip_width", q("url", "https://a.example/", "selector", "#x", "clip_width", "10", "clip_height", "10"), shotd.CodeInvalidOptions, "selector"},
		{"clip without size", q("url", "https://a.example/", "clip_x", "10"), shotd.CodeInvalidOptions, "clip_width"},
		{"clip without height", q("url", "https://a.example/", "clip_x", "10", "clip_width", "10"), shotd.CodeInvalidOptions, "clip_height"},
		{"selector with clip_width only", q("url", "https://a.example/", "selector", "#x", "clip_width", "10"), shotd.CodeInvalidOptions, "selector"},
		{"unknown option", q("url", "https://a.example/", "fromat", "png"), shotd.CodeInvalidOptions, "fromat"},
		{"empty html", q("html", ""), shotd.CodeInvalidOptions, "html"},
		{"bad header", q("url", "https://a.example/", "headers", "no colon"), shotd.CodeInvalidOptions, "headers"},
		{"forbidden header", q("url", "https://a.example/", "headers", "Host: evil"), shotd.CodeInvalidOptions, "headers"},
		{"bad cookie", q("url", "https://a.example/", "cookies", "novalue"), shotd.CodeInvalidOptions, "cookies"},
		{"cookie without domain for html", q("html", "<p>x</p>", "cookies", "a=b"), shotd.CodeInvalidOptions, "cookies"},
		{"bad time zone", q("url", "https://a.example/", "time_zone", "Mars/Olympus"), shotd.CodeInvalidOptions, "time_zone"},
		{"bad margin unit", q("url", "https://a.example/", "pdf_margin", "10em"), shotd.CodeInvalidOptions, "pdf_margin"},
		{"bad device", q("url", "https://a.example/", "viewport_device", "nokia_3310"), shotd.CodeInvalidOptions, "viewport_device"},
		{"webhook ftp", q("url", "https://a.example/", "webhook_url", "ftp://x/"), shotd.CodeInvalidOptions, "webhook_url"},
		{"expires millis", q("url", "https://a.example/", "expires", "1763774400000"), shotd.CodeInvalidOptions, "expires"},
		{"expires fraction", q("url", "https://a.example/", "expires", "1763774400.5"), shotd.CodeInvalidOptions, "expires"},
		{"block_resources bad item", q("url", "https://a.example/", "block_resources", "image,bogus"), shotd.CodeInvalidOptions, "block_resources"},
		{"block_requests pattern too long", q("url", "https://a.example/", "block_requests", "*"+strings.Repeat("a", maxPatternBytes)), shotd.CodeInvalidOptions, "block_requests"},
		// Each bound holds, the product does not: 149 M device pixels.
		{"viewport over the pixel cap", q("url", "https://a.example/", "viewport_width", "3840", "viewport_height", "4320", "device_scale_factor", "3"), shotd.CodeContentTooLarge, "device_scale_factor"},
		{"preset over the pixel cap", q("url", "https://a.example/", "viewport_device", "desktop_4k", "viewport_height", "4320", "device_scale_factor", "3"), shotd.CodeContentTooLarge, "device_scale_factor"},
		{"repeated scalar", Params{{Name: "url", Values: []string{"https://a.example/", "https://b.example/"}}}, shotd.CodeInvalidOptions, "url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(c.ps, Limits{})
			wantCode(t, err, c.code, c.field)
		})
	}
}

// TestURLHosts: hosts that a browser takes as IPv4 (the last label is a number) are accepted when
// they are valid IPv4 addresses in any spelling, and refused as invalid_url otherwise; names and
// IPv6 addresses pass.
func TestURLHosts(t *testing.T) {
	cases := []struct {
		name, url string
		ok        bool
	}{
		{"dotted", "http://8.8.8.8/", true},
		{"short", "http://127.1/", true},
		{"integer", "http://2130706433/", true},
		{"hex and octal parts", "http://0x7f.0.0.01/", true},
		{"trailing dot", "http://8.8.8.8./", true},
		{"full-width", "http://８．８．８．８/", true},
		{"name", "https://www.example.com/", true},
		{"name ending in letters that look hex", "http://foo.1e/", true},
		{"name with a number inside", "http://a1.123b.example/", true},
		{"idn", "http://bücher.example/", true},
		{"ipv6", "http://[2606:4700::1]:8443/", true},
		{"ipv6 zone", "http://[fe80::1%25eth0]/", true},
		{"octet 999", "http://999.1.1.1/", false},
		{"octet 256", "http://256.0.0.1/", false},
		{"last part 256", "http://1.2.3.256/", false},
		{"short, last part too big", "http://1.16777216/", false},
		{"five parts", "http://1.2.3.4.5/", false},
		{"over 32 bits", "http://4294967296/", false},
		{"name ending in a number", "http://a.123/", false},
		{"name ending in 0x", "http://a.0x/", false},
		{"name ending in bad octal", "http://a.08/", false},
		{"idn ending in a number", "http://é.0/", false},
		{"ideographic dot", "http://a。123/", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(q("url", c.url), Limits{})
			if c.ok {
				if err != nil {
					t.Fatalf("%q refused: %v", c.url, err)
				}
				return
			}
			e := wantCode(t, err, shotd.CodeInvalidURL, "url")
			if len(e.Fields) != 1 {
				t.Fatalf("invalid_url fields %+v, want the url alone", e.Fields)
			}
		})
	}
}

// TestBadURLAmongOtherErrors: a malformed http(s) url is invalid_url when it is the only problem,
// and one item of invalid_options, beside the others, when there are more: the error object lists
// every invalid option.
func TestBadURLAmongOtherErrors(t *testing.T) {
	cases := []struct {
		name   string
		ps     Params
		code   shotd.Code
		fields []string
	}{
		{"url alone", q("url", "http:///x"), shotd.CodeInvalidURL, []string{"url"}},
		{"no host and a bad bound", q("url", "http:///x", "viewport_width", "5"), shotd.CodeInvalidOptions, []string{"viewport_width", "url"}},
		{"bad port and an unknown option", q("url", "http://a.example:0/", "fromat", "png"), shotd.CodeInvalidOptions, []string{"fromat", "url"}},
		{"bad ipv4 and a conflict", q("url", "http://999.1.1.1/", "selector", "#x", "clip_width", "10"), shotd.CodeInvalidOptions, []string{"url", "selector"}},
		{"credentials and a bad webhook", q("url", "http://u:p@a.example/", "webhook_url", "ftp://x/"), shotd.CodeInvalidOptions, []string{"url", "webhook_url"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(c.ps, Limits{})
			e := wantCode(t, err, c.code, "")
			var got []string
			for _, f := range e.Fields {
				got = append(got, f.Field)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.fields) {
				t.Fatalf("fields %q, want %q (%+v)", got, c.fields, e.Fields)
			}
		})
	}
}

// TestSelectorWithClip: with selector the clip options cut inside the element (cdpclient):
// clip_x and clip_y move its corner and clip_height, optional, caps its height.
func TestSelectorWithClip(t *testing.T) {
	cases := []struct {
		name string
		ps   Params
		x, y int
		h    int
	}{
		{"clip_x and clip_y", q("url", "https://a.example/", "selector", "#x", "clip_x", "10", "clip_y", "20"), 10, 20, 0},
		{"clip_y alone", q("url", "https://a.example/", "selector", "#x", "clip_y", "5"), 0, 5, 0},
		{"clip_height alone", q("url", "https://a.example/", "selector", "#x", "clip_height", "300"), 0, 0, 300},
		{"all three", q("url", "https://a.example/", "selector", "#x", "clip_x", "1", "clip_y", "2", "clip_height", "3"), 1, 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := mustParse(t, c.ps)
			if !o.HasClip || o.ClipX != c.x || o.ClipY != c.y || o.ClipHeight != c.h || o.ClipWidth != 0 || o.Selector != "#x" {
				t.Fatalf("options %+v", o)
			}
		})
	}
}

func TestUnknownOptionSuggestsClosest(t *testing.T) {
	_, err := ParseOptions(q("url", "https://a.example/", "viewport_widht", "800"), Limits{})
	e := wantCode(t, err, shotd.CodeInvalidOptions, "viewport_widht")
	if !strings.Contains(e.Fields[0].Message, `"viewport_width"`) {
		t.Fatalf("message %q does not suggest viewport_width", e.Fields[0].Message)
	}
}

// TestUnknownOptionHuge: a name of megabytes is refused without a suggestion (whose edit
// distance would cost seconds of CPU) and echoed clipped, in the field and in the message.
func TestUnknownOptionHuge(t *testing.T) {
	huge := strings.Repeat("<", 1<<20)
	for _, ps := range []Params{q("url", "https://a.example/", huge, "1"), q(huge, "1")} {
		_, err := ParseOptions(ps, Limits{})
		var e *shotd.Error
		if !errors.As(err, &e) || e.Code != shotd.CodeInvalidOptions {
			t.Fatalf("error %v, want invalid_options", err)
		}
		for _, f := range e.Fields {
			if len(f.Field) > 2*maxSuggestedName || len(f.Message) > 4*maxSuggestedName || strings.Contains(f.Message, "did you mean") {
				t.Fatalf("field of %d bytes, message of %d bytes: %.100q", len(f.Field), len(f.Message), f.Message)
			}
		}
		if len(e.Message) > 8*maxSuggestedName {
			t.Fatalf("message of %d bytes", len(e.Message))
		}
	}
	if _, ferr := ParseOption(Param{Name: huge, Values: []string{"1"}}); ferr == nil || len(ferr.Field) > 2*maxSuggestedName {
		t.Fatalf("ParseOption: %v", ferr)
	}
}

func TestSourceTooLarge(t *testing.T) {
	_, err := ParseOptions(q("html", strings.Repeat("x", 101)), Limits{MaxSourceBytes: 100})
	wantCode(t, err, shotd.CodeContentTooLarge, "html")
	if _, err := ParseOptions(q("html", strings.Repeat("x", 100)), Limits{MaxSourceBytes: 100}); err != nil {
		t.Fatalf("html at the limit refused: %v", err)
	}
}

func TestArrays(t *testing.T) {
	cases := []struct {
		name string
		ps   Params
		want []string
	}{
		{"comma in query", q("url", "https://a.example/", "hide_selectors", ".a,.b , #c"), []string{".a", ".b", "#c"}},
		// A JSON array's items are whole: a selector list is one item.
		{"json array items whole", Params{{Name: "url", Values: []string{"https://a.example/"}}, {Name: "hide_selectors", Values: []string{"div:is(.a,.b)", " c "}, Array: true}}, []string{"div:is(.a,.b)", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := mustParse(t, c.ps)
			if fmt.Sprint(o.HideSelectors) != fmt.Sprint(c.want) {
				t.Fatalf("hide_selectors = %q, want %q", o.HideSelectors, c.want)
			}
		})
	}
	// Signed, ["a,b"] would sign as the query's a,b (two items): refused, naming the option.
	_, err := ParseOptions(Params{{Name: "url", Values: []string{"https://a.example/"}},
		{Name: "hide_selectors", Values: []string{"div:is(.a,.b)"}, Array: true},
		{Name: "block_requests", Values: []string{"*ads.js"}, Array: true},
		{Name: "signature", Values: []string{"00"}}}, Limits{})
	wantCode(t, err, shotd.CodeInvalidOptions, "hide_selectors")
	if e := shotd.AsError(err); len(e.Fields) != 1 {
		t.Fatalf("errors %+v, want hide_selectors alone", e.Fields)
	}
	o := mustParse(t, Params{{Name: "url", Values: []string{"https://a.example/"}}, {Name: "headers", Values: []string{"X-A: 1", "X-B: two, three"}}})
	if len(o.Headers) != 2 || o.Headers[1] != (shotd.Header{Name: "X-B", Value: "two, three"}) {
		t.Fatalf("headers = %+v", o.Headers)
	}
	o = mustParse(t, q("url", "https://a.example/x", "cookies", "sid=abc; Path=/x; Secure"))
	if c := o.Cookies[0]; c.Domain != "a.example" || c.Path != "/x" || !c.Secure || c.Value != "abc" {
		t.Fatalf("cookie = %+v", c)
	}
}

func TestDevicePresetAndOverrides(t *testing.T) {
	d, _ := LookupDevice("iphone_15_pro")
	o := mustParse(t, q("url", "https://a.example/", "viewport_device", "iphone_15_pro"))
	if o.ViewportWidth != d.Width || o.ViewportHeight != d.Height || o.DeviceScaleFactor != d.ScaleFactor ||
		!o.ViewportMobile || !o.HasTouch || o.UserAgent != d.UserAgent {
		t.Fatalf("preset not applied: %+v", o)
	}
	o = mustParse(t, q("url", "https://a.example/", "viewport_device", "iphone_15_pro", "viewport_landscape", "true"))
	if o.ViewportWidth != d.Height || o.ViewportHeight != d.Width {
		t.Fatalf("landscape not applied: %dx%d", o.ViewportWidth, o.ViewportHeight)
	}
	o = mustParse(t, q("url", "https://a.example/", "viewport_device", "iphone_15_pro", "viewport_width", "500", "user_agent", "mine"))
	if o.ViewportWidth != 500 || o.UserAgent != "mine" {
		t.Fatalf("explicit options must win over the preset: %+v", o)
	}
	o = mustParse(t, q("url", "https://a.example/", "format", "mp4"))
	if o.ViewportHeight != 720 {
		t.Fatalf("video viewport height = %d, want 720", o.ViewportHeight)
	}
	o = mustParse(t, q("url", "https://a.example/", "format", "gif", "video_fps", "30"))
	if o.VideoFPS != 15 {
		t.Fatalf("gif fps = %d, want 15", o.VideoFPS)
	}
}

func TestParamsFromJSON(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		wantErr bool
	}{
		{"object", `{"url":"https://a.example/","full_page":true,"delay":1.5,"hide_selectors":["a","b"]}`, false},
		{"not object", `["url"]`, true},
		{"invalid", `{"url":`, true},
		{"two objects", `{} {}`, true},
		{"trailing brace", `{"url":"https://a.example/"}}`, true},
		{"trailing bracket", `{}]`, true},
		{"null", `null`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, err := ParamsFromJSON([]byte(c.body))
			if c.wantErr {
				wantCode(t, err, shotd.CodeInvalidRequest, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := mustParse(t, ps)
			if !o.FullPage || o.Delay != 1500*time.Millisecond || len(o.HideSelectors) != 2 {
				t.Fatalf("options from JSON: %+v", o)
			}
		})
	}
	ps, _ := ParamsFromJSON([]byte(`{"url":"https://a.example/","full_page":{"x":1},"headers":[1]}`))
	_, err := ParseOptions(ps, Limits{})
	e := wantCode(t, err, shotd.CodeInvalidOptions, "full_page")
	if len(e.Fields) != 2 {
		t.Fatalf("want errors on full_page and headers, got %+v", e.Fields)
	}
	b, _ := json.Marshal(e.Fields)
	if !strings.Contains(string(b), "headers") {
		t.Fatalf("no headers error: %s", b)
	}
}

func TestCacheKey(t *testing.T) {
	base := mustParse(t, q("url", "https://a.example/", "cache", "true"))
	cases := []struct {
		name    string
		ps      Params
		account string
		same    bool
	}{
		{"identical", q("url", "https://a.example/", "cache", "true"), "a", true},
		{"default given explicitly", q("url", "https://a.example/", "cache", "true", "format", "png"), "a", true},
		{"auth and delivery fields left out", q("url", "https://a.example/", "cache", "true", "access_key", "x", "response_type", "json", "cache_ttl", "600", "async", "true", "webhook_url", "https://h.example/"), "a", true},
		{"other account", q("url", "https://a.example/", "cache", "true"), "b", false},
		{"other url", q("url", "https://b.example/", "cache", "true"), "a", false},
		{"other format", q("url", "https://a.example/", "cache", "true", "format", "jpeg"), "a", false},
		{"cache_key changes it", q("url", "https://a.example/", "cache", "true", "cache_key", "v2"), "a", false},
		{"full_page changes it", q("url", "https://a.example/", "cache", "true", "full_page", "true"), "a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustParse(t, c.ps).ResponseCacheKey(c.account) == base.ResponseCacheKey("a")
			if got != c.same {
				t.Fatalf("same key = %v, want %v", got, c.same)
			}
		})
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadJSONParamsLimits: the body is read as a stream that stops at the first limit, so a
// body of 21 MiB (the default body limit) costs what the limit lets through, not what it holds
// (read whole, one-letter hide_selectors items cost 2.1 GB of allocations).
func TestReadJSONParamsLimits(t *testing.T) {
	const size = 21 << 20
	items := `{"hide_selectors":["a"` + strings.Repeat(`,"a"`, size/4) + `]}`
	var names strings.Builder
	names.WriteString(`{"x0":1`)
	for i := 1; names.Len() < size; i++ {
		fmt.Fprintf(&names, `,"x%d":1`, i)
	}
	names.WriteString("}")
	cases := []struct {
		name  string
		body  string
		lim   Limits
		code  shotd.Code
		field string
	}{
		{"array items", items, Limits{}, shotd.CodeInvalidOptions, "hide_selectors"},
		{"members", names.String(), Limits{}, shotd.CodeInvalidOptions, ""},
		{"long string", `{"html":"` + strings.Repeat("x", size) + `"}`, Limits{MaxSourceBytes: 5 << 20}, shotd.CodeContentTooLarge, "html"},
		{"long escaped string", `{"styles":"` + strings.Repeat(`\u0041`, size/6) + `"}`, Limits{MaxSourceBytes: 1 << 20}, shotd.CodeContentTooLarge, "styles"},
		{"long name", `{"` + strings.Repeat("n", size) + `":1}`, Limits{}, shotd.CodeInvalidOptions, ""},
		{"101 items", `{"block_requests":["a"` + strings.Repeat(`,"a"`, MaxListItems) + `]}`, Limits{}, shotd.CodeInvalidOptions, "block_requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			var err error
			n := allocated(func() { _, err = ReadJSONParams(body, c.lim) })
			e := wantCode(t, err, c.code, c.field)
			if len(e.Message) > 512 {
				t.Fatalf("message of %d bytes", len(e.Message))
			}
			if n > 4<<20 {
				t.Fatalf("a %d-byte body cost %d bytes of allocations", len(body), n)
			}
		})
	}
	// At the limits everything is read.
	ps, err := ReadJSONParams([]byte(`{"url":"https://a.example/","block_requests":["a"`+strings.Repeat(`,"a"`, MaxListItems-1)+`],"html":null}`), Limits{MaxSourceBytes: 20})
	if err != nil || len(ps) != 2 || len(ps[0].Values) != MaxListItems {
		t.Fatalf("at the limits: %v %+v", err, ps)
	}
}

// TestSuggestionsBounded: only the first few unknown names get a "did you mean", which costs an
// edit distance to every option (for all names, a 2 MiB body of made-up names cost 4.6 s of CPU).
func TestSuggestionsBounded(t *testing.T) {
	ps := q("url", "https://a.example/")
	for i := range 10 {
		ps = append(ps, Param{Name: fmt.Sprintf("viewport_widht%d", i), Values: []string{"1"}})
	}
	_, err := ParseOptions(ps, Limits{})
	e := wantCode(t, err, shotd.CodeInvalidOptions, "viewport_widht0")
	suggested := 0
	for _, f := range e.Fields {
		if strings.Contains(f.Message, "did you mean") {
			suggested++
		}
	}
	if suggested != maxSuggestions {
		t.Fatalf("%d suggestions, want %d", suggested, maxSuggestions)
	}
}
