package cdpclient

// The browser's DevTools session, and its first calls.

import (
	"context"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/browser"

	"github.com/shotd/shotd"
)

// connect opens the browser's session on the DevTools pipe and makes its first calls, all within
// StartTimeout: Chrome answers once it is up.
func (p *Process) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	var err error
	if p.conn, err = p.pipe.dial(ctx, ""); err != nil {
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot connect to the browser")
	}
	p.browser = cdp.NewClient(p.conn)
	// Downloads are denied in every context (newTab denies them in its own): no page writes to
	// the disk.
	if err := p.browser.Browser.SetDownloadBehavior(ctx, browser.NewSetDownloadBehaviorArgs("deny")); err != nil {
		switch {
		case isDone(p.pipe.done):
			// The pipe ended: Chrome died, or the binary is not Chrome.
			return shotd.Wrap(shotd.CodeRendererUnavailable, err, "the browser exited before it was ready")
		case ctx.Err() != nil:
			return shotd.Wrap(shotd.CodeRendererUnavailable, ctx.Err(), "the browser did not become ready in time")
		}
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot connect to the browser")
	}
	return p.watchTargets(ctx)
}
