package main

import (
	"testing"
	"time"
)

// TestPauseSpreadsOverAFrame: the offsets of any 30 consecutive pauses fall in every sixth of a
// frame, stay within one frame of the gap, and no gap means no pause.
func TestPauseSpreadsOverAFrame(t *testing.T) {
	const gap = 200 * time.Millisecond
	for _, start := range []int{0, 7, 1000} {
		var sixths [6]int
		for i := start; i < start+30; i++ {
			off := pause(gap, i) - gap
			if off < 0 || off >= frame {
				t.Fatalf("pause %d: offset %v outside [0, %v)", i, off, frame)
			}
			sixths[off*6/frame]++
		}
		for k, c := range sixths {
			if c == 0 {
				t.Errorf("pauses %d..%d: none in sixth %d of the frame (%v)", start, start+29, k, sixths)
			}
		}
	}
	if p := pause(0, 5); p != 0 {
		t.Errorf("pause without a gap = %v", p)
	}
}
