package cdpclient

import (
	"math"
	"testing"

	"github.com/shotd/shotd"
)

func TestLengthInches(t *testing.T) {
	tests := []struct {
		name string
		v    string
		want float64
		bad  bool
	}{
		{"zero", "0", 0, false},
		{"px", "96px", 1, false},
		{"in", "1.5in", 1.5, false},
		{"cm", "2.54cm", 1, false},
		{"mm", "25.4mm", 1, false},
		{"spaces", " 10mm ", 10 / 25.4, false},
		{"no unit", "12", 0, true},
		{"bad unit", "1pt", 0, true},
		{"negative", "-1in", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lengthInches(tt.v)
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want error %v", err, tt.bad)
			}
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("lengthInches(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestMargins(t *testing.T) {
	tests := []struct {
		name string
		o    shotd.Options
		want [4]float64
	}{
		{"none", shotd.Options{}, [4]float64{}},
		{"all", shotd.Options{PDFMargin: "1in"}, [4]float64{1, 1, 1, 1}},
		{"side overrides", shotd.Options{PDFMargin: "1in", PDFMarginTop: "0", PDFMarginLeft: "2.54cm", PDFMarginBottom: "48px"}, [4]float64{0, 1, 0.5, 1}},
		{"side alone", shotd.Options{PDFMarginRight: "10mm"}, [4]float64{0, 10 / 25.4, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := margins(&tt.o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Fatalf("margins = %v, want %v", got, tt.want)
				}
			}
		})
	}
	_, err := margins(&shotd.Options{PDFMarginTop: "3pt"})
	if e := shotd.AsError(err); e == nil || e.Code != shotd.CodeInvalidOptions || len(e.Fields) != 1 || e.Fields[0].Field != "pdf_margin_top" {
		t.Errorf("bad unit: %v", err)
	}
}

func TestOutputSize(t *testing.T) {
	tests := []struct {
		name         string
		w, h, ow, oh int
		wantW, wantH int
	}{
		{"keep", 400, 300, 0, 0, 400, 300},
		{"width keeps ratio", 400, 300, 200, 0, 200, 150},
		{"height keeps ratio", 400, 300, 0, 600, 800, 600},
		{"both exact", 400, 300, 100, 100, 100, 100},
		{"never zero", 4000, 10, 10, 0, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h := outputSize(tt.w, tt.h, tt.ow, tt.oh)
			if w != tt.wantW || h != tt.wantH {
				t.Errorf("outputSize = %dx%d, want %dx%d", w, h, tt.wantW, tt.wantH)
			}
		})
	}
}
