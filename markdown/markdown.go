package markdown

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"sync"

	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/shotd/shotd"
	"github.com/yuin/goldmark"
	highlighting "github.com/yuin/goldmark-highlighting/v2"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	goldhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The chroma styles of code blocks. Both are written as CSS once; the page picks one with a media
// query or, when dark is forced, uses the dark one alone.
const (
	LightCodeStyle = "github"
	DarkCodeStyle  = "github-dark"
)

// converter is built once: a goldmark.Markdown keeps no per-document state, so one serves every
// render concurrently.
var converter = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(
			extension.GFM,
			highlighting.NewHighlighting(
				highlighting.WithStyle(LightCodeStyle),
				// Classes, not inline styles: one set of colours could not follow dark mode.
				highlighting.WithFormatOptions(chromahtml.WithClasses(true)),
			),
		),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(),
			parser.WithASTTransformers(util.Prioritized(plainLargeCode{}, 1000))),
		goldmark.WithRendererOptions(goldhtml.WithUnsafe()),
	)
})

// codeCSS holds the chroma rules of both styles, computed once.
var codeCSS = sync.OnceValues(func() (light, dark string) {
	return chromaCSS(LightCodeStyle), chromaCSS(DarkCodeStyle)
})

func chromaCSS(name string) string {
	var b bytes.Buffer
	style := styles.Get(name)
	if style == nil {
		style = styles.Fallback
	}
	// WriteCSS cannot fail on a bytes.Buffer.
	_ = chromahtml.New(chromahtml.WithClasses(true)).WriteCSS(&b, style)
	return b.String()
}

// ToHTML renders Markdown src as a complete HTML page. With dark the page always uses the dark
// palette; otherwise it follows prefers-color-scheme, so an emulated dark preference still turns
// it dark. Valid or not, any text is Markdown; the error is a *shotd.Error: content_too_large
// for a source past the limits of Check or not converted within ConvertTimeout (see Convert).
func ToHTML(src string, dark bool) (string, error) { return convertWithin(src, dark) }

// convert is ToHTML without limits, which Convert runs in a goroutine of its own.
func convert(src string, dark bool) (string, error) {
	source := []byte(src)
	md := converter()
	doc := md.Parser().Parse(text.NewReader(source))
	var body bytes.Buffer
	if err := md.Renderer().Render(&body, source, doc); err != nil {
		return "", shotd.Wrap(shotd.CodeInternalError, fmt.Errorf("markdown: %w", err), "the markdown could not be rendered")
	}

	var b strings.Builder
	b.Grow(body.Len() + 12<<10)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	if dark {
		b.WriteString("<meta name=\"color-scheme\" content=\"dark\">\n")
	} else {
		b.WriteString("<meta name=\"color-scheme\" content=\"light dark\">\n")
	}
	b.WriteString("<title>")
	b.WriteString(html.EscapeString(title(doc, source)))
	b.WriteString("</title>\n<style>\n")
	writeStyles(&b, dark)
	b.WriteString("</style>\n</head>\n<body>\n<main class=\"markdown-body\">\n")
	b.Write(body.Bytes())
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.String(), nil
}

// title is the text of the first heading, for the page's <title>.
func title(doc ast.Node, source []byte) string {
	var h *ast.Heading
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if x, ok := n.(*ast.Heading); ok && entering {
			h = x
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	if h == nil {
		return "Document"
	}
	var b strings.Builder
	_ = ast.Walk(h, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Text:
			b.Write(x.Value(source))
		case *ast.String:
			b.Write(x.Value)
		}
		return ast.WalkContinue, nil
	})
	if t := strings.TrimSpace(b.String()); t != "" {
		return t
	}
	return "Document"
}

// writeStyles writes the palette variables, the layout and the code colours.
func writeStyles(b *strings.Builder, dark bool) {
	light, darkCode := codeCSS()
	if dark {
		b.WriteString(":root {\n" + darkPalette + "}\n")
		b.WriteString(darkCode)
	} else {
		b.WriteString(":root {\n" + lightPalette + "}\n")
		b.WriteString("@media (prefers-color-scheme: dark) {\n:root {\n" + darkPalette + "}\n}\n")
		// Each style only under its own scheme: a rule of one style that the other lacks (an error
		// token's background, say) must not leak into the other.
		b.WriteString("@media not all and (prefers-color-scheme: dark) {\n" + light + "}\n")
		b.WriteString("@media (prefers-color-scheme: dark) {\n" + darkCode + "}\n")
	}
	b.WriteString(layout)
}

