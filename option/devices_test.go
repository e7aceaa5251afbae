package option

import (
	"slices"
	"strings"
	"testing"
)

// specDeviceNames is the documented viewport_device list, copied by hand so a drift between the
// documentation and the table shows up here.
var specDeviceNames = []string{
	"iphone_se", "iphone_12", "iphone_13", "iphone_13_mini", "iphone_14", "iphone_14_plus",
	"iphone_14_pro", "iphone_14_pro_max", "iphone_15", "iphone_15_plus", "iphone_15_pro",
	"iphone_15_pro_max", "iphone_16", "iphone_16_plus", "iphone_16_pro", "iphone_16_pro_max",
	"pixel_5", "pixel_7", "pixel_8", "pixel_8_pro", "pixel_9", "pixel_9_pro", "galaxy_s23",
	"galaxy_s24", "galaxy_s24_ultra", "galaxy_a54", "ipad", "ipad_mini", "ipad_air", "ipad_pro_11",
	"ipad_pro_13", "galaxy_tab_s9", "pixel_tablet", "macbook_air_13", "macbook_pro_14",
	"macbook_pro_16", "laptop_hd", "laptop_hidpi", "desktop_hd", "desktop_full_hd", "desktop_qhd",
	"desktop_4k", "imac_24",
}

func TestDeviceNamesMatchSpec(t *testing.T) {
	if !slices.Equal(ownDeviceNames(), specDeviceNames) {
		t.Fatalf("DeviceNames = %v\nwant (documented) %v", DeviceNames, specDeviceNames)
	}
	seen := map[string]bool{}
	for _, n := range ownDeviceNames() {
		if seen[n] {
			t.Errorf("device %q listed twice", n)
		}
		seen[n] = true
	}
	for _, n := range ownDeviceNames() {
		d, ok := LookupDevice(n)
		if !ok {
			t.Errorf("LookupDevice(%q) failed for a listed name", n)
			continue
		}
		if d.Name != n {
			t.Errorf("LookupDevice(%q).Name = %q", n, d.Name)
		}
	}
}

func TestDeviceBounds(t *testing.T) {
	// The documented bounds of viewport_width, viewport_height and device_scale_factor.
	const minW, maxW, minH, maxH = 100, 3840, 100, 4320
	for _, n := range ownDeviceNames() {
		d, _ := LookupDevice(n)
		if d.Width < minW || d.Width > maxW {
			t.Errorf("%s: width %d outside %d..%d", n, d.Width, minW, maxW)
		}
		if d.Height < minH || d.Height > maxH {
			t.Errorf("%s: height %d outside %d..%d", n, d.Height, minH, maxH)
		}
		// viewport_landscape swaps the two, and the result must still be a valid viewport.
		if d.Height > maxW || d.Width > maxH {
			t.Errorf("%s: %dx%d rotated leaves the viewport bounds", n, d.Width, d.Height)
		}
		if d.ScaleFactor < 1 || d.ScaleFactor > 3 {
			t.Errorf("%s: scale factor %v outside 1..3", n, d.ScaleFactor)
		}
		if strings.Contains(d.UserAgent, "HeadlessChrome") {
			t.Errorf("%s: user agent gives headless away: %q", n, d.UserAgent)
		}
	}
}

func TestDeviceKinds(t *testing.T) {
	type kind int
	const (
		phone kind = iota
		tablet
		computer
	)
	tests := []struct {
		name     string
		prefixes []string // device names of this family
		kind     kind
		uaHas    []string // every one must appear in the user agent
		uaHasNot []string
	}{
		{name: "iphone", prefixes: []string{"iphone_"}, kind: phone,
			uaHas: []string{"iPhone", "Mobile/", "Safari/"}, uaHasNot: []string{"Android", "Chrome/"}},
		{name: "pixel phone", prefixes: []string{"pixel_5", "pixel_7", "pixel_8", "pixel_9"}, kind: phone,
			uaHas: []string{"Android", "Pixel ", "Chrome/", "Mobile Safari/"}},
		{name: "galaxy phone", prefixes: []string{"galaxy_s", "galaxy_a"}, kind: phone,
			uaHas: []string{"Android", "SM-", "Chrome/", "Mobile Safari/"}},
		// iPadOS Safari sends the Mac UA by default.
		{name: "ipad", prefixes: []string{"ipad"}, kind: tablet,
			uaHas: []string{"Macintosh", "Version/", "Safari/"}, uaHasNot: []string{"Mobile", "Chrome/"}},
		// Chrome on Android tablets leaves "Mobile" out so sites serve the tablet layout.
		{name: "android tablet", prefixes: []string{"galaxy_tab_", "pixel_tablet"}, kind: tablet,
			uaHas: []string{"Android", "Chrome/", "Safari/"}, uaHasNot: []string{"Mobile"}},
		{name: "laptop and desktop", prefixes: []string{"macbook_", "laptop_", "desktop_", "imac_"}, kind: computer},
	}
	covered := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var found int
			for _, n := range ownDeviceNames() {
				if !hasAnyPrefix(n, tt.prefixes) {
					continue
				}
				if prev, ok := covered[n]; ok {
					t.Fatalf("%s matched by both %q and %q", n, prev, tt.name)
				}
				covered[n] = tt.name
				found++
				d, _ := LookupDevice(n)
				switch tt.kind {
				case phone, tablet:
					if !d.Mobile || !d.Touch {
						t.Errorf("%s: mobile=%v touch=%v, want both", n, d.Mobile, d.Touch)
					}
					if d.Width >= d.Height {
						t.Errorf("%s: %dx%d is not portrait", n, d.Width, d.Height)
					}
				case computer:
					if d.Mobile || d.Touch {
						t.Errorf("%s: mobile=%v touch=%v, want neither", n, d.Mobile, d.Touch)
					}
					if d.UserAgent != "" {
						t.Errorf("%s: user agent %q, want the browser's own", n, d.UserAgent)
					}
					if d.Width <= d.Height {
						t.Errorf("%s: %dx%d is not landscape", n, d.Width, d.Height)
					}
				}
				for _, s := range tt.uaHas {
					if !strings.Contains(d.UserAgent, s) {
						t.Errorf("%s: user agent %q lacks %q", n, d.UserAgent, s)
					}
				}
				for _, s := range tt.uaHasNot {
					if strings.Contains(d.UserAgent, s) {
						t.Errorf("%s: user agent %q contains %q", n, d.UserAgent, s)
					}
				}
			}
			if found == 0 {
				t.Errorf("no device matched %v", tt.prefixes)
			}
		})
	}
	for _, n := range ownDeviceNames() {
		if _, ok := covered[n]; !ok {
			t.Errorf("%s belongs to no family checked here", n)
		}
	}
}

