package markdown

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

// urlRe finds absolute and scheme-relative references anywhere in the output.
var urlRe = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.\-]+[^\s"'<>)&]*`)

func TestToHTML(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		dark   bool
		want   []string // substrings the page must contain
		absent []string // substrings it must not contain
	}{
		{
			name: "headings get ids",
			src:  "# Title\n\n## Getting started\n\n## Getting started\n\n### Ünïcode *emph*\n",
			want: []string{`<h1 id="title">Title</h1>`, `<h2 id="getting-started">Getting started</h2>`,
				`<h2 id="getting-started-1">Getting started</h2>`, `<h3 id=`, `<title>Title</title>`},
		},
		{
			name: "gfm table",
			src:  "| Name | Qty |\n|:-----|----:|\n| apple | 3 |\n| pear | 10 |\n",
			want: []string{"<table>", "<thead>", `<th style="text-align:left">Name</th>`,
				`<td style="text-align:right">10</td>`, "</table>"},
		},
		{
			name: "task list",
			src:  "- [x] done\n- [ ] todo\n",
			want: []string{`<input checked="" disabled="" type="checkbox"> done`, `<input disabled="" type="checkbox"> todo`,
				`li:has(> input[type="checkbox"])`},
		},
		{
			name:   "strikethrough",
			src:    "this is ~~gone~~ now",
			want:   []string{"<del>gone</del>"},
			absent: []string{"~~"},
		},
		{
			name: "autolinks",
			src:  "see https://example.com/docs and www.example.org, or mail a@example.net",
			want: []string{`<a href="https://example.com/docs">https://example.com/docs</a>`,
				`<a href="http://www.example.org">www.example.org</a>`, `<a href="mailto:a@example.net">a@example.net</a>`},
		},
		{
			name: "fenced code with a language is highlighted with classes",
			src:  "```go\nfunc main() { fmt.Println(\"hi\") }\n```\n",
			want: []string{`<pre class="chroma">`, `<span class="kd">func</span>`, `<span class="nf">main</span>`,
				`<span class="s">&#34;hi&#34;</span>`, ".chroma .kd {"},
			absent: []string{`<span style=`, `<pre style=`},
		},
		{
			name:   "fenced code without a known language stays plain",
			src:    "```nosuchlang\n<b>x</b>\n```\n",
			want:   []string{`<pre><code class="language-nosuchlang">&lt;b&gt;x&lt;/b&gt;`},
			absent: []string{`<b>x</b>`},
		},
		{
			name: "raw html is kept",
			src:  "<div class=\"note\"><kbd>Ctrl</kbd>+<kbd>C</kbd></div>\n\ntext <mark>hi</mark>\n",
			want: []string{`<div class="note"><kbd>Ctrl</kbd>+<kbd>C</kbd></div>`, "<mark>hi</mark>", "kbd {"},
		},
		{
			name: "blockquote and hr",
			src:  "> quoted\n\n---\n",
			want: []string{"<blockquote>\n<p>quoted</p>\n</blockquote>", "<hr>", "blockquote {", "hr {"},
		},
		{
			name: "light page follows the color scheme",
			src:  "x",
			want: []string{`<meta name="color-scheme" content="light dark">`, "--bg: #ffffff;",
				"@media (prefers-color-scheme: dark) {\n:root {\n  color-scheme: dark;\n  --fg: #e6edf3;",
				"@media not all and (prefers-color-scheme: dark) {\n/* Background */ .bg { background-color: #f7f7f7; }"},
		},
		{
			name:   "dark forces the dark palette",
			src:    "x",
			dark:   true,
			want:   []string{`<meta name="color-scheme" content="dark">`, ":root {\n  color-scheme: dark;", "--bg: #0d1117;", ".chroma .kd {"},
			absent: []string{"--bg: #ffffff;", "color-scheme: light", "prefers-color-scheme", "#f7f7f7"},
		},
		{
			name:   "empty input is an empty page",
			src:    "",
			want:   []string{"<!DOCTYPE html>", "<title>Document</title>", "<main class=\"markdown-body\">\n</main>", "</html>\n"},
			absent: []string{"<p>"},
		},
		{
			name: "layout",
			src:  "x",
			want: []string{"max-width: 880px", "line-height: 1.6", "-apple-system", "ui-monospace"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := ToHTML(c.src, c.dark)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(page, a) {
					t.Errorf("page contains %q", a)
				}
			}
			if !strings.HasPrefix(page, "<!DOCTYPE html>\n") || !strings.HasSuffix(page, "</html>\n") {
				t.Errorf("not a complete page (%d bytes)", len(page))
			}
		})
	}
}

// TestSelfContained: every absolute or scheme-relative reference in the page is one the author
// wrote; the template, the stylesheet and the highlighter add none.
func TestSelfContained(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		author []string // references the author wrote, as they appear in the output
	}{
		{"plain text", "# Hello\n\nJust *text*, `code` and a table:\n\n| a |\n|---|\n| b |\n", nil},
		{"code blocks", "```python\nimport os\nprint('//not/a/url')\n```\n\n```js\nconst u = 1 // comment\n```\n", nil},
		{"author links and images", "[doc](https://example.com/a) ![logo](http://img.example.org/l.png) www.example.net",
			[]string{"https://example.com/a", "http://img.example.org/l.png", "http://www.example.net"}},
		{"empty", "", nil},
	}
	for _, c := range cases {
		for _, dark := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				page, err := ToHTML(c.src, dark)
				if err != nil {
					t.Fatal(err)
				}
				for _, ref := range urlRe.FindAllString(page, -1) {
					if !contains(c.author, ref) && !strings.Contains(c.src, ref) {
						t.Errorf("dark=%v: reference %q that the author did not write", dark, ref)
					}
				}
				for _, a := range c.author {
					if !strings.Contains(page, a) {
						t.Errorf("dark=%v: the author's %q is missing", dark, a)
					}
				}
				for _, bad := range []string{"@import", "url(", "<link", "<script", "@font-face"} {
					if strings.Contains(page, bad) {
						t.Errorf("dark=%v: page contains %q", dark, bad)
					}
				}
			})
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestConcurrent: the shared converter serves several renders at once (run with -race).
func TestConcurrent(t *testing.T) {
	want, err := ToHTML("# A\n\n```go\nvar x = 1\n```\n", false)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := ToHTML("# A\n\n```go\nvar x = 1\n```\n", false)
			if err != nil || got != want {
				errs <- "concurrent render differs"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
