package cdpclient

import (
	"context"
	"strings"

	"github.com/shotd/shotd"
)

// contentJS is the page's text and HTML, lower-cased, for the fail_if_content_* checks.
const contentJS = `(() => {
	const d = document.documentElement;
	return d ? ((document.body ? document.body.innerText : '') + '\n' + d.outerHTML).toLowerCase() : '';
})()`

// checkContent runs the fail_if_content_* checks on what the page ended up showing, with
// ScreenshotOne's meaning for several texts: any one of fail_if_content_contains found fails
// the render, and so does any one of fail_if_content_missing absent.
func (r *render) checkContent(ctx context.Context) error {
	o := r.o
	if len(o.FailIfContentContains) == 0 && len(o.FailIfContentMissing) == 0 {
		return nil
	}
	var content string
	if err := r.eval(ctx, contentJS, &content); err != nil {
		return err
	}
	for _, s := range o.FailIfContentContains {
		if strings.Contains(content, strings.ToLower(s)) {
			return shotd.Errorf(shotd.CodeContentCheckFailed, "the page contains %q (fail_if_content_contains)", clipText(s))
		}
	}
	for _, s := range o.FailIfContentMissing {
		if !strings.Contains(content, strings.ToLower(s)) {
			return shotd.Errorf(shotd.CodeContentCheckFailed, "the page lacks %q (fail_if_content_missing)", clipText(s))
		}
	}
	return nil
}
