package shotd

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestOptionsLegacyS1Record: a job record written before the ScreenshotOne options were folded
// into Options keeps them in an "S1" object; it still decodes to the options it was asked with.
func TestOptionsLegacyS1Record(t *testing.T) {
	old := `{"URL":"https://a.example/","Format":"png","FullPage":true,"S1":{"Hover":"#menu",` +
		`"FullPageAlgorithm":"by_sections","FullPageScrollDelay":500000000,"Slices":true,"SliceHeight":4000,` +
		`"MetaFonts":true,"ScriptsWaitUntil":["load"],"Proxy":{"Host":"proxy.example:80","Sealed":"AQI=","Bypass":["*.b.example"]},` +
		`"ExternalIdentifier":"order-7","NoWebhookErrors":true}}`
	var got Options
	if err := json.Unmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	want := Options{URL: "https://a.example/", Format: "png", FullPage: true, Hover: "#menu",
		FullPageAlgorithm: "by_sections", FullPageScrollDelay: 500 * time.Millisecond, Slices: true, SliceHeight: 4000,
		MetaFonts: true, ScriptsWaitUntil: []string{"load"},
		Proxy:              &UpstreamProxy{Host: "proxy.example:80", Sealed: []byte{1, 2}, Bypass: []string{"*.b.example"}},
		ExternalIdentifier: "order-7", NoWebhookErrors: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("legacy record read as\n%+v\nwant\n%+v", got, want)
	}

	// And the current form round-trips.
	b, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	var again Options
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip: %v\n%+v", err, again)
	}
}
