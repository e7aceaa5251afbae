package option

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
)

// ImageFits and ImagePositions are the values of image_fit and image_position.
var (
	ImageFits      = []string{shotd.FitFill, shotd.FitCover, shotd.FitContain, shotd.FitInside, shotd.FitOutside}
	ImagePositions = []string{"center", "top", "bottom", "left", "right", "top_left", "top_right", "bottom_left", "bottom_right"}
)

// Bounds of the render options of this file.
const (
	maxTemplateBytes   = 32 << 10 // pdf_header, pdf_footer
	maxExpressionBytes = 16 << 10 // wait_for_expression
	maxPageRanges      = 100      // items of pdf_page_ranges
	maxPageNumber      = 100000
	minPaperInches     = 0.5 // pdf_paper_width and _height
	maxPaperInches     = 200 // PDF's own largest page (14,400 pt)
)

// parseColour reads image_background: rrggbb or rrggbbaa in hex, # optional, or transparent.
func parseColour(v string) ([4]uint8, bool) {
	if strings.EqualFold(v, "transparent") {
		return [4]uint8{}, true
	}
	h := strings.TrimPrefix(v, "#")
	if len(h) != 6 && len(h) != 8 {
		return [4]uint8{}, false
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return [4]uint8{}, false
	}
	c := [4]uint8{b[0], b[1], b[2], 255}
	if len(b) == 4 {
		c[3] = b[3]
	}
	return c, true
}

func checkColour(v string) string {
	if _, ok := parseColour(v); !ok {
		return fmt.Sprintf("%q must be a colour: rrggbb or rrggbbaa in hex (# optional), or transparent", clip(v))
	}
	return ""
}

func checkExpression(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "must be a non-empty JavaScript expression"
	case len(v) > maxExpressionBytes:
		return fmt.Sprintf("is longer than %d bytes", maxExpressionBytes)
	}
	return ""
}

func checkTemplate(v string) string {
	if len(v) > maxTemplateBytes {
		return fmt.Sprintf("is longer than %d bytes", maxTemplateBytes)
	}
	// A template that loads something fails Chrome's whole print, and a linked style sheet
	// sometimes crashes the tab's renderer with it: refused here, before any Chrome work.
	lower := strings.ToLower(v)
	for _, tag := range templateLoaders {
		if strings.Contains(lower, tag) {
			return fmt.Sprintf("may load nothing (found %q): use inline styles, and data: URLs for images", tag)
		}
	}
	return ""
}

// templateLoaders are the constructs of a header or footer template that make Chrome fetch.
var templateLoaders = []string{"<link", "<script", "<iframe", "<object", "<embed", "@import"}

var pageRangeRe = regexp.MustCompile(`^\s*(\d+)\s*(-\s*(\d*)\s*)?$`)

// checkPageRanges checks pdf_page_ranges as Chrome's printToPDF reads it: comma-separated
// one-based pages and ranges, N-M with N <= M, or N- to the end. A range past the document's
// last page is known only once it is printed (cdpclient).
func checkPageRanges(v string) string {
	items := strings.Split(v, ",")
	if len(items) > maxPageRanges {
		return fmt.Sprintf("at most %d ranges", maxPageRanges)
	}
	for _, it := range items {
		m := pageRangeRe.FindStringSubmatch(it)
		if m == nil {
			return fmt.Sprintf("%q must be pages and ranges such as 1-3,5,8- (one-based)", clip(v))
		}
		from, err := strconv.Atoi(m[1])
		if err != nil || from < 1 || from > maxPageNumber {
			return fmt.Sprintf("page %s is not between 1 and %d", clip(m[1]), maxPageNumber)
		}
		if m[3] == "" {
			continue
		}
		to, err := strconv.Atoi(m[3])
		if err != nil || to > maxPageNumber {
			return fmt.Sprintf("page %s is not between 1 and %d", clip(m[3]), maxPageNumber)
		}
		if to < from {
			return fmt.Sprintf("range %s-%d ends before it starts", m[1], to)
		}
	}
	return ""
}

// LengthInches converts a length that passed checkLength ("0", "12px", "1.5in", "2cm",
// "10mm") to inches.
func LengthInches(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "0" {
		return 0, true
	}
	if !lengthRe.MatchString(v) {
		return 0, false
	}
	n, err := strconv.ParseFloat(v[:len(v)-2], 64)
	if err != nil {
		return 0, false
	}
	switch v[len(v)-2:] {
	case "px":
		return n / 96, true // Chrome prints 96 CSS pixels to the inch
	case "in":
		return n, true
	case "cm":
		return n / 2.54, true
	case "mm":
		return n / 25.4, true
	}
	return 0, false
}

func checkPaperLength(v string) string {
	if msg := checkLength(v); msg != "" {
		return msg
	}
	in, _ := LengthInches(v)
	if in < minPaperInches || in > maxPaperInches {
		return fmt.Sprintf("%q must be between %sin and %din", clip(v), fmtNum(minPaperInches), maxPaperInches)
	}
	return ""
}

// PaperOptions name the paper: a format, or a width and height. A bulk item that gives one takes
// none of them from the defaults.
var PaperOptions = []string{"pdf_paper_format", "pdf_paper_width", "pdf_paper_height"}

// jsOptions need the page's JavaScript: each is refused beside disable_javascript.
// (block_cookie_banners: its reject click is autoconsent's script in the page.)
var jsOptions = []string{"scripts", "click", "wait_for_expression", "block_cookie_banners"}

// checkRenderOptions validates the rules between the options of renderopts.go (from crossCheck).
func checkRenderOptions(o *shotd.Options, given map[string]bool, fail func(string, string, ...any)) {
	if given["pdf_paper_width"] != given["pdf_paper_height"] {
		fail("pdf_paper_width", "pdf_paper_width and pdf_paper_height go together")
	}
	if given["pdf_paper_width"] && given["pdf_paper_format"] {
		fail("pdf_paper_format", "conflicts with pdf_paper_width and pdf_paper_height: give a format or a size")
	}
	if o.PDFFitOnePage {
		for _, n := range []string{"pdf_page_ranges", "pdf_prefer_css_page_size", "pdf_scale"} {
			if given[n] {
				fail(n, "conflicts with pdf_fit_one_page, which makes one page of its own size")
			}
		}
	}
	if o.PDFUntagged && o.PDFOutline {
		fail("pdf_outline", "needs a tagged PDF: conflicts with pdf_tagged=false")
	}
	if o.DisableJavaScript {
		for _, n := range jsOptions {
			if given[n] {
				fail(n, "needs JavaScript, which disable_javascript turns off")
			}
		}
	}
	resize := o.ImageWidth > 0 && o.ImageHeight > 0
	if given["image_fit"] && !resize {
		fail("image_fit", "needs image_width and image_height")
	}
	if given["image_position"] && o.ImageFit != shotd.FitCover && o.ImageFit != shotd.FitContain {
		fail("image_position", "needs image_fit=cover or image_fit=contain")
	}
	if given["image_background"] && o.ImageFit != shotd.FitContain {
		fail("image_background", "needs image_fit=contain")
	}
	if given["image_background"] && o.Format == shotd.FormatJPEG && o.ImageBackground[3] != 255 {
		fail("image_background", "jpeg has no transparency: give an opaque colour")
	}
	if shotd.IsVideo(o.Format) || o.Format == shotd.FormatPDF || shotd.IsDocument(o.Format) {
		for _, n := range []string{"image_fit", "image_position", "image_background"} {
			if given[n] {
				fail(n, "applies to images only")
			}
		}
	}
}
