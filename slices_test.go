package shotd

import "testing"

// TestSliceCount: the count and rows SliceCount and SliceRows give are those the cut makes
// (slices start every height-overlap px, the last one reaches the bottom).
func TestSliceCount(t *testing.T) {
	cases := []struct {
		name                string
		height, h, overlap  int
		wantCount, wantRows int
	}{
		{"shorter than a slice", 300, 400, 100, 1, 300},
		{"exact", 800, 400, 0, 2, 800},
		{"overlap", 1000, 400, 100, 3, 1200},
		{"default height", 9000, 0, 0, 3, 9000},
		{"one px step", 3000, 1000, 999, 2001, 3000 + 2000*999},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// What the cut in cdpclient makes: the same loop, counted.
			n, rows := 0, 0
			for y := 0; ; {
				bottom := min(y+max(c.h, 1), c.height)
				if c.h == 0 {
					bottom = min(y+DefaultSliceHeight, c.height)
				}
				n, rows = n+1, rows+bottom-y
				if bottom >= c.height {
					break
				}
				y = bottom - c.overlap
			}
			if got := SliceCount(c.height, c.h, c.overlap); got != c.wantCount || got != n {
				t.Errorf("SliceCount = %d, want %d (the cut makes %d)", got, c.wantCount, n)
			}
			if got := SliceRows(c.height, c.h, c.overlap); got != c.wantRows || got != rows {
				t.Errorf("SliceRows = %d, want %d (the cut makes %d)", got, c.wantRows, rows)
			}
		})
	}
}

// TestSliceCountRefused: a request whose slice count the options fix is refused at validation
// when it passes MaxSlices; one whose count the page decides is left to the render.
func TestSliceCountRefused(t *testing.T) {
	base := []string{"url", "https://example.com/", "full_page", "true", "full_page_slices", "true"}
	cases := []struct {
		name    string
		kv      []string
		refused bool
	}{
		{"image_height at a 1 px step", []string{"image_height", "3000", "full_page_slice_height", "1000", "full_page_slice_overlap_height", "999"}, true},
		{"image_height, 100 slices", []string{"image_height", "8000", "full_page_slice_height", "80"}, false},
		{"image_height, 101 slices", []string{"image_height", "8000", "full_page_slice_height", "79"}, true},
		{"clip at scale 2", []string{"clip_x", "0", "clip_y", "0", "clip_width", "100", "clip_height", "3000", "device_scale_factor", "2", "full_page_slice_height", "59"}, true},
		{"the page decides", []string{"full_page_slice_height", "1000", "full_page_slice_overlap_height", "999"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOptions(q(append(append([]string{}, base...), c.kv...)...), Limits{})
			if !c.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || e.Code != CodeInvalidOptions || len(e.Fields) != 1 || e.Fields[0].Field != "full_page_slice_height" {
				t.Fatalf("err = %#v, want invalid_options on full_page_slice_height", err)
			}
		})
	}
}