// The model must be in the Android UA, so each preset is told apart by sniffers.
func TestDeviceAndroidModel(t *testing.T) {
	tests := []struct {
		name  string
		model string
	}{
		{name: "pixel_5", model: "; Pixel 5)"},
		{name: "pixel_8_pro", model: "; Pixel 8 Pro)"},
		{name: "pixel_9", model: "; Pixel 9)"},
		{name: "galaxy_s24_ultra", model: "; SM-S928B)"},
		{name: "galaxy_tab_s9", model: "; SM-X710)"},
		{name: "pixel_tablet", model: "; Pixel Tablet)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := LookupDevice(tt.name)
			if !ok {
				t.Fatalf("LookupDevice(%q) failed", tt.name)
			}
			if !strings.Contains(d.UserAgent, tt.model) {
				t.Errorf("user agent %q lacks model %q", d.UserAgent, tt.model)
			}
		})
	}
}

func TestDeviceKnownValues(t *testing.T) {
	tests := []struct {
		name string
		want Device
	}{
		{name: "iphone_se", want: Device{Width: 375, Height: 667, ScaleFactor: 2}},
		{name: "iphone_15_pro", want: Device{Width: 393, Height: 852, ScaleFactor: 3}},
		{name: "pixel_8", want: Device{Width: 412, Height: 915, ScaleFactor: 2.625}},
		{name: "ipad", want: Device{Width: 820, Height: 1180, ScaleFactor: 2}},
		{name: "macbook_air_13", want: Device{Width: 1470, Height: 956, ScaleFactor: 2}},
		{name: "desktop_full_hd", want: Device{Width: 1920, Height: 1080, ScaleFactor: 1}},
		{name: "desktop_4k", want: Device{Width: 3840, Height: 2160, ScaleFactor: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := LookupDevice(tt.name)
			if !ok {
				t.Fatalf("LookupDevice(%q) failed", tt.name)
			}
			if d.Width != tt.want.Width || d.Height != tt.want.Height || d.ScaleFactor != tt.want.ScaleFactor {
				t.Errorf("got %dx%d @%v, want %dx%d @%v", d.Width, d.Height, d.ScaleFactor,
					tt.want.Width, tt.want.Height, tt.want.ScaleFactor)
			}
		})
	}
}

func TestLookupDeviceUnknown(t *testing.T) {
	tests := []struct {
		name  string
		input string
	}{
		{name: "empty", input: ""},
		{name: "unknown model", input: "iphone_3g"},
		{name: "wrong case", input: "iPhone_15"},
		{name: "spaces", input: "iphone 15"},
		{name: "padded", input: " ipad"},
		{name: "family only", input: "desktop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d, ok := LookupDevice(tt.input); ok {
				t.Errorf("LookupDevice(%q) = %+v, true; want false", tt.input, d)
			}
		})
	}
}

// DeviceNames is exported and so can be changed by a caller; lookups must not depend on it.
func TestLookupDeviceIgnoresDeviceNamesEdits(t *testing.T) {
	saved := DeviceNames[0]
	DeviceNames[0] = "changed"
	defer func() { DeviceNames[0] = saved }()
	if _, ok := LookupDevice("changed"); ok {
		t.Error("LookupDevice found a name written into DeviceNames")
	}
	if _, ok := LookupDevice(saved); !ok {
		t.Errorf("LookupDevice(%q) failed after DeviceNames was edited", saved)
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ownDeviceNames are shotd's own presets, which the tests above hold to shotd's rules;
// ScreenshotOne's (s1devices.go) are theirs as they give them.
func ownDeviceNames() []string {
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = d.Name
	}
	return names
}
