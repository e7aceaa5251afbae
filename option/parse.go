package option

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time_zone is validated against the embedded IANA database, not the host's.

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/urlhost"
)

// Param is one raw option as it arrived: a query parameter with all its values in order, or one
// member of a JSON body with its value as text. It is also what signatures are computed over.
type Param struct {
	Name   string
	Values []string
	// Array is true when the value was a JSON array; its items are never split on commas.
	Array bool
	// Invalid holds a type problem found while reading JSON (an object, a nested array).
	Invalid string
}

// Params is an ordered list of raw options.
type Params []Param

// Get returns the first value of name.
func (ps Params) Get(name string) (string, bool) {
	for _, p := range ps {
		if p.Name == name && len(p.Values) > 0 {
			return p.Values[0], true
		}
	}
	return "", false
}

// Has reports whether name was sent.
func (ps Params) Has(name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// jsonScalar returns the text of a JSON string, number or boolean.
func jsonScalar(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		if string(v) == "true" || string(v) == "false" {
			return string(v), true
		}
	case '{', '[', 'n':
		return "", false
	default:
		var n json.Number
		if json.Unmarshal(v, &n) == nil {
			return n.String(), true
		}
	}
	return "", false
}

// draft is the Options a parse fills in, with what the parse keeps until its cross checks.
type draft struct {
	*shotd.Options
	proxyBypass []string // proxy_bypass_hosts, until checkProxyOptions puts them in Proxy
	refused     []string // trueOnly options given false
}

// Limits bounds what ParseOptions accepts beyond the option table.
type Limits struct {
	MaxSourceBytes int // html, markdown, styles, scripts each; 0 = unlimited
	// Bounds replace the table's bounds of the options they name (ScreenshotOne's paths:
	// S1Limits); nil: the table's.
	Bounds map[string][2]float64
}

