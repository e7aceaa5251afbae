package cdpclient

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/io"
	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/rpcc"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// paperSizes are the pdf_paper_format sizes in inches, portrait (width, height). The ISO A
// sizes are whole millimetres.
var paperSizes = map[string][2]float64{
	"a0":      {841 / 25.4, 1189 / 25.4},
	"a1":      {594 / 25.4, 841 / 25.4},
	"a2":      {420 / 25.4, 594 / 25.4},
	"a3":      {297 / 25.4, 420 / 25.4},
	"a4":      {210 / 25.4, 297 / 25.4},
	"a5":      {148 / 25.4, 210 / 25.4},
	"a6":      {105 / 25.4, 148 / 25.4},
	"letter":  {8.5, 11},
	"legal":   {8.5, 14},
	"tabloid": {11, 17},
	"ledger":  {17, 11}, // tabloid turned sideways, by definition
}

// cssPxPerInch: Chrome prints 96 CSS pixels to the inch at scale 1.
const cssPxPerInch = 96

// pdfReadChunk is the size of one IO.read of the PDF stream.
const pdfReadChunk = 1 << 20

// lengthInches converts a validated pdf margin ("0", "12px", "1.5in", "2cm", "10mm") to inches,
// by option's rule, the one that validated it.
func lengthInches(v string) (float64, error) {
	in, ok := option.LengthInches(v)
	if !ok {
		return 0, fmt.Errorf("%q is not a length of px, in, cm or mm", v)
	}
	return in, nil
}

// margins returns top, right, bottom, left in inches: each side's own option, else pdf_margin,
// else none.
func margins(o *shotd.Options) ([4]float64, error) {
	var m [4]float64
	sides := []struct{ name, v string }{
		{"pdf_margin_top", o.PDFMarginTop}, {"pdf_margin_right", o.PDFMarginRight},
		{"pdf_margin_bottom", o.PDFMarginBottom}, {"pdf_margin_left", o.PDFMarginLeft},
	}
	for i, s := range sides {
		name, v := s.name, s.v
		if v == "" {
			name, v = "pdf_margin", o.PDFMargin
		}
		if v == "" {
			continue
		}
		in, err := lengthInches(v)
		if err != nil {
			return m, invalidOption(name, err.Error())
		}
		m[i] = in
	}
	return m, nil
}

// pdfArgs builds Page.printToPDF for the options; it also returns the paper size (width,
// height, turned for pdf_landscape) and the margins (top, right, bottom, left), in inches.
func (r *render) pdfArgs() (*page.PrintToPDFArgs, [2]float64, [4]float64, error) {
	o := r.o
	name := o.PDFPaperFormat
	if name == "" {
		name = "a4"
	}
	size, ok := paperSizes[name]
	if !ok {
		return nil, size, [4]float64{}, invalidOption("pdf_paper_format", fmt.Sprintf("unknown paper format %q", name))
	}
	if o.PDFPaperWidth != "" && o.PDFPaperHeight != "" {
		// pdf_paper_width and _height, validated by the parser, instead of a format.
		w, okW := option.LengthInches(o.PDFPaperWidth)
		h, okH := option.LengthInches(o.PDFPaperHeight)
		if !okW || !okH {
			return nil, size, [4]float64{}, invalidOption("pdf_paper_width", "not a length with a unit")
		}
		size = [2]float64{w, h}
	}
	m, err := margins(o)
	if err != nil {
		return nil, size, m, err
	}
	headerFooter := o.PDFHeader != "" || o.PDFFooter != ""
	if headerFooter {
		// Chrome draws the header and footer inside the margins: without one there is no
		// room for them. A side whose margin was not given gets headerMargin.
		if o.PDFHeader != "" && o.PDFMarginTop == "" && o.PDFMargin == "" {
			m[0] = headerMargin
		}
		if o.PDFFooter != "" && o.PDFMarginBottom == "" && o.PDFMargin == "" {
			m[2] = headerMargin
		}
	}
	if o.PDFLandscape {
		// Wider than tall. Chrome's own landscape flag swaps the sides, which would turn a
		// ledger (landscape by definition) upright.
		size = [2]float64{max(size[0], size[1]), min(size[0], size[1])}
	}
	// Against the paper as it is printed: turned, left and right margins share the long side.
	if size[0]-m[1]-m[3] <= 0.1 || size[1]-m[0]-m[2] <= 0.1 {
		return nil, size, m, invalidOption("pdf_margin", "the margins leave no room on the paper")
	}
	args := page.NewPrintToPDFArgs().
		SetPaperWidth(size[0]).SetPaperHeight(size[1]).
		SetMarginTop(m[0]).SetMarginRight(m[1]).SetMarginBottom(m[2]).SetMarginLeft(m[3]).
		SetPrintBackground(o.PDFPrintBackground).
		SetTransferMode("ReturnAsStream") // no base64 blob of the whole file in one message
	if headerFooter {
		// An empty template, not Chrome's default (date and title, url and page numbers), for
		// the side that was not asked for.
		args.SetDisplayHeaderFooter(true).
			SetHeaderTemplate(cmp.Or(o.PDFHeader, emptyTemplate)).
			SetFooterTemplate(cmp.Or(o.PDFFooter, emptyTemplate))
	}
	if o.PDFPageRanges != "" {
		args.SetPageRanges(o.PDFPageRanges)
	}
	if o.PDFScale > 0 && o.PDFScale != 1 {
		args.SetScale(o.PDFScale)
	}
	if o.PDFPreferCSSPageSize {
		args.SetPreferCSSPageSize(true)
	}
	if o.PDFUntagged && !o.PDFOutline {
		// Chrome tags by default; it builds the outline from the tagged structure.
		args.SetGenerateTaggedPDF(false)
	}
	if o.PDFOutline {
		args.SetGenerateDocumentOutline(true)
	}
	return args, size, m, nil
}

