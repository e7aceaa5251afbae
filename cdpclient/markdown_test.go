package cdpclient

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/runtime"
)

// TestMarkdownSource: a markdown source is rendered as the styled page of package markdown: its
// heading and table are laid out, on the light palette, or the dark one with dark_mode.
func TestMarkdownSource(t *testing.T) {
	const doc = "# Title\n\nSome *text*.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
	tests := []struct {
		name string
		dark bool
		bg   [3]uint8 // the palette's --bg
	}{
		{"light", false, [3]uint8{0xff, 0xff, 0xff}},
		{"dark", true, [3]uint8{0x0d, 0x11, 0x17}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts("")
			o.Markdown, o.DarkMode = doc, tt.dark
			var laidOut struct {
				Heading string `json:"heading"`
				H1      bool   `json:"h1"`
				Cells   int    `json:"cells"`
				Table   bool   `json:"table"`
			}
			testHookAfterStep = func(step string, tb *tab) {
				if step != "settle" {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				rep, err := tb.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(`(() => {
					const h = document.querySelector('h1'), tb = document.querySelector('table');
					const shown = el => !!el && el.getBoundingClientRect().height > 0;
					return {heading: h ? h.textContent : '', h1: shown(h), cells: document.querySelectorAll('table td').length, table: shown(tb)};
				})()`).SetReturnByValue(true))
				if err != nil || rep.ExceptionDetails != nil {
					t.Errorf("inspect the page: %v %v", err, rep.ExceptionDetails)
					return
				}
				if err := json.Unmarshal(rep.Result.Value, &laidOut); err != nil {
					t.Errorf("inspect the page: %v", err)
				}
			}
			defer func() { testHookAfterStep = nil }()
			out := mustRender(t, shared, o)
			if laidOut.Heading != "Title" || !laidOut.H1 || laidOut.Cells != 2 || !laidOut.Table {
				t.Errorf("page: %+v, want a visible h1 Title and a visible table of 2 cells", laidOut)
			}
			if got := rgbAt(decodePNG(t, out.Data), 395, 295); got != tt.bg {
				t.Errorf("background %v, want %v", got, tt.bg)
			}
		})
	}
}