// Palettes as custom properties, so the layout rules are written once.
const (
	lightPalette = `  color-scheme: light;
  --fg: #1f2328; --fg-muted: #59636e; --bg: #ffffff; --bg-subtle: #f6f8fa;
  --border: #d1d9e0; --border-muted: #d8dee4; --link: #0969da;
  --code-bg: rgba(129, 139, 152, 0.12); --mark: #fff8c5; --kbd-shadow: #d1d9e0;
  --quote-bar: #d1d9e0; --row-alt: #f6f8fa;
`
	darkPalette = `  color-scheme: dark;
  --fg: #e6edf3; --fg-muted: #9198a1; --bg: #0d1117; --bg-subtle: #151b23;
  --border: #3d444d; --border-muted: #2f353d; --link: #4493f8;
  --code-bg: rgba(101, 108, 118, 0.2); --mark: #bb800926; --kbd-shadow: #3d444d;
  --quote-bar: #3d444d; --row-alt: #151b23;
`
)

// layout is the stylesheet proper. System fonts only: the page must not fetch anything.
const layout = `*, *::before, *::after { box-sizing: border-box; }
html { background: var(--bg); color: var(--fg); -webkit-text-size-adjust: 100%; }
body {
  margin: 0; padding: 32px 24px 48px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif,
    "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji";
  font-size: 16px; line-height: 1.6; word-wrap: break-word;
  background: var(--bg); color: var(--fg);
}
.markdown-body { max-width: 880px; margin: 0 auto; }
.markdown-body > :first-child { margin-top: 0 !important; }
.markdown-body > :last-child { margin-bottom: 0 !important; }
p, blockquote, ul, ol, dl, table, pre, details { margin: 0 0 16px; }
h1, h2, h3, h4, h5, h6 { margin: 24px 0 16px; font-weight: 600; line-height: 1.25; }
h1 { font-size: 2em; padding-bottom: .3em; border-bottom: 1px solid var(--border-muted); }
h2 { font-size: 1.5em; padding-bottom: .3em; border-bottom: 1px solid var(--border-muted); }
h3 { font-size: 1.25em; }
h4 { font-size: 1em; }
h5 { font-size: .875em; }
h6 { font-size: .85em; color: var(--fg-muted); }
a { color: var(--link); text-decoration: none; }
a:hover { text-decoration: underline; }
strong { font-weight: 600; }
del { color: var(--fg-muted); }
mark { background: var(--mark); color: inherit; }
img { max-width: 100%; height: auto; border-style: none; }
hr { height: 4px; margin: 24px 0; padding: 0; border: 0; background: var(--border); border-radius: 2px; }
ul, ol { padding-left: 2em; }
li + li { margin-top: .25em; }
li > p { margin-top: 16px; }
li > ul, li > ol { margin-top: .25em; margin-bottom: 0; }
li:has(> input[type="checkbox"]) { list-style: none; }
li > input[type="checkbox"] { margin: 0 .35em .2em -1.4em; vertical-align: middle; width: 1em; height: 1em; }
ul:has(> li > input[type="checkbox"]) { padding-left: 2em; }
blockquote { padding: 0 1em; color: var(--fg-muted); border-left: .25em solid var(--quote-bar); }
blockquote > :last-child { margin-bottom: 0; }
table { display: block; width: max-content; max-width: 100%; overflow: auto; border-spacing: 0; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th { font-weight: 600; }
th, td { padding: 6px 13px; border: 1px solid var(--border); }
tr { background: var(--bg); border-top: 1px solid var(--border-muted); }
tr:nth-child(2n) { background: var(--row-alt); }
code, kbd, pre, samp { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace; }
code { padding: .2em .4em; font-size: 85%; white-space: break-spaces; background: var(--code-bg); border-radius: 6px; }
pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45; tab-size: 4; background: var(--bg-subtle); border-radius: 6px; }
pre code { display: block; padding: 0; font-size: 100%; white-space: pre; background: transparent; border-radius: 0; }
pre.chroma { white-space: pre; background: var(--bg-subtle); }
kbd {
  display: inline-block; padding: 3px 5px; font-size: 11px; line-height: 10px; vertical-align: middle;
  color: var(--fg); background: var(--bg-subtle); border: 1px solid var(--border); border-radius: 6px;
  box-shadow: inset 0 -1px 0 var(--kbd-shadow);
}
details summary { cursor: pointer; }
dl dt { font-weight: 600; font-style: italic; margin-top: 16px; }
dl dd { margin: 0 0 16px; padding: 0 16px; }
@media print { body { padding: 0; } pre, blockquote, table, img { break-inside: avoid; } }
`
