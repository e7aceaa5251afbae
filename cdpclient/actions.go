package cdpclient

import (
	"context"
	"math"

	"github.com/mafredri/cdp/protocol/browser"
	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/input"
	"github.com/mafredri/cdp/protocol/page"

	"github.com/shotd/shotd"
)

// beforeNavigation sets, before the navigation, the state some options ask for: the network
// watch (netwatch.go), bypass_csp, and the geolocation of geolocation_*.
func (r *render) beforeNavigation(ctx context.Context) error {
	o := r.o
	if err := r.startNetWatch(ctx); err != nil { // netwatch.go
		return err
	}
	if o.BypassCSP && !r.t.over.bypassCSP {
		r.t.over.bypassCSP = true // undone by the wipe
		if err := r.t.c.Page.SetBypassCSP(ctx, page.NewSetBypassCSPArgs(true)); err != nil {
			return err
		}
	}
	if o.HasGeolocation {
		// The override and the permission outlive the render: the wipe undoes both.
		r.t.over.geolocation, r.t.over.permissions = true, true
		args := emulation.NewSetGeolocationOverrideArgs().SetLatitude(o.Latitude).SetLongitude(o.Longitude).
			SetAccuracy(max(o.Accuracy, 1)) // Chrome wants a positive accuracy
		if err := r.t.c.Emulation.SetGeolocationOverride(ctx, args); err != nil {
			return err
		}
		// Headless Chrome answers a permission prompt with a denial: grant it in the tab's own
		// browser context only.
		grant := browser.NewGrantPermissionsArgs([]browser.PermissionType{browser.PermissionTypeGeolocation}).
			SetBrowserContextID(r.t.browserContext)
		if err := r.p.browser.Browser.GrantPermissions(ctx, grant); err != nil {
			return err
		}
	}
	return nil
}

// scrollIntoViewJS scrolls the first match of sel to the top of the viewport, then by adjust
// pixels more, and reports whether there was a match.
var scrollIntoViewJS = withShadowQuery(`async (sel, adjust) => {
	const el = shotdQuery(sel);
	if (!el) return false;
	el.scrollIntoView({block: 'start', inline: 'nearest', behavior: 'instant'});
	if (adjust) window.scrollBy({top: adjust, behavior: 'instant'});
	await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res)));
	return true;
}`)

// lastActions runs the page actions that follow pageActions' own: hover, then
// scroll_into_view, then the fail_if_content_* checks on what the page ended up showing.
func (r *render) lastActions(ctx context.Context) error {
	o := r.o
	if o.Hover != "" {
		if err := r.hover(ctx, o.Hover); err != nil {
			return err
		}
	}
	if o.ScrollIntoView != "" {
		if err := r.waitElement(ctx, "scroll_into_view", o.ScrollIntoView, false); err != nil {
			return err
		}
		var found bool
		if err := r.eval(ctx, jsCall(scrollIntoViewJS, o.ScrollIntoView, o.ScrollIntoViewAdjust), &found); err != nil {
			return err
		}
		if !found {
			return shotd.Errorf(shotd.CodeSelectorNotFound, "scroll_into_view %q matched nothing", clipText(o.ScrollIntoView))
		}
	}
	if err := r.hideWidgets(ctx); err != nil { // block_socials, block_banners_by_heuristics
		return err
	}
	if err := r.checkFailedRequests(ctx); err != nil { // fail_if_request_failed
		return err
	}
	return r.checkContent(ctx) // fail_if_content_*
}

// hover moves the mouse over the middle of the first match of sel, as click does before it
// presses, so that :hover styles and mouseover handlers apply.
func (r *render) hover(ctx context.Context, sel string) error {
	if err := r.waitElement(ctx, "hover", sel, false); err != nil {
		return err
	}
	var pt struct {
		Found bool    `json:"found"`
		X     float64 `json:"x"`
		Y     float64 `json:"y"`
	}
	if err := r.eval(ctx, jsCall(clickPointJS, sel), &pt); err != nil {
		return err
	}
	if !pt.Found || math.IsNaN(pt.X) || math.IsNaN(pt.Y) {
		return shotd.Errorf(shotd.CodeSelectorNotFound, "hover %q matched nothing that can be hovered", clipText(sel))
	}
	r.t.over.pointer = true // the wipe moves it away
	if err := r.t.c.Input.DispatchMouseEvent(ctx, input.NewDispatchMouseEventArgs("mouseMoved", pt.X, pt.Y)); err != nil {
		return err
	}
	return r.eval(ctx, paintedJS, nil) // let the hover styles paint before the capture
}