// ParseOptions validates raw options against the option table and returns the immutable Options.
// Every problem is collected: the error is an invalid_options *Error whose Fields name each one,
// content_too_large for an oversized source, or invalid_url for an http(s) URL that is malformed.
func ParseOptions(ps Params, lim Limits) (*shotd.Options, error) {
	d := &draft{Options: &shotd.Options{}}
	o := d.Options
	var errs []shotd.FieldError
	fail := func(field, format string, args ...any) {
		errs = append(errs, shotd.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}

	// Defaults first, through the same typed path as sent values.
	for _, s := range OptionTable {
		if s.Default != "" {
			v, msg := convert(s, []string{s.Default}, false)
			if msg != "" {
				panic("shotd: bad default for " + s.Name + ": " + msg)
			}
			s.apply(d, v)
		}
	}

	given := map[string]bool{}
	unknown := 0
	// A signature covers the values, not the form they came in: `x=a,b` (two items) and the
	// JSON ["a,b"] (one) sign alike, so a signed request may not send the latter.
	signed := ps.Has("signature")
	for _, p := range foldWaitUntil(ps) {
		s, ok := optionsByName[p.Name]
		if b, over := lim.Bounds[p.Name]; ok && over {
			c := *s
			c.Min, c.Max, c.HasMin, c.HasMax = b[0], b[1], true, true
			s = &c
		}
		if why, refused := RefusedOptions[p.Name]; !ok && refused {
			fail(p.Name, "not supported: %s", why)
			continue
		}
		if why, cloud := CloudOnly[p.Name]; !ok && cloud {
			fail(p.Name, "%s%s", notHere, why)
			continue
		}
		if !ok {
			unknown++
			e := unknownOption(p.Name, unknown <= maxSuggestions)
			fail(e.Field, "%s", e.Message)
			continue
		}
		if given[p.Name] {
			fail(p.Name, "given more than once")
			continue
		}
		given[p.Name] = true
		if p.Invalid != "" {
			fail(p.Name, "%s", p.Invalid)
			continue
		}
		if signed && s.Array == ArrayComma && p.Array && slices.ContainsFunc(p.Values, hasComma) {
			fail(p.Name, "an item with a comma cannot be signed: it signs as the query's comma-separated items; send each item on its own")
			continue
		}
		v, msg := convert(s, p.Values, p.Array)
		if msg != "" {
			fail(p.Name, "%s", msg)
			continue
		}
		s.apply(d, v)
	}
	for _, s := range OptionTable {
		if given[s.Name] {
			o.Given = append(o.Given, s.Name)
		}
	}

	if tooLarge := checkSourceSizes(o, lim); tooLarge != nil {
		return nil, tooLarge
	}

	badURL := crossCheck(d, given, fail)
	applyViewport(o, given)

	if len(errs) == 1 && badURL {
		// The url is the only problem and it is a malformed http(s) address: invalid_url.
		return nil, &shotd.Error{Code: shotd.CodeInvalidURL, Message: "url " + errs[0].Message, Fields: errs}
	}
	if len(errs) > 0 {
		return nil, &shotd.Error{Code: shotd.CodeInvalidOptions, Message: summarize(errs), Fields: errs}
	}
	if tooLarge := checkViewportPixels(o); tooLarge != nil {
		return nil, tooLarge
	}
	return o, nil
}

// MaxCapturePixels bounds every image Chrome captures for a render, in device pixels (4 bytes
// each: 512 MiB). cdpclient cuts a full page to it and refuses a larger clip or element.
const MaxCapturePixels = 1 << 27

// checkViewportPixels refuses a viewport whose capture alone passes MaxCapturePixels: each
// bound holds on its own, but 3840 x 4320 at scale 3 is 149 M device pixels, and the viewport
// capture (and a video's frames) would take it whole.
func checkViewportPixels(o *shotd.Options) *shotd.Error {
	px := float64(o.ViewportWidth) * float64(o.ViewportHeight) * o.DeviceScaleFactor * o.DeviceScaleFactor
	if px <= MaxCapturePixels {
		return nil
	}
	msg := fmt.Sprintf("viewport %dx%d at device_scale_factor %s is %.0f device pixels; the limit is %d",
		o.ViewportWidth, o.ViewportHeight, fmtNum(o.DeviceScaleFactor), px, MaxCapturePixels)
	return &shotd.Error{Code: shotd.CodeContentTooLarge, Message: msg, Fields: []shotd.FieldError{{Field: "device_scale_factor", Message: msg}}}
}

func summarize(errs []shotd.FieldError) string {
	if len(errs) == 1 {
		return fmt.Sprintf("invalid option %s: %s", errs[0].Field, errs[0].Message)
	}
	return fmt.Sprintf("%d invalid options; see errors", len(errs))
}

func hasComma(v string) bool { return strings.Contains(v, ",") }

// convert turns raw values into the spec's Go type, or returns a message saying what is wrong.
func convert(s *OptionSpec, values []string, array bool) (any, string) {
	if s.Kind == KindList {
		var items []string
		for _, v := range values {
			// A comma-separated option takes a JSON array's items whole (a selector list such
			// as div:is(.a,.b) is one item); ParseOptions refuses such an item in a signed
			// request.
			if s.Array == ArrayComma {
				parts := []string{v}
				if !array {
					parts = strings.Split(v, ",")
				}
				for _, it := range parts {
					if it = strings.TrimSpace(it); it != "" {
						items = append(items, it)
					}
				}
			} else {
				items = append(items, v)
			}
		}
		for _, it := range items {
			if s.Enum != nil && !slices.Contains(s.Enum, it) {
				return nil, fmt.Sprintf("%q is not one of %s", it, strings.Join(s.Enum, ", "))
			}
			if s.check != nil {
				if msg := s.check(it); msg != "" {
					return nil, msg
				}
			}
		}
		if len(items) > MaxListItems {
			return nil, fmt.Sprintf("at most %d items", MaxListItems)
		}
		return items, ""
	}
	if array || len(values) != 1 {
		return nil, fmt.Sprintf("must be a single %s", s.Kind)
	}
	v := values[0]
	switch s.Kind {
	case KindBool:
		switch strings.ToLower(v) {
		case "true", "1":
			return true, ""
		case "false", "0":
			return false, ""
		}
		return nil, fmt.Sprintf("must be true or false, got %q", clip(v))
	case KindInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// A JSON number like 5.0 or 1e3 that is whole is accepted; 5.5 is not.
			f, ferr := strconv.ParseFloat(v, 64)
			if ferr != nil || f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
				return nil, fmt.Sprintf("must be a whole number, got %q", clip(v))
			}
			n = int64(f)
		}
		if msg := bounds(s, float64(n)); msg != "" {
			return nil, msg
		}
		return int(n), ""
	case KindNumber:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Sprintf("must be a number, got %q", clip(v))
		}
		if msg := bounds(s, f); msg != "" {
			return nil, msg
		}
		return f, ""
	default:
		if a, ok := s.Aliases[v]; ok {
			v = a
		}
		if s.Enum != nil && !slices.Contains(s.Enum, v) {
			if s.Name == "viewport_device" {
				return nil, fmt.Sprintf("unknown device %q; see the viewport_device list", clip(v))
			}
			return nil, fmt.Sprintf("must be one of %s, got %q", strings.Join(s.Enum, ", "), clip(v))
		}
		if s.check != nil {
			if msg := s.check(v); msg != "" {
				return nil, msg
			}
		}
		return v, ""
	}
}

