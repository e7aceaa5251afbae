package httpd

import (
	"context"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
)

// GuardURLs checks webhook addresses with the egress guard at acceptance, so a job aimed at a
// private address is refused at once with host_not_allowed instead of failing its deliveries.
type GuardURLs struct {
	Guard *egress.Guard
}

// CheckWebhookURL resolves the host once and applies the address policy.
func (g GuardURLs) CheckWebhookURL(rawURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := g.Guard.CheckURL(ctx, rawURL)
	if err == nil {
		return nil
	}
	e := *shotd.AsError(err)
	if shotd.CodeOf(err) == shotd.CodeNavigationFailed {
		// A webhook host that does not resolve is the client's mistake, not a render failure.
		return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "webhook_url: the host does not resolve",
			Fields: []shotd.FieldError{{Field: "webhook_url", Message: "the host does not resolve"}}, Cause: err}
	}
	for i := range e.Fields {
		if e.Fields[i].Field == "url" {
			e.Fields[i].Field = "webhook_url"
		}
	}
	return &e
}