// printPDF prints the page with Page.printToPDF and reads the result from its stream.
func (r *render) printPDF(ctx context.Context) error {
	args, size, m, err := r.pdfArgs()
	if err != nil {
		return err
	}
	if r.o.PDFFitOnePage {
		// One page as tall as the content: lay the page out at the printed width, measure it,
		// and make the paper that tall. The orientation is in the size already.
		w := size[0]
		printable := int(math.Floor((w - m[1] - m[3]) * cssPxPerInch))
		if err := r.t.setMetrics(ctx, metrics{width: printable, height: r.height, scale: 1}); err != nil {
			return err
		}
		var h float64
		if err := r.eval(ctx, measureHeightJS, &h); err != nil {
			return fmt.Errorf("measure the page: %w", err)
		}
		if !(h >= 1) || math.IsInf(h, 0) {
			h = float64(r.height)
		}
		// A pixel to spare against rounding; pageRanges 1 drops a spill-over page should one
		// still come.
		args.SetPaperWidth(w).
			SetPaperHeight((math.Ceil(h)+1)/cssPxPerInch + m[0] + m[2]).
			SetPageRanges("1")
	}
	rep, err := r.t.c.Page.PrintToPDF(ctx, args)
	if err != nil {
		if isResponseError(err) && ctx.Err() == nil && r.o.PDFPageRanges != "" && isPageRangeError(err) {
			return invalidOption("pdf_page_ranges", fmt.Sprintf("%q selects no page of the document, or a range past its end", r.o.PDFPageRanges))
		}
		if isResponseError(err) && ctx.Err() == nil && (r.o.PDFHeader != "" || r.o.PDFFooter != "") {
			// A template that loads something (a stylesheet link) fails the whole print
			// (Chromium 156): the request's to fix, not the service's.
			field := "pdf_header"
			if r.o.PDFHeader == "" {
				field = "pdf_footer"
			}
			e := invalidOption(field, "the browser could not print the page with this header or footer; a template may load nothing (no links to style sheets: use inline styles, and data: URLs for images)")
			e.Cause = err
			return e
		}
		if isResponseError(err) && ctx.Err() == nil {
			return shotd.Wrap(shotd.CodeInternalError, err, "the browser could not print the page")
		}
		return err
	}
	if rep.Stream == nil {
		r.data = rep.Data
		return nil
	}
	r.data, err = ReadStream(ctx, r.t.c, *rep.Stream, r.p.cfg.MaxOutputBytes)
	return err
}

// headerMargin is the top or bottom margin, in inches, that pdf_header or pdf_footer gets when
// the request gave none: room for a line of Chrome's small header text.
const headerMargin = 0.5

// emptyTemplate is the header or footer template of the side not asked for.
const emptyTemplate = "<span></span>"

// isPageRangeError reports Chrome's refusal of pageRanges ("Page range exceeds page count",
// "Page range is invalid (start > end)", Chromium 156).
func isPageRangeError(err error) bool {
	var re *rpcc.ResponseError
	return errors.As(err, &re) && strings.Contains(strings.ToLower(re.Message), "page range")
}

// ReadStream reads a Chrome IO stream to its end and releases it, whatever happens. Past max
// bytes (limits.max_output_bytes; 0: none) it stops with content_too_large, so a page that
// prints into a huge file costs no more memory than the limit.
func ReadStream(ctx context.Context, c *cdp.Client, h io.StreamHandle, max int64) ([]byte, error) {
	defer func() {
		// On a deadline of its own: the caller's may be what ended the read.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = c.IO.Close(cctx, io.NewCloseArgs(h))
	}()
	var out []byte
	for {
		chunk, err := c.IO.Read(ctx, io.NewReadArgs(h).SetSize(pdfReadChunk))
		if err != nil {
			return nil, err
		}
		if chunk.Base64Encoded != nil && *chunk.Base64Encoded {
			b, err := base64.StdEncoding.DecodeString(chunk.Data)
			if err != nil {
				return nil, fmt.Errorf("read stream: %w", err)
			}
			out = append(out, b...)
		} else {
			out = append(out, chunk.Data...)
		}
		if max > 0 && int64(len(out)) > max {
			return nil, shotd.Errorf(shotd.CodeContentTooLarge, "the file is larger than the server's limit of %d bytes", max)
		}
		if chunk.EOF {
			return out, nil
		}
	}
}