func bounds(s *OptionSpec, f float64) string {
	switch {
	case s.HasMin && s.HasMax && (f < s.Min || f > s.Max):
		return fmt.Sprintf("must be between %s and %s, got %s", fmtNum(s.Min), fmtNum(s.Max), fmtNum(f))
	case s.HasMin && f < s.Min:
		return fmt.Sprintf("must be at least %s, got %s", fmtNum(s.Min), fmtNum(f))
	case s.HasMax && f > s.Max:
		return fmt.Sprintf("must be at most %s, got %s", fmtNum(s.Max), fmtNum(f))
	}
	return ""
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// maxSuggestedName is the longest unknown name that gets a "did you mean": the edit distance
// costs its length times each option's, and a name of megabytes would take seconds of CPU. No
// option name comes near it.
const maxSuggestedName = 64

// maxSuggestions is how many unknown names of one request get a "did you mean": each costs an
// edit distance to every option, and a body of thousands of made-up names cost seconds.
const maxSuggestions = 3

// unknownOption is the error of a name that is not an option, with the closest known name
// suggested when suggest is set. The name is echoed clipped, in the field as in the message.
func unknownOption(name string, suggest bool) shotd.FieldError {
	field := clip(name)
	if !suggest || len(name) > maxSuggestedName {
		return shotd.FieldError{Field: field, Message: fmt.Sprintf("unknown option %q", field)}
	}
	return shotd.FieldError{Field: field, Message: fmt.Sprintf("unknown option %q; did you mean %q?", name, ClosestOption(name))}
}

// clip shortens a value quoted back in a message.
func clip(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}

func checkSourceSizes(o *shotd.Options, lim Limits) *shotd.Error {
	if lim.MaxSourceBytes <= 0 {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"html", o.HTML}, {"markdown", o.Markdown}, {"styles", o.Styles}, {"scripts", o.Scripts}} {
		if len(f.v) > lim.MaxSourceBytes {
			return &shotd.Error{Code: shotd.CodeContentTooLarge,
				Message: fmt.Sprintf("%s is %d bytes; the limit is %d", f.name, len(f.v), lim.MaxSourceBytes),
				Fields:  []shotd.FieldError{{Field: f.name, Message: fmt.Sprintf("larger than %d bytes", lim.MaxSourceBytes)}}}
		}
	}
	return nil
}

// SourceOptions are the sources of a render, exactly one of which is given. AreaOptions pick the
// part of the page to capture: an element (selector) and a clip area (ClipOptions) within the
// page or that element. A bulk item that gives one of a group takes none of it from the defaults.
var (
	SourceOptions = []string{"url", "html", "markdown"}
	ClipOptions   = []string{"clip_x", "clip_y", "clip_width", "clip_height"}
	AreaOptions   = append([]string{"selector"}, ClipOptions...)
)

