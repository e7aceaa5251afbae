package cdpclient

import (
	"context"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
)

// proxiedTab makes the tab of a render with the proxy option: a browser context of its own
// whose proxy is a route of the egress guard (egress.Route) that leaves through the user's
// proxy, so the guard still checks every connection the page makes. The tab never joins the
// pool: a context's proxy is fixed when it is made, and the route, with the credentials, ends
// with the render (release disposes the tab, disposeTab then closes the route).
func (p *Process) proxiedTab(ctx context.Context, up *shotd.UpstreamProxy) (*tab, error) {
	if p.cfg.Guard == nil {
		return nil, invalidOption("proxy", "this server renders without the egress guard, which a proxied render goes through")
	}
	route, err := p.cfg.Guard.OpenRoute(ctx, egress.Upstream{Host: up.Host, Username: up.Username.Reveal(),
		Password: up.Password.Reveal(), Bypass: up.Bypass}, p.log)
	if err != nil {
		return nil, err
	}
	t, err := p.newTabVia(ctx, route)
	if err != nil {
		return nil, err
	}
	t.proxied = true
	t.uses++
	return t, nil
}

// closeRoute closes t's route, if any, with a deadline of its own.
func (p *Process) closeRoute(t *tab) {
	if t.route == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), disposeTimeout)
	defer cancel()
	if err := t.route.Close(ctx); err != nil {
		p.log.Debug().Err(err).Msg("close an egress route")
	}
	t.route = nil
}
