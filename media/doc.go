// Package media owns video encoding for the recording formats (mp4, webm, gif, mov, avi): an Encoder
// turns the frames of Page.screencastFrame into one file through a supervised ffmpeg subprocess,
// Probe reads a file back through ffprobe, and ScrollPosition and DurationFor give the scroll
// motion and the length of a scrolling recording. FindFFmpeg and UseFFmpeg pick the binary.
//
// It also writes the still images Chrome does not encode (still.go): EncodeStill turns a PNG
// capture into avif, jp2 or gif_still through ffmpeg, heif through heif-enc, tiff in Go;
// StillAvailable says whether this server can write a format at all.
//
// # Constant frame rate
//
// Chrome sends a screencast frame only when the page changes, at irregular times. The Encoder
// resamples them in Go to the output rate, so ffmpeg sees a plain image2pipe stream at that rate
// and needs no timestamp logic: output frame i (at time i/FPS) shows the latest frame added with
// Timestamp <= i/FPS, the first frame fills the start, and the last frame holds until Duration.
// The file has exactly round(Duration*FPS) frames.
//
// # Formats
//
//   - mp4: H.264 (libx264, veryfast, CRF 23), yuv420p BT.709, +faststart (which needs a seekable
//     output, so every format is written to a file in a private temp dir);
//   - mov: as mp4, in a QuickTime container (ScreenshotOne's animate offers it);
//   - avi: MPEG-4 Part 2 (ffmpeg's mpeg4, q 4, tagged XVID), what AVI players decode;
//   - webm: VP9 (libvpx-vp9, realtime deadline, cpu-used 8, row-mt, constant quality CRF 35);
//   - gif: at most 15 fps, one filter graph that splits the stream into palettegen and
//     paletteuse. A single palette can only be built at the end of the input, so ffmpeg holds
//     every frame in memory (about 4 bytes per pixel per frame, 3.7 MB at 1280x720) until then;
//     when that estimate exceeds 256 MiB the graph builds one palette per frame instead
//     (stats_mode=single, new=1), which streams in constant memory at the cost of a larger file.
//
// Frames whose size differs from the VideoSpec size are fitted into it (scaled, keeping the
// aspect ratio, and padded with black); one extra pixel column or row, as when mp4 and webm round
// an odd size down to even, is cropped instead of rescaling the whole frame.
//
// # Supervision
//
// ffmpeg and ffprobe run as internal/proc.Child: in their own process group with Pdeathsig SIGKILL.
// The group is killed when the context ends (a render timeout), on Close, and after the leader
// exits (before it is reaped, so the group id cannot have been reused). The last 4 KiB of stderr
// are kept as the cause of a failure. Temp files live in one os.MkdirTemp directory that Finish and
// Close remove.
//
// Errors are *shotd.Error values: timeout when the context's deadline ended the encoding,
// content_too_large when the file exceeds VideoSpec.MaxBytes, internal_error for everything else
// (the ffmpeg exit status and stderr tail are in the cause, for the log only).
package media
