package shotd

import "testing"

// TestS1CodesComplete: every catalogue code has ScreenshotOne's name, so that no error on their
// paths falls back to internal_application_error by omission.
func TestS1CodesComplete(t *testing.T) {
	for _, c := range Catalogue {
		x, ok := S1Codes[c.Code]
		if !ok || x.Code == "" || x.Status < 400 {
			t.Errorf("%s: %+v", c.Code, x)
		}
	}
	if len(S1Codes) != len(Catalogue) {
		t.Errorf("%d S1 codes for %d catalogue codes", len(S1Codes), len(Catalogue))
	}
}
