package cdpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mafredri/cdp/protocol/emulation"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/shotd/shotd"
)

// acceptLanguage is the value of the render's Accept-Language header (the headers option), ""
// when it sends none.
func acceptLanguage(o *shotd.Options) string {
	for _, h := range o.Headers {
		if strings.EqualFold(h.Name, "Accept-Language") {
			return strings.TrimSpace(h.Value)
		}
	}
	return ""
}

// emulateLocale gives the page the locale its Accept-Language header asks for, as a browser set
// to that language would have (ScreenshotOne's localization guide): Intl formats for the first
// language (Emulation.setLocaleOverride) and navigator.language(s) list them all (the
// acceptLanguage of Emulation.setUserAgentOverride, which needs the user agent: the render's, or
// the one the browser was launched with).
func (r *render) emulateLocale(ctx context.Context) error {
	al := acceptLanguage(r.o)
	if al == "" {
		return nil
	}
	// The languages in the header's order, without their q weights, as navigator.languages has them.
	var tags []string
	for _, part := range strings.Split(al, ",") {
		tag, _, _ := strings.Cut(part, ";")
		if tag = strings.TrimSpace(tag); tag != "" && tag != "*" {
			tags = append(tags, tag)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	locale := tags[0]
	c := r.t.c
	r.t.over.locale = true
	if err := c.Emulation.SetLocaleOverride(ctx, emulation.NewSetLocaleOverrideArgs().SetLocale(locale)); err != nil {
		if isResponseError(err) {
			return invalidOption("headers", fmt.Sprintf("Accept-Language %q names no locale the browser knows", clipText(locale)))
		}
		return err
	}
	ua := r.o.UserAgent
	if ua == "" {
		rep, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs("navigator.userAgent").SetReturnByValue(true))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(rep.Result.Value, &ua); err != nil || ua == "" {
			return fmt.Errorf("read the user agent: %v", err)
		}
	}
	r.t.over.userAgent = true
	return c.Emulation.SetUserAgentOverride(ctx, emulation.NewSetUserAgentOverrideArgs(ua).SetAcceptLanguage(strings.Join(tags, ",")))
}

// undoLocale ends the locale override of emulateLocale; the user agent's is undone with it.
func (t *tab) undoLocale(ctx context.Context) error {
	return t.c.Emulation.SetLocaleOverride(ctx, emulation.NewSetLocaleOverrideArgs())
}
