package option

import "slices"

// Device is a viewport preset: CSS-pixel size in portrait (phones/tablets) or its natural
// orientation (laptops/desktops), scale factor, mobile and touch flags, user agent.
//
// Sizes are the device's whole screen in CSS pixels (what window.screen reports), not the part
// left over by the browser's toolbars, so a capture shows the layout the device's width produces.
type Device struct {
	Name        string
	Width       int
	Height      int
	ScaleFactor float64
	Mobile      bool
	Touch       bool
	UserAgent   string // "" for desktops and laptops: the browser's own UA (minus "HeadlessChrome") is used
}

// User agents. Each preset names the browser that ships on the device, so sites that sniff the UA
// serve the same markup they would to a real visitor.
const (
	// Safari on iOS 18.
	uaIPhone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_6 like Mac OS X) AppleWebKit/605.1.15 " +
		"(KHTML, like Gecko) Version/18.6 Mobile/15E148 Safari/604.1"
	// Safari on iPadOS 13 and later asks for desktop sites by default and so sends the Mac UA;
	// only the touch support tells the page it is on an iPad.
	uaIPad = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 " +
		"(KHTML, like Gecko) Version/18.6 Safari/605.1.15"
	// Chrome on Android, at the major version of the Debian Chromium these presets were written
	// against (156), so version sniffing roughly matches the engine that really renders. Bump it
	// with Chromium.
	androidChrome = "Chrome/156.0.0.0"
)

// androidPhoneUA is Chrome on an Android phone; "Mobile" is what makes sites pick phone layouts.
func androidPhoneUA(androidVersion, model string) string {
	return "Mozilla/5.0 (Linux; Android " + androidVersion + "; " + model +
		") AppleWebKit/537.36 (KHTML, like Gecko) " + androidChrome + " Mobile Safari/537.36"
}

// androidTabletUA is Chrome on an Android tablet: no "Mobile" token, as Chrome sends it there.
func androidTabletUA(androidVersion, model string) string {
	return "Mozilla/5.0 (Linux; Android " + androidVersion + "; " + model +
		") AppleWebKit/537.36 (KHTML, like Gecko) " + androidChrome + " Safari/537.36"
}

// handheld builds a phone or tablet preset. Tablets are mobile too: Chrome's mobile emulation is
// what honours the viewport meta tag and overlay scrollbars, as tablet browsers do.
func handheld(name string, w, h int, dpr float64, ua string) Device {
	return Device{Name: name, Width: w, Height: h, ScaleFactor: dpr, Mobile: true, Touch: true, UserAgent: ua}
}

func computer(name string, w, h int, dpr float64) Device {
	return Device{Name: name, Width: w, Height: h, ScaleFactor: dpr}
}

