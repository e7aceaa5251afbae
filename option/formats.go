package option

import "github.com/shotd/shotd"

// S1TakeFormats maps each value of ScreenshotOne's format option on their /take (their
// validation schema's list) to shotd's format. Their gif is a still image there, shotd's
// gif_still; on /animate and on shotd's own paths gif stays the scrolling video.
var S1TakeFormats = map[string]string{
	"png":      shotd.FormatPNG,
	"jpg":      shotd.FormatJPEG,
	"jpeg":     shotd.FormatJPEG,
	"webp":     shotd.FormatWebP,
	"gif":      shotd.FormatGIFStill,
	"jp2":      shotd.FormatJP2,
	"tiff":     shotd.FormatTIFF,
	"avif":     shotd.FormatAVIF,
	"heif":     shotd.FormatHEIF,
	"pdf":      shotd.FormatPDF,
	"html":     shotd.FormatHTML,
	"markdown": shotd.FormatMarkdown,
}
