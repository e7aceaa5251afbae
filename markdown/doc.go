// Package markdown turns the markdown option into a complete, self-contained HTML page that the
// renderer then captures like the html option.
//
// It owns the Markdown dialect (goldmark with GFM: tables, task lists, strikethrough and
// autolinks; heading ids), code highlighting (chroma, written as CSS classes with a light and a
// dark style) and the embedded stylesheet. The page references nothing outside itself: no web
// fonts, no CDN, no images of ours. Only what the author wrote (links, images, raw HTML) points
// elsewhere.
//
// Goldmark and chroma cannot be stopped, and some inputs cost them far more than their size, so
// Convert first checks a source against limits no real document reaches (Check), then converts it
// in one of a bounded number of goroutines, waited for only until the caller's deadline
// (guard.go).
//
// Raw HTML inside the Markdown is passed through unchanged (goldmark's html.WithUnsafe), scripts
// included. That is deliberate: the page is rendered like the html option, in a fresh, isolated
// browser context whose every request goes through the egress guard, so raw HTML can do no more
// than an html source could. Do not serve the output of ToHTML to a browser that lacks those
// protections.
package markdown
