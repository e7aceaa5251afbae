package httpd

import (
	"context"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
)

// GuardURLs checks url and webhook_url with the egress guard before anything renders or is
// queued: a private target is refused at once with host_not_allowed, without rendering.
type GuardURLs struct {
	Guard *egress.Guard
}

// CheckURL resolves the host once and applies the address policy; field names the option.
func (g GuardURLs) CheckURL(rawURL, field string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.Guard.CheckURL(ctx, rawURL)
	if err == nil {
		return nil
	}
	e := *shotd.AsError(err)
	if shotd.CodeOf(err) == shotd.CodeNavigationFailed && field == "webhook_url" {
		// A webhook host that does not resolve is the client's mistake, not a render failure.
		return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "webhook_url: the host does not resolve",
			Fields: []shotd.FieldError{{Field: "webhook_url", Message: "the host does not resolve"}}, Cause: err}
	}
	for i := range e.Fields {
		if e.Fields[i].Field == "url" {
			e.Fields[i].Field = field
		}
	}
	return &e
}