// crossCheck validates rules between options. Every problem is recorded with fail, the url's
// too; it reports badURL when url has an http(s) scheme but is not a valid full address, which
// is invalid_url when it is the only problem. A missing or wrong scheme is an option error.
func crossCheck(d *draft, given map[string]bool, fail func(string, string, ...any)) (badURL bool) {
	o := d.Options
	sources := 0
	for _, n := range SourceOptions {
		if given[n] {
			sources++
		}
	}
	switch {
	case sources == 0:
		fail("url", "one of url, html or markdown is required")
	case sources > 1:
		for _, n := range []string{"html", "markdown"} {
			if given[n] && (given["url"] || n == "markdown" && given["html"]) {
				fail(n, "only one of url, html or markdown may be given")
			}
		}
	}
	if given["html"] && o.HTML == "" {
		fail("html", "must not be empty")
	}
	if given["markdown"] && o.Markdown == "" {
		fail("markdown", "must not be empty")
	}
	if given["url"] {
		if msg, schemeOK := urlhost.CheckHTTPURL(o.URL); msg != "" {
			fail("url", "%s", msg)
			badURL = schemeOK
		}
	}
	if given["webhook_url"] {
		if msg, _ := urlhost.CheckHTTPURL(o.WebhookURL); msg != "" {
			fail("webhook_url", "%s", msg)
		}
	}
	if given["selector"] && given["clip_width"] {
		fail("selector", "conflicts with clip_width: capture either an element or an area")
	}
	if slices.ContainsFunc(ClipOptions, func(n string) bool { return given[n] }) {
		o.HasClip = true
		// Without selector the clip options are an area of the page and need its size. With
		// selector they cut inside the element's box (cdpclient): clip_x and clip_y take that much
		// off its left and top, clip_height, optional, caps its height; clip_width conflicts
		// (above).
		if !given["selector"] {
			for _, n := range []string{"clip_width", "clip_height"} {
				if !given[n] {
					fail(n, "is required when an area is clipped")
				}
			}
		}
	}
	for i, c := range o.Cookies {
		if c.Domain != "" {
			continue
		}
		// A cookie without Domain belongs to the host of url, as a browser would scope it.
		if u, err := url.Parse(o.URL); err == nil && u.Hostname() != "" {
			o.Cookies[i].Domain = u.Hostname()
		} else {
			fail("cookies", "cookie %q needs a Domain when the source is not a url", c.Name)
		}
	}
	checkStorageOptions(o, given, fail)
	checkRefinements(d, given, fail)
	checkRenderOptions(o, given, fail) // renderopts.go
	if o.Format == shotd.FormatGIF && o.VideoFPS > 15 {
		o.VideoFPS = 15 // a gif plays at most 15 frames per second
	}
	return badURL
}

// applyViewport folds the device preset, landscape and video defaults into the viewport fields.
// Explicit viewport options win over the preset's values.
func applyViewport(o *shotd.Options, given map[string]bool) {
	if d, ok := LookupDevice(o.ViewportDevice); ok && o.ViewportDevice != "" {
		if !given["viewport_width"] {
			o.ViewportWidth = d.Width
		}
		if !given["viewport_height"] {
			o.ViewportHeight = d.Height
		}
		if !given["device_scale_factor"] {
			o.DeviceScaleFactor = d.ScaleFactor
		}
		if !given["viewport_mobile"] {
			o.ViewportMobile = d.Mobile
		}
		o.HasTouch = d.Touch
		if !given["user_agent"] && d.UserAgent != "" {
			o.UserAgent = d.UserAgent
		}
	} else if shotd.IsVideo(o.Format) && !given["viewport_height"] {
		o.ViewportHeight = 720
	}
	if o.ViewportLandscape && o.ViewportHeight > o.ViewportWidth {
		o.ViewportWidth, o.ViewportHeight = o.ViewportHeight, o.ViewportWidth
	}
}

