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

// CheckURL resolves the host once and applies the address policy; field names the option. A
// name that does not resolve is navigation_failed.
func (g GuardURLs) CheckURL(rawURL, field string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return renameField(g.Guard.CheckURL(ctx, rawURL), field)
}

// CheckLiteral applies what the guard decides without DNS (egress.Guard.CheckURLLiteral); a name
// passes: it is checked when it is dialed.
func (g GuardURLs) CheckLiteral(rawURL, field string) error {
	return renameField(g.Guard.CheckURLLiteral(rawURL), field)
}

// renameField names field in the errors of the guard, which speaks of "url".
func renameField(err error, field string) error {
	if err == nil {
		return nil
	}
	e := *shotd.AsError(err)
	e.Fields = append([]shotd.FieldError(nil), e.Fields...)
	for i := range e.Fields {
		if e.Fields[i].Field == "url" {
			e.Fields[i].Field = field
		}
	}
	return &e
}
