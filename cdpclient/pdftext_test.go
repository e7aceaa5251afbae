package cdpclient

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// pdfPageTexts returns the text of each page of a PDF that Chrome (Skia) wrote, in page order:
// plain objects, Type0 fonts with a ToUnicode CMap, glyphs shown with <hex> Tj and TJ. It reads
// no more of PDF than that, which is all the tests need to see which words went on which page.
func pdfPageTexts(t *testing.T, data []byte) []string {
	t.Helper()
	objs := map[string][]byte{}
	for _, m := range pdfObjRe.FindAllSubmatch(data, -1) {
		objs[string(m[1])] = m[2]
	}
	stream := func(id string) []byte {
		m := pdfStream.FindSubmatch(objs[id])
		if m == nil {
			t.Fatalf("object %s has no stream", id)
		}
		zr, err := zlib.NewReader(bytes.NewReader(m[1]))
		if err != nil {
			return m[1]
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("inflate object %s: %v", id, err)
		}
		return b
	}
	var pagesID string
	for id, body := range objs {
		if regexp.MustCompile(`/Type\s*/Pages\b`).Match(body) {
			pagesID = id
		}
	}
	kids := pdfKidsRe.FindSubmatch(objs[pagesID])
	if kids == nil {
		t.Fatalf("no /Kids in the page tree")
	}
	cmaps := map[string]map[string]string{} // font object -> code (hex) -> text
	var texts []string
	for _, ref := range pdfRefRe.FindAllSubmatch(kids[1], -1) {
		pg := objs[string(ref[1])]
		fonts := map[string]string{} // resource name -> font object
		if fm := pdfFontsRe.FindSubmatch(pg); fm != nil {
			for _, f := range pdfFontRefRe.FindAllSubmatch(fm[1], -1) {
				fonts[string(f[1])] = string(f[2])
			}
		}
		contents := pdfContentsRe.FindSubmatch(pg)
		if contents == nil {
			texts = append(texts, "")
			continue
		}
		var text strings.Builder
		var cmap map[string]string
		for _, op := range pdfTextOpRe.FindAllSubmatch(stream(string(contents[1])), -1) {
			if len(op[1]) > 0 { // a font selection
				fid := fonts[string(op[1])]
				if cmaps[fid] == nil {
					cmaps[fid] = map[string]string{}
					if tu := pdfToUnicodeRe.FindSubmatch(objs[fid]); tu != nil {
						cmaps[fid] = parseToUnicode(stream(string(tu[1])))
					}
				}
				cmap = cmaps[fid]
				continue
			}
			for _, h := range pdfHexRe.FindAllSubmatch(op[2], -1) {
				code := strings.ToUpper(string(h[1]))
				for i := 0; i+4 <= len(code); i += 4 {
					text.WriteString(cmap[code[i:i+4]])
				}
			}
		}
		texts = append(texts, text.String())
	}
	return texts
}

var (
	pdfObjRe       = regexp.MustCompile(`(?s)(\d+) 0 obj(.*?)endobj`)
	pdfKidsRe      = regexp.MustCompile(`/Kids\s*\[([^\]]*)\]`)
	pdfRefRe       = regexp.MustCompile(`(\d+) 0 R`)
	pdfFontsRe     = regexp.MustCompile(`(?s)/Font\s*<<(.*?)>>`)
	pdfFontRefRe   = regexp.MustCompile(`/(\w+)\s+(\d+) 0 R`)
	pdfContentsRe  = regexp.MustCompile(`/Contents\s+(\d+) 0 R`)
	pdfToUnicodeRe = regexp.MustCompile(`/ToUnicode\s+(\d+) 0 R`)
	// A font selection (/F4 16 Tf), or the operand of Tj or TJ.
	pdfTextOpRe = regexp.MustCompile(`(?s)/(\w+)\s+[\d.]+\s+Tf|(<[0-9A-Fa-f]*>|\[[^\]]*\])\s*T[jJ]`)
	pdfHexRe    = regexp.MustCompile(`<([0-9A-Fa-f]*)>`)
	pdfBfCharRe = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
	pdfBfRngRe  = regexp.MustCompile(`<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>`)
	pdfSectRe   = regexp.MustCompile(`(?s)beginbf(char|range)(.*?)endbf(char|range)`)
)

// parseToUnicode reads the bfchar and bfrange sections of a ToUnicode CMap: glyph code (four
// upper-case hex digits) to text.
func parseToUnicode(cm []byte) map[string]string {
	out := map[string]string{}
	utf := func(h string) string {
		b, _ := hex.DecodeString(h)
		var u []uint16
		for i := 0; i+1 < len(b); i += 2 {
			u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
		}
		return string(utf16.Decode(u))
	}
	for _, sec := range pdfSectRe.FindAllSubmatch(cm, -1) {
		if string(sec[1]) == "char" {
			for _, m := range pdfBfCharRe.FindAllSubmatch(sec[2], -1) {
				out[strings.ToUpper(string(m[1]))] = utf(string(m[2]))
			}
			continue
		}
		for _, m := range pdfBfRngRe.FindAllSubmatch(sec[2], -1) {
			lo, _ := strconv.ParseUint(string(m[1]), 16, 32)
			hi, _ := strconv.ParseUint(string(m[2]), 16, 32)
			dst, _ := strconv.ParseUint(string(m[3]), 16, 32)
			for c := lo; c <= hi && c-lo < 1<<16; c++ {
				out[strings.ToUpper(strconv.FormatUint(c|1<<16, 16)[1:])] = string(rune(dst + c - lo))
			}
		}
	}
	return out
}
