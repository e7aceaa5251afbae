package httpd

import (
	"context"
	"errors"
	"net/netip"
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

// errNeedsDNS is what the resolver of CheckLiteral answers: the host is a name.
var errNeedsDNS = errors.New("httpd: the host is a name; it is checked when it is dialed")

// noDNS is a resolver that never resolves.
var noDNS = egress.ResolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errNeedsDNS
})

// CheckLiteral applies what the guard decides without DNS: a malformed host, an IP literal in
// any spelling, localhost, a denied port. A name passes: it is checked when it is dialed.
//
// The guard itself tells what needs DNS. A guard over the same policy whose resolver refuses
// to resolve checks the host first; if it asked its resolver, the host is a name. Otherwise the
// real guard, which also knows the denied ports, decides, and it resolves nothing either.
func (g GuardURLs) CheckLiteral(rawURL, field string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := egress.NewGuard(g.Guard.Policy(), noDNS).CheckURL(ctx, rawURL); errors.Is(err, errNeedsDNS) {
		return nil
	}
	return renameField(g.Guard.CheckURL(ctx, rawURL), field)
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
