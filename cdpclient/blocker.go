package cdpclient

// Blocker is the hook of the ad, tracker, cookie-banner and chat lists. cdpclient asks it about
// every request of a render that uses it, before Chrome sends the request, and injects its
// element-hiding CSS after the page has loaded. Implementations must be safe for concurrent use.
type Blocker interface {
	// Block reports whether the request for url, made by the page whose main document is
	// pageURL ("" for an html source), must fail. resourceType is Chrome's resource type in
	// lower case (document, stylesheet, image, media, font, script, texttrack, xhr, fetch,
	// prefetch, eventsource, websocket, manifest, signedexchange, ping, cspviolationreport,
	// preflight, other), except that the document of a frame inside the page is "subdocument".
	// The main document itself is never asked about.
	Block(url, pageURL string, resourceType string) bool
	// HideCSS returns the element-hiding stylesheet for the page at pageURL ("" for none).
	HideCSS(pageURL string) string
}

// StartScripter is implemented by a Blocker that also needs a script in every document of the
// page before the page's own scripts run (for instance a consent-dialog handler). The script
// runs in the page's main world. With block_cookie_banners the render then waits, boundedly,
// after the load for an autoconsent started by that script to answer the page's consent dialog
// (consent.go); any other script is not waited for.
type StartScripter interface {
	StartScript() string
}
