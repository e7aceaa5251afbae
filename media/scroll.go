package media

import (
	"math"
	"time"
)

// Scroll easings of video_scroll_easing.
const (
	EasingLinear    = "linear"
	EasingEaseInOut = "ease_in_out"
)

// ScrollBackSplit is the share of the video that scrolls down when video_scroll_back is set; the
// rest scrolls back up. The way down gets the larger share because that is where the page is
// read; the way up is a quick return.
const ScrollBackSplit = 0.7

// ScrollPosition is the scroll offset, in CSS pixels from the top, at time t of a recording of
// length total that scrolls distance pixels: over the whole length, or down over the first
// ScrollBackSplit of it and back up over the rest when back is set. easing is "linear" or
// "ease_in_out" (smoothstep 3p²-2p³: it starts and stops at zero speed); anything else eases,
// as the API default does. t outside [0, total] is clamped; a zero total or distance gives 0.
func ScrollPosition(t, total time.Duration, distance float64, easing string, back bool) float64 {
	if total <= 0 || distance <= 0 {
		return 0
	}
	p := math.Min(1, math.Max(0, float64(t)/float64(total)))
	if back {
		if p <= ScrollBackSplit {
			return distance * ease(p/ScrollBackSplit, easing)
		}
		return distance * (1 - ease((p-ScrollBackSplit)/(1-ScrollBackSplit), easing))
	}
	return distance * ease(p, easing)
}

func ease(p float64, easing string) float64 {
	p = math.Min(1, math.Max(0, p)) // the back split's division can land a hair outside
	if easing == EasingLinear {
		return p
	}
	return p * p * (3 - 2*p)
}

// Bounds of DurationFor.
const (
	scrollBase      = 2 * time.Second // the first and last screen stay long enough to be seen
	scrollPerScreen = 1 * time.Second // per viewport height scrolled
	minDuration     = 1 * time.Second // the smallest video_duration
	apiMaxDuration  = 30 * time.Second
)

// DurationFor is the video length when video_duration is unset: 2 s plus 1 s per viewport height
// to scroll (pageHeight-viewportHeight), so the scroll speed is one screen a second at most,
// capped at maxDuration (where a taller page scrolls faster) and at least 1 s. A maxDuration of
// zero or less means the API's 30 s. The result is rounded to whole milliseconds.
func DurationFor(pageHeight, viewportHeight int, maxDuration time.Duration) time.Duration {
	if maxDuration <= 0 {
		maxDuration = apiMaxDuration
	}
	d := scrollBase
	if viewportHeight > 0 && pageHeight > viewportHeight {
		screens := float64(pageHeight-viewportHeight) / float64(viewportHeight)
		d += time.Duration(screens * float64(scrollPerScreen))
	}
	d = min(d, maxDuration)
	return max(d, minDuration).Round(time.Millisecond)
}
