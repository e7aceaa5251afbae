package cdpclient

// The browser-wide watch of targets: popups closed, frames' and workers' origins noted.

import (
	"context"

	"github.com/mafredri/cdp/protocol/target"

	"github.com/shotd/shotd"
)

// watchTargets closes every window a page opens (window.open, a target=_blank link or form) as
// soon as Chrome reports it, and records for the wipe the origins of the frames in processes of
// their own (cross-site iframes) and of the workers of every tab, which the tab's own connection
// does not see. A popup takes the focus from its opener, whose captures then wait for a frame
// that never comes; it is outside the render's Fetch interception too (the egress proxy still
// guards it). Renders' own targets have no opener, popups always have one, even with noopener.
// The watcher ends with the browser connection.
func (p *Process) watchTargets(ctx context.Context) error {
	created, err := p.browser.Target.TargetCreated(p.life)
	if err != nil {
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	changed, err := p.browser.Target.TargetInfoChanged(p.life)
	if err != nil {
		created.Close()
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	var filter target.Filter
	for _, kind := range []string{"page", "iframe", "worker", "shared_worker", "service_worker"} {
		filter = append(filter, target.FilterEntry{Type: &kind})
	}
	if err := p.browser.Target.SetDiscoverTargets(ctx, target.NewSetDiscoverTargetsArgs(true).SetFilter(filter)); err != nil {
		created.Close()
		changed.Close()
		return shotd.Wrap(shotd.CodeRendererUnavailable, err, "cannot watch the browser's targets")
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer created.Close()
		defer changed.Close()
		for {
			var info target.Info
			select {
			case <-created.Ready():
				ev, err := created.Recv()
				if err != nil {
					return
				}
				info = ev.TargetInfo
			case <-changed.Ready():
				ev, err := changed.Recv()
				if err != nil {
					return
				}
				info = ev.TargetInfo
			}
			p.noteOrigin(info)
			if info.Type != "page" || info.OpenerID == nil {
				continue
			}
			cctx, cancel := context.WithTimeout(p.life, disposeTimeout)
			_, err = p.browser.Target.CloseTarget(cctx, target.NewCloseTargetArgs(info.TargetID))
			cancel()
			if err != nil && p.life.Err() == nil {
				p.log.Debug().Err(err).Str("target", string(info.TargetID)).Msg("close popup")
			}
		}
	}()
	return nil
}

// noteOrigin records the origin of a frame or worker target with the tab of its browser context,
// and a shared worker there.
func (p *Process) noteOrigin(info target.Info) {
	if info.BrowserContextID == nil {
		return
	}
	if t, ok := p.tabs.Load(*info.BrowserContextID); ok {
		t.(*tab).origins.add(info.URL, info.Type == "page")
		if info.Type == "shared_worker" {
			t.(*tab).sharedWorker.Store(true)
		}
	}
}