// devices is the preset table, in the order of the documented viewport_device list. Scale factors
// are the devices' real default ones; all lie within the device_scale_factor bound (1..3), so none
// needed clamping.
var devices = []Device{
	// iPhones: Apple's point sizes, which Safari reports as CSS pixels.
	handheld("iphone_se", 375, 667, 2, uaIPhone), // 2nd/3rd generation
	handheld("iphone_12", 390, 844, 3, uaIPhone),
	handheld("iphone_13", 390, 844, 3, uaIPhone),
	handheld("iphone_13_mini", 375, 812, 3, uaIPhone), // panel is 1080 wide but iOS renders at @3 and downsamples
	handheld("iphone_14", 390, 844, 3, uaIPhone),
	handheld("iphone_14_plus", 428, 926, 3, uaIPhone),
	handheld("iphone_14_pro", 393, 852, 3, uaIPhone),
	handheld("iphone_14_pro_max", 430, 932, 3, uaIPhone),
	handheld("iphone_15", 393, 852, 3, uaIPhone),
	handheld("iphone_15_plus", 430, 932, 3, uaIPhone),
	handheld("iphone_15_pro", 393, 852, 3, uaIPhone),
	handheld("iphone_15_pro_max", 430, 932, 3, uaIPhone),
	handheld("iphone_16", 393, 852, 3, uaIPhone),
	handheld("iphone_16_plus", 430, 932, 3, uaIPhone),
	handheld("iphone_16_pro", 402, 874, 3, uaIPhone),
	handheld("iphone_16_pro_max", 440, 956, 3, uaIPhone),

	// Android phones: panel pixels divided by the default display density.
	handheld("pixel_5", 393, 851, 2.75, androidPhoneUA("14", "Pixel 5")),             // 1080x2340, 440 dpi
	handheld("pixel_7", 412, 915, 2.625, androidPhoneUA("16", "Pixel 7")),            // 1080x2400, 420 dpi
	handheld("pixel_8", 412, 915, 2.625, androidPhoneUA("16", "Pixel 8")),            // 1080x2400, 420 dpi
	handheld("pixel_8_pro", 448, 998, 3, androidPhoneUA("16", "Pixel 8 Pro")),        // 1344x2992, 480 dpi
	handheld("pixel_9", 412, 924, 2.625, androidPhoneUA("16", "Pixel 9")),            // 1080x2424, 420 dpi
	handheld("pixel_9_pro", 427, 952, 3, androidPhoneUA("16", "Pixel 9 Pro")),        // 1280x2856, 480 dpi
	handheld("galaxy_s23", 360, 780, 3, androidPhoneUA("16", "SM-S911B")),            // 1080x2340, 480 dpi
	handheld("galaxy_s24", 360, 780, 3, androidPhoneUA("16", "SM-S921B")),            // 1080x2340, 480 dpi
	handheld("galaxy_s24_ultra", 384, 832, 2.8125, androidPhoneUA("16", "SM-S928B")), // FHD+ default 1080x2340, 450 dpi
	handheld("galaxy_a54", 412, 892, 2.625, androidPhoneUA("16", "SM-A546B")),        // 1080x2340, 420 dpi

	// iPads (portrait) send the Mac UA; see uaIPad.
	handheld("ipad", 820, 1180, 2, uaIPad),        // 10th/11th generation
	handheld("ipad_mini", 744, 1133, 2, uaIPad),   // 6th/7th generation
	handheld("ipad_air", 820, 1180, 2, uaIPad),    // 11-inch
	handheld("ipad_pro_11", 834, 1210, 2, uaIPad), // M4
	handheld("ipad_pro_13", 1032, 1376, 2, uaIPad),

	// Android tablets (portrait).
	handheld("galaxy_tab_s9", 800, 1280, 2, androidTabletUA("16", "SM-X710")),     // 1600x2560, 320 dpi
	handheld("pixel_tablet", 800, 1280, 2, androidTabletUA("16", "Pixel Tablet")), // 1600x2560, 320 dpi

	// Laptops: Apple's default "looks like" resolutions on Retina panels.
	computer("macbook_air_13", 1470, 956, 2), // M2 and later, 2560x1664 panel
	computer("macbook_pro_14", 1512, 982, 2),
	computer("macbook_pro_16", 1728, 1117, 2),
	computer("laptop_hd", 1366, 768, 1),
	computer("laptop_hidpi", 1440, 900, 2), // 2880x1800 panel at 200 %

	// Desktops.
	computer("desktop_hd", 1280, 720, 1),
	computer("desktop_full_hd", 1920, 1080, 1),
	computer("desktop_qhd", 2560, 1440, 1),
	computer("desktop_4k", 3840, 2160, 1),
	computer("imac_24", 2240, 1260, 2), // 4480x2520 panel at its default scaling
}

// s1Device is one row of ScreenshotOne's device list (s1devices.go).
type s1Device struct {
	name                     string
	width, height            int
	scale                    float64
	mobile, touch, landscape bool
	ua                       string
}

// allDevices are shotd's presets, then ScreenshotOne's that shotd has no preset of its own for.
var allDevices = func() []Device {
	all := slices.Clone(devices)
	for _, d := range s1Devices {
		if slices.ContainsFunc(devices, func(o Device) bool { return o.Name == d.name }) {
			continue
		}
		all = append(all, Device{Name: d.name, Width: d.width, Height: d.height, ScaleFactor: d.scale,
			Mobile: d.mobile, Touch: d.touch, UserAgent: d.ua})
	}
	return all
}()

// DeviceNames lists the viewport_device values in their documented order, ScreenshotOne's
// names after shotd's. Built in variable initializers, not init(), so that the option table
// can depend on it.
var DeviceNames = func() []string {
	names := make([]string, len(allDevices))
	for i, d := range allDevices {
		names[i] = d.Name
	}
	return names
}()

var devicesByName = func() map[string]Device {
	m := make(map[string]Device, len(allDevices))
	for _, d := range allDevices {
		m[d.Name] = d
	}
	return m
}()

// LookupDevice returns the preset named name (a viewport_device value, matched exactly).
func LookupDevice(name string) (Device, bool) {
	d, ok := devicesByName[name]
	return d, ok
}
