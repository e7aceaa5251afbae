package markdown

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// TestCostBounded: sources whose conversion takes seconds to hours are refused by Check, or
// converted with their code shown plain; none reaches goldmark or chroma at full size. (Without
// the guard each of them runs to its end: the test times out.)
func TestCostBounded(t *testing.T) {
	var nested strings.Builder
	for i := range 2000 {
		nested.WriteString(strings.Repeat("  ", i) + "- x\n")
	}
	cases := []struct {
		name    string
		src     string
		refused bool
		absent  string // in the page, when converted
		slow    bool   // highlights up to the budget: over ConvertTimeout under the race detector
	}{
		{"nested quotes", strings.Repeat(">", 5<<20) + " x", true, "", false},
		{"nested quotes with spaces", strings.Repeat("> ", 64) + "x", true, "", false},
		{"nested lists on one line", strings.Repeat("- ", 4<<10) + "x", true, "", false},
		{"nested lists by indentation", nested.String(), true, "", false},
		{"wide table", "|" + strings.Repeat("a|", 4000) + "\n|" + strings.Repeat("-|", 4000) + "\n" + strings.Repeat("|x\n", 2000), true, "", false},
		{"long highlighted block", "```cfengine3\n" + strings.Repeat("<<", 256<<10) + "\n```\n", false, `class="chroma"`, false},
		{"many highlighted blocks", strings.Repeat("```cfengine3\n"+strings.Repeat("<<", 400)+"\n```\n\n", 200), false, "", true},
		{"deep but allowed", strings.Repeat("> ", MaxNesting) + "x\n\n" + strings.Repeat("  ", 50) + "text", false, "", false},
		{"fenced code may indent", "```\n" + strings.Repeat(" ", 1000) + "x\n```\n", false, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.slow && raceDetector {
				t.Skip("chroma under the race detector is slower than ConvertTimeout; the normal build runs this")
			}
			page, err := ToHTML(c.src, false)
			if c.refused {
				var e *shotd.Error
				if !errors.As(err, &e) || e.Code != shotd.CodeContentTooLarge || len(e.Fields) != 1 || e.Fields[0].Field != "markdown" {
					t.Fatalf("error %v, want content_too_large on markdown", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.absent != "" && strings.Contains(page, c.absent) {
				t.Fatalf("the page contains %q", c.absent)
			}
		})
	}
}

// TestHighlightBudget: small blocks are highlighted until the budget is spent, the rest plain.
func TestHighlightBudget(t *testing.T) {
	block := "```go\nfunc main() {}\n```\n\n"
	// The cap is what is tested, not the time: under the race detector on a loaded host these
	// few hundred blocks can take longer than ConvertTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page, err := Convert(ctx, strings.Repeat(block, MaxHighlighted/15+10), false)
	if err != nil {
		t.Fatal(err)
	}
	highlighted := strings.Count(page, `<pre class="chroma">`)
	if highlighted == 0 || highlighted > MaxHighlighted/15 {
		t.Fatalf("%d blocks highlighted", highlighted)
	}
}

// TestConvertGivesUp: a caller whose deadline passed gets an error at once, never a page.
func TestConvertGivesUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Convert(ctx, strings.Repeat("word ", 1<<20), false)
	if c := shotd.CodeOf(err); c != shotd.CodeContentTooLarge && c != shotd.CodeRendererBusy {
		t.Fatalf("error %v, want content_too_large or renderer_busy", err)
	}
}
