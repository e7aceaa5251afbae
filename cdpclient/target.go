package cdpclient

import (
	"context"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/network"
)

// Target is a page target alone in a browser context of its own, as every render's tab starts:
// the Page domain and lifecycle events on, the default viewport (1280x1024) and screen media,
// and nothing else of a render (no isolation between uses, no checks, no options). It lets a
// measurement drive Chrome without the service around it, on a Process launched as the service
// launches it: the bench's floor. The service never uses it.
type Target struct {
	// Client is the target's own DevTools connection.
	Client *cdp.Client

	p *Process
	t *tab
}

// OpenTarget creates a Target in p.
func (p *Process) OpenTarget(ctx context.Context) (*Target, error) {
	t, err := p.newTab(ctx)
	if err != nil {
		return nil, err
	}
	return &Target{Client: t.c, p: p, t: t}, nil
}

// Close closes the target's connection and disposes its browser context, on a deadline of its
// own.
func (t *Target) Close() { t.p.disposeTab(t.t) }

// AwaitLoad waits for the load event of the main frame's document of loader, as a tab does for
// its blank document.
func (t *Target) AwaitLoad(ctx context.Context, loader network.LoaderID) error {
	return t.t.awaitLoad(ctx, loader)
}
