package media

import (
	"math"
	"testing"
	"time"
)

func TestScrollPosition(t *testing.T) {
	const total = 10 * time.Second
	tests := []struct {
		name     string
		t        time.Duration
		distance float64
		easing   string
		back     bool
		want     float64
	}{
		{name: "linear start", t: 0, distance: 1000, easing: "linear", want: 0},
		{name: "linear quarter", t: 2500 * time.Millisecond, distance: 1000, easing: "linear", want: 250},
		{name: "linear end", t: total, distance: 1000, easing: "linear", want: 1000},
		{name: "ease start", t: 0, distance: 1000, easing: "ease_in_out", want: 0},
		{name: "ease is slow at first", t: 1 * time.Second, distance: 1000, easing: "ease_in_out", want: 28},
		{name: "ease half", t: 5 * time.Second, distance: 1000, easing: "ease_in_out", want: 500},
		{name: "ease quarter", t: 2500 * time.Millisecond, distance: 1000, easing: "ease_in_out", want: 156.25},
		{name: "ease end", t: total, distance: 1000, easing: "ease_in_out", want: 1000},
		{name: "unknown easing eases", t: 2500 * time.Millisecond, distance: 1000, easing: "", want: 156.25},
		{name: "before start clamps", t: -time.Second, distance: 1000, easing: "linear", want: 0},
		{name: "after end clamps", t: 2 * total, distance: 1000, easing: "linear", want: 1000},
		{name: "back linear half way down", t: 3500 * time.Millisecond, distance: 1000, easing: "linear", back: true, want: 500},
		{name: "back at the bottom", t: 7 * time.Second, distance: 1000, easing: "linear", back: true, want: 1000},
		{name: "back half way up", t: 8500 * time.Millisecond, distance: 1000, easing: "linear", back: true, want: 500},
		{name: "back at the top again", t: total, distance: 1000, easing: "ease_in_out", back: true, want: 0},
		{name: "back eased at the bottom", t: 7 * time.Second, distance: 1000, easing: "ease_in_out", back: true, want: 1000},
		{name: "nothing to scroll", t: 5 * time.Second, distance: 0, easing: "linear", want: 0},
		{name: "negative distance", t: 5 * time.Second, distance: -10, easing: "linear", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ScrollPosition(tt.t, total, tt.distance, tt.easing, tt.back)
			if math.Abs(got-tt.want) > 0.01 {
				t.Errorf("ScrollPosition(%s) = %v, want %v", tt.t, got, tt.want)
			}
		})
	}
	t.Run("zero total", func(t *testing.T) {
		if got := ScrollPosition(time.Second, 0, 1000, "linear", false); got != 0 {
			t.Errorf("got %v, want 0", got)
		}
	})
	for _, easing := range []string{"linear", "ease_in_out"} {
		for _, back := range []bool{false, true} {
			t.Run("monotonic "+easing, func(t *testing.T) {
				prev := 0.0
				for ms := 0; ms <= 10000; ms += 10 {
					got := ScrollPosition(time.Duration(ms)*time.Millisecond, total, 1000, easing, back)
					down := !back || float64(ms) <= ScrollBackSplit*10000
					if (down && got < prev-1e-9) || (!down && got > prev+1e-9) || got < 0 || got > 1000 {
						t.Fatalf("at %d ms: %v after %v (back %v)", ms, got, prev, back)
					}
					prev = got
				}
			})
		}
	}
}

func TestDurationFor(t *testing.T) {
	tests := []struct {
		name                 string
		pageHeight, viewport int
		max                  time.Duration
		want                 time.Duration
	}{
		{name: "page fits the viewport", pageHeight: 500, viewport: 720, max: 30 * time.Second, want: 2 * time.Second},
		{name: "exactly one screen", pageHeight: 720, viewport: 720, max: 30 * time.Second, want: 2 * time.Second},
		{name: "three screens", pageHeight: 2160, viewport: 720, max: 30 * time.Second, want: 4 * time.Second},
		{name: "fractional screens", pageHeight: 1080, viewport: 720, max: 30 * time.Second, want: 2500 * time.Millisecond},
		{name: "rounded to the millisecond", pageHeight: 1000, viewport: 720, max: 30 * time.Second, want: 2389 * time.Millisecond},
		{name: "tall page capped", pageHeight: 50000, viewport: 720, max: 30 * time.Second, want: 30 * time.Second},
		{name: "lower cap", pageHeight: 7200, viewport: 720, max: 5 * time.Second, want: 5 * time.Second},
		{name: "cap below the base", pageHeight: 7200, viewport: 720, max: time.Second, want: time.Second},
		{name: "at least one second", pageHeight: 7200, viewport: 720, max: 100 * time.Millisecond, want: time.Second},
		{name: "no cap means 30 s", pageHeight: 100000, viewport: 720, max: 0, want: 30 * time.Second},
		{name: "zero viewport", pageHeight: 5000, viewport: 0, max: 30 * time.Second, want: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DurationFor(tt.pageHeight, tt.viewport, tt.max); got != tt.want {
				t.Errorf("DurationFor(%d, %d, %s) = %s, want %s", tt.pageHeight, tt.viewport, tt.max, got, tt.want)
			}
		})
	}
}
