package markdown

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/shotd/shotd"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Goldmark and chroma take time that grows faster than the input in places: 32 KB of nested ">"
// took 0.6 s, 2,000 nested list levels 20 s, a table of 4,000 columns 19 s, an 8 KB highlighted
// block seconds, and they cannot be stopped. So a source is first checked in linear time against
// limits that no real document reaches, then converted in a goroutine that the caller waits for
// only until its deadline, among a bounded number of such goroutines.
const (
	// MaxNesting is the most container markers (">" and list markers) at the start of a line.
	MaxNesting = 32
	// MaxIndent is the widest indentation of a line outside fenced code, in columns (a tab
	// counts 4): nested lists beyond it are a list of hundreds of levels.
	MaxIndent = 256
	// MaxTableColumns is the most columns of a table: each row is padded to them.
	MaxTableColumns = 128
	// MaxHighlightedBlock and MaxHighlighted bound the code chroma highlights, per block and in
	// all; past them a block is shown plain. Many of its lexers are quadratic on some input: 2 KB
	// of "<<" as CFEngine3 takes 0.7 s, 8 KB seconds.
	MaxHighlightedBlock = 1 << 10
	MaxHighlighted      = 4 << 10
	// ConvertTimeout bounds one conversion when the caller gives no deadline.
	ConvertTimeout = 5 * time.Second
)

// Check returns a content_too_large *shotd.Error naming the first limit src passes, or nil. It
// runs in time linear in len(src).
func Check(src string) error {
	var fence string // the open fence, "" outside fenced code
	for n, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimLeft(line, " \t>")
		if fence != "" {
			if t := strings.TrimSpace(trimmed); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if fence = openFence(trimmed); fence != "" {
			continue
		}
		if w := indentWidth(line); w > MaxIndent {
			return tooComplex(n, fmt.Sprintf("indented %d columns; at most %d", w, MaxIndent))
		}
		if d := nesting(line); d > MaxNesting {
			return tooComplex(n, fmt.Sprintf("nested %d levels deep; at most %d", d, MaxNesting))
		}
		if c := tableColumns(trimmed); c > MaxTableColumns {
			return tooComplex(n, fmt.Sprintf("a table of %d columns; at most %d", c, MaxTableColumns))
		}
	}
	return nil
}

func tooComplex(line int, what string) error {
	msg := fmt.Sprintf("line %d: %s", line+1, what)
	return &shotd.Error{Code: shotd.CodeContentTooLarge, Message: "the markdown is too complex to convert: " + msg,
		Fields: []shotd.FieldError{{Field: "markdown", Message: msg}}}
}

// openFence returns the fence a line opens, "" for none.
func openFence(s string) string {
	s = strings.TrimLeft(s, " -*+0123456789.)")
	for _, c := range []string{"`", "~"} {
		if n := len(s) - len(strings.TrimLeft(s, c)); n >= 3 {
			return s[:n]
		}
	}
	return ""
}

// plainLargeCode is an AST transformer that drops the language of fenced code blocks past
// MaxHighlightedBlock, and of all blocks once MaxHighlighted bytes were highlighted, so that
// chroma shows them plain.
type plainLargeCode struct{}

func (plainLargeCode) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	total := 0
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		b, ok := n.(*ast.FencedCodeBlock)
		if !ok || !entering || b.Info == nil {
			return ast.WalkContinue, nil
		}
		size := 0
		for i := 0; i < b.Lines().Len(); i++ {
			seg := b.Lines().At(i)
			size += seg.Len()
		}
		if size > MaxHighlightedBlock || total+size > MaxHighlighted {
			b.Info = nil
			return ast.WalkContinue, nil
		}
		total += size
		return ast.WalkContinue, nil
	})
}

func indentWidth(s string) int {
	w := 0
	for _, c := range s {
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w
		}
	}
	return w
}

// nesting counts the container markers a line starts with: ">" and list markers ("-", "*", "+",
// or digits then "." or ")", each followed by a space).
func nesting(s string) int {
	d := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '>':
			d++
			i++
		case (c == '-' || c == '*' || c == '+') && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t'):
			d++
			i += 2
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && j-i < 10 && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j+1 < len(s) && (s[j] == '.' || s[j] == ')') && (s[j+1] == ' ' || s[j+1] == '\t') {
				d++
				i = j + 2
				continue
			}
			return d
		default:
			return d
		}
	}
	return d
}

// tableColumns is the column count of a line that could be a table's delimiter row (only "|",
// "-", ":" and spaces, with a "-"), else 0.
func tableColumns(s string) int {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "-") || strings.Trim(s, "|-: \t") != "" {
		return 0
	}
	return len(strings.Split(strings.Trim(s, "|"), "|"))
}

// slots bounds the conversions running at once, those whose caller gave up included: a
// conversion that outlives its deadline keeps its slot until it ends.
var slots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// converted keeps recent conversions, so that the renderer's ToHTML of a source httpd already
// converted (to refuse it before it takes a browser slot) costs nothing.
var converted = struct {
	sync.Mutex
	pages map[[32]byte]string
	order [][32]byte
	bytes int
}{pages: map[[32]byte]string{}}

const cacheBytes = 32 << 20

func cacheKey(src string, dark bool) [32]byte {
	h := sha256.New()
	if dark {
		h.Write([]byte{1})
	} else {
		h.Write([]byte{0})
	}
	h.Write([]byte(src))
	return [32]byte(h.Sum(nil))
}

func cached(k [32]byte) (string, bool) {
	converted.Lock()
	defer converted.Unlock()
	page, ok := converted.pages[k]
	return page, ok
}

func remember(k [32]byte, page string) {
	converted.Lock()
	defer converted.Unlock()
	if _, ok := converted.pages[k]; ok || len(page) > cacheBytes/4 {
		return
	}
	converted.pages[k] = page
	converted.order = append(converted.order, k)
	converted.bytes += len(page)
	for converted.bytes > cacheBytes && len(converted.order) > 0 {
		old := converted.order[0]
		converted.order = converted.order[1:]
		converted.bytes -= len(converted.pages[old])
		delete(converted.pages, old)
	}
}

// Convert is ToHTML within ctx: it checks src (content_too_large past a limit), waits for a
// conversion slot (renderer_busy when none frees in time) and the conversion (content_too_large
// when it does not end in time; it goes on in the background, holding its slot).
func Convert(ctx context.Context, src string, dark bool) (string, error) {
	if err := Check(src); err != nil {
		return "", err
	}
	k := cacheKey(src, dark)
	if page, ok := cached(k); ok {
		return page, nil
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return "", shotd.Wrap(shotd.CodeRendererBusy, ctx.Err(), "too many markdown conversions are running; retry after a short pause")
	}
	type result struct {
		page string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-slots }()
		page, err := convert(src, dark)
		if err == nil {
			remember(k, page)
		}
		done <- result{page, err}
	}()
	select {
	case r := <-done:
		return r.page, r.err
	case <-ctx.Done():
		return "", &shotd.Error{Code: shotd.CodeContentTooLarge, Cause: ctx.Err(),
			Message: "the markdown is too complex to convert in time",
			Fields:  []shotd.FieldError{{Field: "markdown", Message: "too complex to convert in time"}}}
	}
}

// convertWithin is Convert with ConvertTimeout.
func convertWithin(src string, dark bool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ConvertTimeout)
	defer cancel()
	return Convert(ctx, src, dark)
}
