package shotd

import "time"

// The time a render may take, fixed before it starts, so that no render runs unbounded and the
// callers (the sync request, the job) wait exactly as long as the browser may work.
//
// timeout bounds the loading of the page: navigation, wait_until, wait_for_selector, page
// actions. delay is extra, after the page is ready. The capture (or, for a video, measuring the
// page and starting the screencast) gets RenderSlack. A video then records for its length (or
// video_max_duration when the length follows the page) with VideoRecordAllowance.
const (
	RenderSlack = 10 * time.Second

	// StillEncodeAllowance is added for a still image that an encoder process writes (avif, jp2,
	// heif, gif_still): x265 takes about 5 s of CPU for a 1100x17000 page, more on a busy host.
	StillEncodeAllowance = 20 * time.Second

	// Defaults for Options that did not come through the parser.
	DefaultTimeout          = 30 * time.Second
	DefaultVideoMaxDuration = 30 * time.Second
)

// VideoRecordAllowance is the recording's own bound for a video of length d: d of real time, as
// long again for an encoder slower than real time, and 30 s for ffmpeg to start and finish.
func VideoRecordAllowance(d time.Duration) time.Duration { return 2*d + 30*time.Second }

// LoadTimeout is the timeout option, or its default.
func (o *Options) LoadTimeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// VideoLength is the longest recording o allows: video_duration, else video_max_duration.
func (o *Options) VideoLength() time.Duration {
	switch {
	case o.VideoDuration > 0:
		return o.VideoDuration
	case o.VideoMaxDuration > 0:
		return o.VideoMaxDuration
	default:
		return DefaultVideoMaxDuration
	}
}

// RenderBudget is the longest the browser may spend on a render of o; see above.
func (o *Options) RenderBudget() time.Duration {
	b := o.LoadTimeout() + max(o.Delay, 0) + RenderSlack
	switch o.Format {
	case FormatAVIF, FormatJP2, FormatHEIF, FormatGIFStill:
		b += StillEncodeAllowance
	}
	if IsVideo(o.Format) {
		b += VideoRecordAllowance(o.VideoLength())
	}
	return b
}
