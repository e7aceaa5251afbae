package s1render

import (
	"context"
	"testing"

	"github.com/shotd/shotd"
)

// page stands for the browser: it answers the document's status, and selector_not_found for
// a selector, click or hover named "#missing". The wrapper's rules are about what a result
// says, which a page served by Chrome shows end to end in httpd's tests
// (TestScreenshotOneRootErrors, TestScreenshotOneNodeSDK).
type page struct {
	status int
	seen   []shotd.Options
}

func (p *page) Render(_ context.Context, o *shotd.Options) (*shotd.Output, error) {
	p.seen = append(p.seen, *o)
	if o.Selector == "#missing" || o.Click == "#missing" || o.Hover == "#missing" {
		return nil, shotd.Errorf(shotd.CodeSelectorNotFound, "nothing matches")
	}
	out := &shotd.Output{Format: shotd.FormatPNG}
	if o.MetaStatusCode {
		out.Metadata = &shotd.Metadata{HTTPResponseStatusCode: p.status}
	}
	return out, nil
}

func TestRules(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		o       shotd.Options
		code    shotd.Code
		renders int
		meta    bool // the answer keeps metadata
	}{
		{name: "host error fails", status: 404, o: shotd.Options{URL: "http://x/", FailOnHostError: true}, code: shotd.CodeHostReturnedError, renders: 1},
		{name: "host fine, status not asked for", status: 200, o: shotd.Options{URL: "http://x/", FailOnHostError: true}, renders: 1},
		{name: "host fine, status asked for", status: 200, o: shotd.Options{URL: "http://x/", FailOnHostError: true, MetaStatusCode: true}, renders: 1, meta: true},
		{name: "host error ignored", status: 500, o: shotd.Options{URL: "http://x/"}, renders: 1},
		{name: "optional selector skipped", o: shotd.Options{HTML: "x", Selector: "#missing", SelectorOptional: true}, renders: 2},
		{name: "required selector fails", o: shotd.Options{HTML: "x", Selector: "#missing", ClickOptional: true}, code: shotd.CodeSelectorNotFound, renders: 1},
		{name: "optional click and hover skipped", o: shotd.Options{HTML: "x", Click: "#missing", ClickOptional: true, Hover: "#missing", HoverOptional: true}, renders: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &page{status: tt.status}
			out, err := Wrap(p).Render(context.Background(), &tt.o)
			if shotd.CodeOf(err) != tt.code {
				t.Fatalf("got %v, want %q", err, tt.code)
			}
			if len(p.seen) != tt.renders {
				t.Fatalf("%d renders, want %d", len(p.seen), tt.renders)
			}
			if err == nil && (out.Metadata != nil) != tt.meta {
				t.Fatalf("metadata %+v", out.Metadata)
			}
			if e := shotd.AsError(err); tt.code == shotd.CodeHostReturnedError && e.HostStatus != tt.status {
				t.Fatalf("HostStatus %d", e.HostStatus)
			}
		})
	}
}
