package option_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// s1Schema is testdata/s1schema.json: our own table of ScreenshotOne's options, the values their
// validation schema accepts and the companions each needs (its _source names where it was read).
type s1Schema struct {
	Base    map[string]any `json:"base"`
	Take    []s1Row        `json:"take"`
	Animate []s1Row        `json:"animate"`
	Refused []struct {
		Path    string         `json:"path"`
		Request map[string]any `json:"request"`
		Why     string         `json:"why"`
	} `json:"refused"`
	CloudOnly []string `json:"cloud_only"`
}

type s1Row struct {
	Option     string         `json:"option"`
	Values     []any          `json:"values"`
	Companions map[string]any `json:"companions"`
	Note       string         `json:"note"`
}

func loadS1Schema(t *testing.T) s1Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/s1schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s s1Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// S1Request is one request their schema accepts: the base, the companions, the option.
type S1Request map[string]any

// s1Requests expands rows into requests, each named.
func s1Requests(base map[string]any, rows []s1Row) ([]string, []S1Request) {
	var names []string
	var reqs []S1Request
	for _, r := range rows {
		for _, v := range r.Values {
			req := S1Request{}
			for k, x := range base {
				req[k] = x
			}
			for k, x := range r.Companions {
				if x == nil {
					delete(req, k)
				} else {
					req[k] = x
				}
			}
			req[r.Option] = v
			b, _ := json.Marshal(v)
			cb, _ := json.Marshal(r.Companions)
			names = append(names, fmt.Sprintf("%s=%s with %s", r.Option, b, cb))
			reqs = append(reqs, req)
		}
	}
	return names, reqs
}

