package s1render

import (
	"context"
	"reflect"

	"github.com/shotd/shotd"
)

// Wrap returns next with the rules of the package. Options without them go straight through.
func Wrap(next shotd.Renderer) shotd.Renderer { return renderer{next} }

type renderer struct{ next shotd.Renderer }

func (r renderer) Render(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
	if !o.FailOnHostError && !o.SelectorOptional && !o.ClickOptional && !o.HoverOptional {
		return r.next.Render(ctx, o)
	}
	c := *o // Options are immutable: the rules render a copy
	askedStatus := c.MetaStatusCode
	if c.FailOnHostError && c.URL != "" {
		c.MetaStatusCode = true // the document's status, which the check below reads
	}
	out, err := r.next.Render(ctx, &c)
	for tries := 0; shotd.CodeOf(err) == shotd.CodeSelectorNotFound && tries < 3 && ctx.Err() == nil; tries++ {
		// The renderer does not say which selector missed: drop the optional ones, the
		// capture's first, and render again. Each step drops at least one, so it ends.
		if !skipOptional(&c) {
			break
		}
		out, err = r.next.Render(ctx, &c)
	}
	if err != nil {
		return nil, err
	}
	if c.FailOnHostError && out.Metadata != nil && out.Metadata.HTTPResponseStatusCode >= 400 {
		st := out.Metadata.HTTPResponseStatusCode
		e := shotd.Errorf(shotd.CodeHostReturnedError, "the page answered HTTP %d; set ignore_host_errors=true to render it anyway", st)
		e.HostStatus = st
		return nil, e
	}
	if !askedStatus && out.Metadata != nil {
		out.Metadata.HTTPResponseStatusCode = 0
		if reflect.ValueOf(*out.Metadata).IsZero() {
			out.Metadata = nil
		}
	}
	return out, nil
}

// skipOptional drops from c the selectors the request let be missing, and reports whether it
// dropped any.
func skipOptional(c *shotd.Options) bool {
	dropped := false
	if c.SelectorOptional && c.Selector != "" {
		c.Selector, c.SelectorOptional, dropped = "", false, true
		if c.ClipWidth == 0 {
			c.HasClip = false
		}
	}
	if c.ClickOptional && c.Click != "" {
		c.Click, c.ClickOptional, dropped = "", false, true
	}
	if c.HoverOptional && c.Hover != "" {
		c.Hover, c.HoverOptional, dropped = "", false, true
	}
	return dropped
}
