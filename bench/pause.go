package main

import "time"

// frame is the period of Chrome's frame clock (60 Hz), which paints and captures wait for.
const frame = time.Second / 60

// pause is the i-th pause of a client pausing gap between requests: gap plus an offset that
// spreads the requests evenly over one frame (the fractional parts of i times the golden ratio),
// the same sequence on every side. A capture waits for Chrome's next frame, so a render takes one
// frame more or less depending on where in the frame it asks; with a pause of exactly 200 ms
// (12 frames) every request of a run arrives at nearly the same point of the frame, and a run's
// p50 is either the short or the long one (the small page: 50 or 65 ms on either side) by the
// luck of the run's first request. Clients of a lightly loaded service arrive at any point.
func pause(gap time.Duration, i int) time.Duration {
	if gap <= 0 {
		return 0
	}
	const golden = 0.6180339887498949
	f := float64(i) * golden
	f -= float64(int(f))
	return gap + time.Duration(f*float64(frame))
}