// S1Query is req as their SDKs send it on GET: one parameter per name, an array repeated.
func S1Query(req S1Request) option.Params {
	keys := make([]string, 0, len(req))
	for k := range req {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps option.Params
	for _, k := range keys {
		switch v := req[k].(type) {
		case []any:
			if len(v) == 0 {
				continue // an empty array sends nothing in a query
			}
			var vs []string
			for _, x := range v {
				vs = append(vs, scalar(x))
			}
			ps = append(ps, option.Param{Name: k, Values: vs})
		default:
			ps = append(ps, option.Param{Name: k, Values: []string{scalar(v)}})
		}
	}
	return ps
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// s1Parse runs req through the dialect of path (take or animate) and the parser, as their
// paths do; post reads it as a JSON body, else as a query.
func s1Parse(path string, req S1Request, post bool) (*shotd.Options, error) {
	var ps option.Params
	if post {
		b, _ := json.Marshal(req)
		var err error
		if ps, err = option.ReadJSONParams(b, option.Limits{}); err != nil {
			return nil, err
		}
	} else {
		ps = S1Query(req)
	}
	async := req["async"] == true
	translate := option.S1Take
	if path == "animate" {
		translate = option.S1Animate
	}
	ps, err := translate(ps)
	if err != nil {
		return nil, err
	}
	return option.ParseOptions(ps, option.S1Limits(option.Limits{}, async))
}

// TestScreenshotOneSchemaAccepted: every request built from their schema's options, allowed
// values and companions is accepted by their /take and /animate, as a query and as a JSON body.
func TestScreenshotOneSchemaAccepted(t *testing.T) {
	s := loadS1Schema(t)
	total, accepted := 0, 0
	for _, path := range []string{"take", "animate"} {
		rows := s.Take
		if path == "animate" {
			rows = s.Animate
		}
		names, reqs := s1Requests(s.Base, rows)
		for i, req := range reqs {
			for _, post := range []bool{false, true} {
				total++
				_, err := s1Parse(path, req, post)
				if err != nil {
					t.Errorf("/%s %s (post=%v): refused: %v", path, names[i], post, err)
					continue
				}
				accepted++
			}
		}
	}
	t.Logf("%d of %d requests accepted", accepted, total)
}

// TestScreenshotOneSchemaRefused: a sample of what their schema refuses is refused, each as an
// invalid request (their request_not_valid) that names the option; the cloud-only ones say
// they are not available on this server.
func TestScreenshotOneSchemaRefused(t *testing.T) {
	s := loadS1Schema(t)
	for _, r := range s.Refused {
		t.Run(r.Path+" "+r.Why, func(t *testing.T) {
			req := S1Request{}
			for k, v := range s.Base {
				req[k] = v
			}
			for k, v := range r.Request {
				if v == nil {
					delete(req, k)
				} else {
					req[k] = v
				}
			}
			for _, post := range []bool{false, true} {
				_, err := s1Parse(r.Path, req, post)
				code := shotd.CodeOf(err)
				if code != shotd.CodeInvalidOptions && code != shotd.CodeInvalidURL {
					t.Fatalf("post=%v: got %v, want invalid_options", post, err)
				}
				if strings.HasPrefix(r.Why, "cloud-only") && !strings.Contains(err.Error(), "not available on this server") {
					t.Errorf("post=%v: %v does not say it is not available on this server", post, err)
				}
			}
		})
	}
}

// TestScreenshotOneDeviceNames: each of their 115 device names is a viewport_device preset.
func TestScreenshotOneDeviceNames(t *testing.T) {
	s := loadS1Schema(t)
	for _, r := range s.Take {
		if r.Option != "viewport_device" {
			continue
		}
		if len(r.Values) != 115 {
			t.Fatalf("the table has %d device names, want their 115", len(r.Values))
		}
		for _, v := range r.Values {
			if _, ok := option.LookupDevice(v.(string)); !ok {
				t.Errorf("no preset %v", v)
			}
		}
	}
}

// TestScreenshotOneMeanings: some of their values read with their meaning.
func TestScreenshotOneMeanings(t *testing.T) {
	req := func(kv ...any) S1Request {
		r := S1Request{"url": "https://example.com/"}
		for i := 0; i < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return r
	}
	tests := []struct {
		name  string
		path  string
		req   S1Request
		check func(o *shotd.Options) string
	}{
		{"take defaults to jpeg at quality 100, 60 s, soft selectors, host errors fail", "take", req(), func(o *shotd.Options) string {
			if o.Format != shotd.FormatJPEG || o.ImageQuality != 100 || o.Timeout.Seconds() != 60 || !o.FailOnHostError || !o.NoWebhookErrors {
				return fmt.Sprintf("format %s quality %d timeout %v host %v webhook errors off %v", o.Format, o.ImageQuality, o.Timeout, o.FailOnHostError, o.NoWebhookErrors)
			}
			return ""
		}},
		{"wait_until array waits for its latest event", "take", req("wait_until", []any{"load", "networkidle2"}), func(o *shotd.Options) string {
			if o.WaitUntil != shotd.WaitNetworkIdle {
				return o.WaitUntil
			}
			return ""
		}},
		{"error_on_selector_not_found=false makes the selector optional", "take", req("selector", "#x", "error_on_selector_not_found", false), func(o *shotd.Options) string {
			if !o.SelectorOptional {
				return "not optional"
			}
			return ""
		}},
		{"device_scale_factor 5", "take", req("device_scale_factor", 5, "viewport_width", 400, "viewport_height", 400), func(o *shotd.Options) string {
			if o.DeviceScaleFactor != 5 {
				return fmt.Sprint(o.DeviceScaleFactor)
			}
			return ""
		}},
		{"block_annoyances blocks banners and chats", "take", req("block_annoyances", true), func(o *shotd.Options) string {
			if !o.BlockCookieBanners || !o.BlockChats || !o.BlockBannersByHeuristics {
				return "not all blocked"
			}
			return ""
		}},
		{"their device", "take", req("viewport_device", "iphone_x"), func(o *shotd.Options) string {
			if o.ViewportWidth != 375 || o.ViewportHeight != 812 || o.DeviceScaleFactor != 3 || !o.ViewportMobile {
				return fmt.Sprintf("%dx%d@%v", o.ViewportWidth, o.ViewportHeight, o.DeviceScaleFactor)
			}
			return ""
		}},
		{"animate defaults: mp4, 5 s, 4:3, scroll back", "animate", req(), func(o *shotd.Options) string {
			if o.Format != shotd.FormatMP4 || o.VideoDuration.Seconds() != 5 || o.ViewportHeight != 960 || !o.VideoScrollBack {
				return fmt.Sprintf("%s %v %d %v", o.Format, o.VideoDuration, o.ViewportHeight, o.VideoScrollBack)
			}
			return ""
		}},
		{"animate 16:9", "animate", req("aspect_ratio", "16:9"), func(o *shotd.Options) string {
			if o.ViewportHeight != 720 {
				return fmt.Sprint(o.ViewportHeight)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := s1Parse(tt.path, tt.req, true)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(o); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// TestS1AnimateScrollSelector: /animate's scroll_till_selector, as their clients send it beside
// scenario=scroll, is the one continuous scroll; alone it is that scroll too, and beside
// scenario=default that scenario decides. None of them is refused as a conflict.
func TestS1AnimateScrollSelector(t *testing.T) {
	for _, c := range []struct {
		req    S1Request
		scroll bool
	}{
		{S1Request{"url": "https://example.com", "scenario": "scroll", "scroll_till_selector": "#end"}, true},
		{S1Request{"url": "https://example.com", "scroll_till_selector": "#end"}, true},
		{S1Request{"url": "https://example.com", "scenario": "default", "scroll_till_selector": "#end"}, false},
	} {
		for _, post := range []bool{false, true} {
			o, err := s1Parse("animate", c.req, post)
			if err != nil {
				t.Fatalf("%v (post %v): %v", c.req, post, err)
			}
			if o.VideoScroll != c.scroll {
				t.Errorf("%v (post %v): scroll %v, want %v", c.req, post, o.VideoScroll, c.scroll)
			}
		}
	}
}

// TestS1ImageQualityZero: their image_quality 0, however written, is our lowest quality.
func TestS1ImageQualityZero(t *testing.T) {
	for _, q := range []any{"0", "0.0", 0, 0.0} {
		for _, post := range []bool{false, true} {
			o, err := s1Parse("take", S1Request{"url": "https://example.com", "format": "jpg", "image_quality": q}, post)
			if err != nil || o.ImageQuality != 1 {
				t.Errorf("image_quality %v (post %v): %v, quality %v; want 1", q, post, err, o)
			}
		}
	}
}