var (
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	lengthRe   = regexp.MustCompile(`^(0|[0-9]+(\.[0-9]+)?(px|in|cm|mm))$`)
)

func checkSelector(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "must be a non-empty CSS selector"
	case len(v) > 1024:
		return "selector is longer than 1024 characters"
	}
	return ""
}

// maxPatternBytes bounds one block_requests pattern. Every request of a render is matched
// against every pattern, so the pattern length multiplies into the interceptor's work; no real
// URL pattern comes near it.
const maxPatternBytes = 2048

func checkPattern(v string) string {
	if len(v) > maxPatternBytes {
		return fmt.Sprintf("pattern is longer than %d characters", maxPatternBytes)
	}
	return ""
}

func checkHeaderValue(v string) string {
	if strings.ContainsAny(v, "\r\n\x00") {
		return "must not contain line breaks or NUL"
	}
	return ""
}

func checkHeader(v string) string {
	name, value, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	if !ok || !headerName.MatchString(name) {
		return fmt.Sprintf("%q must be `Name: value`", clip(v))
	}
	switch strings.ToLower(name) {
	case "host", "content-length", "connection", "transfer-encoding", "upgrade", "te", "trailer", "proxy-authorization":
		return fmt.Sprintf("header %s cannot be set", name)
	}
	return checkHeaderValue(value)
}

func parseHeaders(vs []string) []shotd.Header {
	hs := make([]shotd.Header, 0, len(vs))
	for _, v := range vs {
		name, value, _ := strings.Cut(v, ":")
		hs = append(hs, shotd.Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
	}
	return hs
}

func checkCookie(v string) string {
	if msg := checkHeaderValue(v); msg != "" {
		return msg
	}
	first, _, _ := strings.Cut(v, ";")
	name, _, ok := strings.Cut(first, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || !headerName.MatchString(name) {
		return fmt.Sprintf("%q must be `name=value; Domain=<domain>`", clip(v))
	}
	return ""
}

func parseCookies(vs []string) []shotd.Cookie {
	cs := make([]shotd.Cookie, 0, len(vs))
	for _, v := range vs {
		parts := strings.Split(v, ";")
		name, value, _ := strings.Cut(parts[0], "=")
		c := shotd.Cookie{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
		for _, attr := range parts[1:] {
			k, val, _ := strings.Cut(attr, "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "domain":
				c.Domain = strings.TrimSpace(val)
			case "path":
				c.Path = strings.TrimSpace(val)
			case "secure":
				c.Secure = true
			case "httponly":
				c.HTTPOnly = true
			}
		}
		cs = append(cs, c)
	}
	return cs
}

func checkTimeZone(v string) string {
	if v == "" || v == "Local" || strings.HasPrefix(v, "/") || strings.Contains(v, "..") {
		return fmt.Sprintf("%q is not an IANA time zone name", clip(v))
	}
	if _, err := time.LoadLocation(v); err != nil {
		return fmt.Sprintf("%q is not an IANA time zone name", clip(v))
	}
	return ""
}

func checkLength(v string) string {
	if !lengthRe.MatchString(strings.TrimSpace(v)) {
		return fmt.Sprintf("%q must be a length with a unit: px, in, cm or mm (for example 10mm)", clip(v))
	}
	return ""
}

// ParseOption validates one option on its own, as ParseOptions would, and returns its typed value
// (string, int, float64, bool or []string). httpd uses it for the authentication parameters of the
// status endpoints.
func ParseOption(p Param) (any, *shotd.FieldError) {
	s, ok := optionsByName[p.Name]
	if !ok {
		e := unknownOption(p.Name, true)
		return nil, &e
	}
	if p.Invalid != "" {
		return nil, &shotd.FieldError{Field: p.Name, Message: p.Invalid}
	}
	v, msg := convert(s, p.Values, p.Array)
	if msg != "" {
		return nil, &shotd.FieldError{Field: p.Name, Message: msg}
	}
	return v, nil
}
