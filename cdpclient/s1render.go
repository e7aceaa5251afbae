package cdpclient

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/mafredri/cdp/protocol/network"
	"github.com/mafredri/cdp/protocol/page"
	_ "golang.org/x/image/webp" // decode a webp capture for full_page_slices

	"github.com/shotd/shotd"
)

// The ScreenshotOne options that take part in the render itself: the metadata of
// the JSON answer, full_page_slices, full_page_algorithm=by_sections, navigation_timeout,
// fail_if_request_failed, block_socials and block_banners_by_heuristics. render.go calls in at
// a few places; everything else is here.

var errNavigationTimeout = errors.New("navigation timeout")

// maxContentBytes bounds metadata_content: the page's HTML travels in one DevTools message and,
// for markdown, is converted in memory.
const maxContentBytes = 32 << 20

// s1State is what the render keeps for these options.
type s1State struct {
	net    *s1Network      // response and failure events; nil when no option needs them
	navCtx context.Context // navigate's and wait's context under navigation_timeout
	meta   *shotd.Metadata
	extras []shotd.Extra
	slices []shotd.Slice
	zipped bool // Data is a zip of the slices
	width  int  // the size of the sliced image, when zipped
	height int
}

// scriptsWaitIdle reports whether scripts_wait_until asks for a quiet network.
func (r *render) scriptsWaitIdle() bool {
	return r.scriptsIdleMax() >= 0
}

// scriptsIdleMax is how many requests may stay in flight after the scripts (networkidle0: 0,
// networkidle2: 2), -1 when scripts_wait_until asks for no network idleness.
func (r *render) scriptsIdleMax() int {
	n := -1
	for _, w := range r.o.S1.ScriptsWaitUntil {
		switch w {
		case "networkidle0":
			n = 0
		case "networkidle2":
			if n < 0 {
				n = 2
			}
		}
	}
	return n
}

// s1Network reads the Network events that metadata_http_* and fail_if_request_failed need. It
// is read synchronously (drain): an event Chrome sent before the answer to a later command is
// buffered by then, so nothing is missed and nothing races.
type s1Network struct {
	mu       sync.Mutex
	sent     network.RequestWillBeSentClient
	received network.ResponseReceivedClient
	failed   network.LoadingFailedClient
	finished network.LoadingFinishedClient
	urls     map[network.RequestID]string
	ended    map[network.RequestID]bool
	doc      *network.Response // the main frame's latest document response
	// failures holds the error text of each request that failed. The streams are read in no
	// particular order among themselves, so a failure may be read before its request: the
	// URL is looked up at the check.
	failures map[network.RequestID]string
}

func (r *render) s1NeedsNetwork() bool {
	s := &r.o.S1
	return len(s.FailIfRequestFailed) > 0 || (!r.html && (s.MetaStatusCode || s.MetaHeaders))
}

// s1StartNetwork subscribes to the events and enables Network (undone by the wipe).
func (r *render) s1StartNetwork(ctx context.Context) error {
	if !r.s1NeedsNetwork() {
		return nil
	}
	n := &s1Network{urls: map[network.RequestID]string{}, ended: map[network.RequestID]bool{},
		failures: map[network.RequestID]string{}}
	var err error
	if n.sent, err = r.t.c.Network.RequestWillBeSent(ctx); err != nil {
		return err
	}
	if n.received, err = r.t.c.Network.ResponseReceived(ctx); err != nil {
		return err
	}
	if n.failed, err = r.t.c.Network.LoadingFailed(ctx); err != nil {
		return err
	}
	if n.finished, err = r.t.c.Network.LoadingFinished(ctx); err != nil {
		return err
	}
	r.s1.net = n
	r.t.over.network = true
	return r.t.c.Network.Enable(ctx, network.NewEnableArgs())
}

// drain reads every event buffered so far.
func (n *s1Network) drain(main string) error {
	return n.read(context.Background(), main, false)
}

// read reads the events buffered so far; with wait set, it reads one event, blocking for it
// (or for ctx) when none is buffered.
func (n *s1Network) read(ctx context.Context, main string, wait bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		which := n.buffered()
		if which < 0 {
			if !wait {
				return nil
			}
			if err := n.await(ctx); err != nil {
				return err
			}
			continue
		}
		if err := n.handle(which, main); err != nil {
			return err
		}
		if wait {
			return nil
		}
	}
}

// streams are the Ready channels of the four event streams, in handle's numbering.
func (n *s1Network) streams() [4]<-chan struct{} {
	return [4]<-chan struct{}{n.sent.Ready(), n.received.Ready(), n.failed.Ready(), n.finished.Ready()}
}

// buffered returns the first stream with an event buffered, or -1.
func (n *s1Network) buffered() int {
	for i, ready := range n.streams() {
		select {
		case <-ready:
			return i
		default:
		}
	}
	return -1
}

// await blocks until a stream has an event, or ctx ends.
func (n *s1Network) await(ctx context.Context) error {
	s := n.streams()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s[0]:
	case <-s[1]:
	case <-s[2]:
	case <-s[3]:
	}
	return nil
}

// handle reads one event of the stream which (streams' numbering).
func (n *s1Network) handle(which int, main string) error {
	switch which {
	case 0:
		ev, err := n.sent.Recv()
		if err != nil {
			return err
		}
		n.urls[ev.RequestID] = ev.Request.URL
	case 1:
		ev, err := n.received.Recv()
		if err != nil {
			return err
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID != nil && string(*ev.FrameID) == main {
			resp := ev.Response
			n.doc = &resp
		}
	case 2:
		ev, err := n.failed.Recv()
		if err != nil {
			return err
		}
		n.ended[ev.RequestID] = true
		// Cancelled requests (a navigation away, an aborted fetch) and the ones the render
		// blocked itself (guard, block_* options) are not failures of the page.
		if (ev.Canceled != nil && *ev.Canceled) || ev.BlockedReason != "" ||
			strings.Contains(ev.ErrorText, "ERR_BLOCKED_BY_CLIENT") || strings.Contains(ev.ErrorText, "ERR_ABORTED") {
			return nil
		}
		n.failures[ev.RequestID] = ev.ErrorText
	case 3:
		ev, err := n.finished.Recv()
		if err != nil {
			return err
		}
		n.ended[ev.RequestID] = true
	}
	return nil
}

// pending reports whether a request matching one of pats was sent and has not ended.
func (n *s1Network) pending(pats []urlPattern) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, u := range n.urls {
		if n.ended[id] {
			continue
		}
		for _, p := range pats {
			if p.match(u) {
				return true
			}
		}
	}
	return false
}

// s1CheckRequests fails the render when a request that fail_if_request_failed names failed. The
// matching requests still under way are waited for, within the loading time, so that their
// outcome is known.
func (r *render) s1CheckRequests(ctx context.Context) error {
	pats := r.o.S1.FailIfRequestFailed
	if len(pats) == 0 || r.s1.net == nil {
		return nil
	}
	compiled := make([]urlPattern, 0, len(pats))
	for _, p := range pats {
		compiled = append(compiled, compilePattern(strings.TrimSpace(p)))
	}
	main := string(r.t.frameID)
	if err := r.s1.net.drain(main); err != nil {
		return err
	}
	// A request that never ends (a long poll, or one of a replaced document, which gets no end
	// event) is waited for no longer than a selector would be: then what is known decides.
	wctx, cancel := context.WithDeadline(ctx, selectorDeadline(ctx, r.load.timeout))
	defer cancel()
	for r.s1.net.pending(compiled) {
		if err := r.s1.net.read(wctx, main, true); err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				break
			}
			return err
		}
	}
	r.s1.net.mu.Lock()
	defer r.s1.net.mu.Unlock()
	for id, why := range r.s1.net.failures {
		u := r.s1.net.urls[id]
		for _, p := range compiled {
			if p.match(u) {
				name := netError.FindString(why)
				if name == "" {
					name = "a network error"
				}
				return shotd.Errorf(shotd.CodeNavigationFailed, "a request matching fail_if_request_failed failed: %s (%s)", clipText(u), name)
			}
		}
	}
	return nil
}

// navBounded bounds navigate and wait by navigation_timeout, counted from the navigation's start.
// The two share one context, which lives until the render's: navigate subscribes to events on it
// that wait reads, and a stream ends with its context.
func (r *render) navBounded(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		d := r.o.S1.NavigationTimeout
		if d <= 0 || r.html {
			return run(ctx)
		}
		if r.s1.navCtx == nil {
			nctx, cancel := context.WithDeadlineCause(ctx, time.Now().Add(d), errNavigationTimeout)
			context.AfterFunc(ctx, cancel)
			r.s1.navCtx = nctx
		}
		nctx := r.s1.navCtx
		err := run(nctx)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(nctx), errNavigationTimeout) {
			return shotd.Wrap(shotd.CodeTimeout, err, fmt.Sprintf("the page did not load within the navigation_timeout of %s", d))
		}
		return err
	}
}

// socialHosts are the hosts of social-media widgets and embeds that block_socials blocks.
var socialHosts = []string{
	"platform.twitter.com", "syndication.twitter.com", "platform.x.com", "cdn.syndication.twimg.com",
	"connect.facebook.net", "www.facebook.com/plugins/*", "www.facebook.com/v*/plugins/*", "facebook.com/plugins/*",
	"platform.linkedin.com", "www.linkedin.com/embed/*", "assets.pinterest.com", "widgets.pinterest.com",
	"www.instagram.com/embed.js*", "www.instagram.com/p/*/embed*", "www.tiktok.com/embed*", "www.tiktok.com/embed.js",
	"embed.reddit.com", "embed.redditmedia.com", "s7.addthis.com", "*.addthis.com", "platform-api.sharethis.com",
	"static.addtoany.com", "apis.google.com/js/platform.js", "www.youtube.com/subscribe_embed*",
	"widgets.tumblr.com", "assets.tumblr.com/*/embed*", "platform.vk.com", "vk.com/js/api/openapi.js*",
	"telegram.org/js/telegram-widget.js*", "embed.bsky.app",
}

// socialPatterns are socialHosts as block_requests patterns.
func socialPatterns() []urlPattern {
	ps := make([]urlPattern, 0, len(socialHosts))
	for _, h := range socialHosts {
		ps = append(ps, compilePattern(h))
	}
	return ps
}

// socialCSS hides the places where the widgets would have been.
const socialCSS = `.twitter-tweet, .twitter-timeline, .twitter-share-button, .twitter-follow-button,
.fb-like, .fb-share-button, .fb-page, .fb-post, .fb-comments, .fb-video, .fb-follow,
.instagram-media, .tiktok-embed, .reddit-embed-bq, .bluesky-embed, .linkedin-share,
.IN-widget, .addthis_toolbox, .addthis_inline_share_toolbox, .sharethis-inline-share-buttons,
.a2a_kit, .pinterest-embed, [data-pin-do], .tumblr-post, .telegram-post,
iframe[src*="facebook.com/plugins"], iframe[src*="platform.twitter.com"], iframe[src*="instagram.com"],
iframe[src*="tiktok.com/embed"], iframe[src*="linkedin.com/embed"], iframe[src*="embed.reddit.com"]
{ display: none !important; }`

// bannersJS hides what block_banners_by_heuristics finds: boxes fixed or sticky to the top or
// bottom edge that are wide and not the page's own header or navigation, and fixed boxes that
// cover most of the viewport (overlays, modals). It returns how many it hid.
const bannersJS = `(() => {
	const vw = innerWidth, vh = innerHeight;
	let hidden = 0;
	const isNav = el => el.matches('header, nav, [role=banner], [role=navigation]') ||
		el.querySelector(':scope > nav, :scope > header, :scope [role=navigation]') !== null;
	for (const el of document.querySelectorAll('body *')) {
		const cs = getComputedStyle(el);
		if (cs.position !== 'fixed' && cs.position !== 'sticky') continue;
		if (cs.display === 'none' || cs.visibility === 'hidden') continue;
		const r = el.getBoundingClientRect();
		if (r.width <= 0 || r.height <= 0) continue;
		const wide = r.width >= vw * 0.6;
		const edge = r.top <= 2 || r.bottom >= vh - 2;
		const overlay = r.width >= vw * 0.8 && r.height >= vh * 0.8;
		const banner = wide && edge && r.height <= vh * 0.5 && !isNav(el);
		if (overlay || banner) {
			el.style.setProperty('display', 'none', 'important');
			hidden++;
		}
	}
	if (hidden) {
		for (const el of [document.documentElement, document.body]) {
			if (el && getComputedStyle(el).overflow === 'hidden') el.style.setProperty('overflow', 'auto', 'important');
		}
	}
	return hidden;
})()`

// s1Hide applies block_socials' CSS and block_banners_by_heuristics before the capture.
func (r *render) s1Hide(ctx context.Context) error {
	if r.o.S1.BlockSocials {
		js := `(css) => { const s = new CSSStyleSheet(); s.replaceSync(css); document.adoptedStyleSheets = [...document.adoptedStyleSheets, s]; }`
		if err := r.eval(ctx, jsCall(js, socialCSS), nil); err != nil {
			return err
		}
	}
	if r.o.S1.BlockBannersByHeuristics {
		if err := r.eval(ctx, bannersJS, nil); err != nil {
			return err
		}
		return r.eval(ctx, paintedJS, nil)
	}
	return nil
}

// splitSelectorList cuts a CSS selector list at its top-level commas.
func splitSelectorList(sel string) []string {
	var parts []string
	depth, start := 0, 0
	var quote rune
	for i, c := range sel {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(sel[start:i]))
			start = i + 1
		}
	}
	parts = append(parts, strings.TrimSpace(sel[start:]))
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// metadataJS reads what the metadata_* options ask for from the page.
const metadataJS = `async (want) => {
	const out = {};
	if (want.title) out.title = String(document.title || '');
	if (want.og) {
		const og = {};
		for (const m of document.querySelectorAll('meta[property^="og:"], meta[name^="og:"]')) {
			const k = String(m.getAttribute('property') || m.getAttribute('name') || '').slice(3);
			const v = m.getAttribute('content');
			if (k && v !== null && !(k in og)) og[k] = String(v);
		}
		out.og = og;
	}
	if (want.icon) {
		let icon = null;
		for (const l of document.querySelectorAll('link[rel][href]')) {
			const rel = String(l.getAttribute('rel')).toLowerCase().split(/\s+/);
			if (rel.includes('icon') || rel.includes('apple-touch-icon')) {
				icon = {url: l.href, type: String(l.getAttribute('type') || '')};
				break;
			}
		}
		if (!icon && /^https?:$/.test(location.protocol)) icon = {url: location.origin + '/favicon.ico', type: ''};
		out.icon = icon;
	}
	if (want.fonts) {
		try { await document.fonts.ready; } catch (e) {}
		const fams = new Set();
		const clean = f => f.trim().replace(/^["']|["']$/g, '');
		for (const f of document.fonts) if (f.status === 'loaded') fams.add(clean(f.family));
		let n = 0;
		for (const el of document.querySelectorAll('body, body *')) {
			if (++n > 5000) break;
			if (![...el.childNodes].some(c => c.nodeType === 3 && c.textContent.trim())) continue;
			const ff = getComputedStyle(el).fontFamily;
			if (ff) fams.add(clean(ff.split(',')[0]));
		}
		out.fonts = [...fams].filter(Boolean);
	}
	if (want.content) {
		const d = document.documentElement;
		let html = '';
		if (d) {
			if (want.shadow && d.getHTML) {
				const roots = [];
				const walk = n => { for (const el of n.querySelectorAll('*')) if (el.shadowRoot) { roots.push(el.shadowRoot); walk(el.shadowRoot); } };
				walk(document);
				html = d.getHTML({serializableShadowRoots: true, shadowRoots: roots});
				html = '<html>' + html + '</html>';
			} else {
				html = d.outerHTML;
			}
		}
		const dt = document.doctype;
		out.content = (dt ? '<!DOCTYPE ' + dt.name + '>\n' : '') + html;
	}
	return out;
}`

// s1Finish runs after the capture: the page metadata and the slices. It is the render's last
// step.
func (r *render) s1Finish(ctx context.Context) error {
	s := &r.o.S1
	if s.WantsMetadata() {
		if err := r.readMetadata(ctx); err != nil {
			return err
		}
	}
	if s.Slices && r.o.FullPage && r.video == nil && r.format != shotd.FormatPDF {
		return r.slice(ctx)
	}
	return nil
}

// readMetadata reads what the metadata_* options ask for: from the page (title, Open Graph,
// icon, fonts, content) and from its document's answer (status code, headers).
func (r *render) readMetadata(ctx context.Context) error {
	s := &r.o.S1
	want := map[string]bool{"title": s.MetaPageTitle, "og": s.MetaOpenGraph, "icon": s.MetaIcon,
		"fonts": s.MetaFonts, "content": s.MetaContent, "shadow": s.IncludeShadowDOM}
	var got struct {
		Title   *string           `json:"title"`
		OG      map[string]string `json:"og"`
		Icon    *shotd.Icon       `json:"icon"`
		Fonts   []string          `json:"fonts"`
		Content *string           `json:"content"`
	}
	if err := r.eval(ctx, jsCall(metadataJS, want), &got); err != nil {
		return fmt.Errorf("read the page's metadata: %w", err)
	}
	// What is asked for is always in the answer, empty rather than null: the page's own scripts
	// run beside metadataJS and may have spoiled what it returns.
	m := &shotd.Metadata{Icon: got.Icon}
	if s.MetaPageTitle {
		m.PageTitle = new(string)
		if got.Title != nil {
			*m.PageTitle = *got.Title
		}
	}
	if s.MetaOpenGraph {
		m.OpenGraph = make(map[string]string, len(got.OG))
		maps.Copy(m.OpenGraph, got.OG)
	}
	if s.MetaFonts {
		m.Fonts = append([]string{}, got.Fonts...)
		sort.Strings(m.Fonts)
	}
	if s.MetaContent && got.Content != nil {
		ref, err := r.contentFile(*got.Content)
		if err != nil {
			return err
		}
		m.Content = ref
	}
	if r.s1.net != nil && (s.MetaStatusCode || s.MetaHeaders) {
		if err := r.documentAnswer(m); err != nil {
			return err
		}
	}
	r.s1.meta = m
	return nil
}

// contentFile keeps the page's content as a file of the render (metadata_content), in
// metadata_content_format.
func (r *render) contentFile(html string) (*shotd.FileRef, error) {
	if len(html) > maxContentBytes {
		return nil, shotd.Errorf(shotd.CodeContentTooLarge, "the page's content is %d bytes; metadata_content takes at most %d", len(html), maxContentBytes)
	}
	x := shotd.Extra{Data: []byte(html), Format: "html", ContentType: "text/html; charset=utf-8"}
	if r.o.S1.MetaContentFormat == "markdown" {
		md, err := htmltomarkdown.ConvertString(html, converter.WithDomain(r.pageURL()))
		if err != nil {
			return nil, fmt.Errorf("convert the content to markdown: %w", err)
		}
		x = shotd.Extra{Data: []byte(md), Format: "md", ContentType: "text/markdown; charset=utf-8"}
	}
	ref := &shotd.FileRef{Extra: len(r.s1.extras), Format: x.Format}
	r.s1.extras = append(r.s1.extras, x)
	return ref, nil
}

// documentAnswer puts the status code and the headers (names in lower case) of the page's
// document into m, as far as asked for.
func (r *render) documentAnswer(m *shotd.Metadata) error {
	if err := r.s1.net.drain(string(r.t.frameID)); err != nil {
		return err
	}
	doc := r.s1.net.doc
	if doc == nil {
		return nil
	}
	if r.o.S1.MetaStatusCode {
		m.HTTPResponseStatusCode = doc.Status
	}
	if r.o.S1.MetaHeaders {
		var hs map[string]string
		_ = json.Unmarshal(doc.Headers, &hs)
		m.HTTPResponseHeaders = make(map[string]string, len(hs))
		for k, v := range hs {
			m.HTTPResponseHeaders[strings.ToLower(k)] = v
		}
	}
	return nil
}

// slice cuts the full-page image into full_page_slice_height slices that overlap by
// full_page_slice_overlap_height, encoded like the image. A JSON answer or a job gets them as
// files of their own; any other answer is a zip of them.
func (r *render) slice(ctx context.Context) error {
	h := r.o.S1.SliceHeight
	if h <= 0 {
		h = shotd.DefaultSliceHeight
	}
	overlap := min(max(r.o.S1.SliceOverlap, 0), h-1)
	// The page's height decides the count: refused from the image's header, before a single
	// slice is decoded or encoded.
	iw, ih, err := imageSize(r.format, r.data)
	if err != nil {
		return fmt.Errorf("read the capture's size to slice it: %w", err)
	}
	if n := shotd.SliceCount(ih, h, overlap); n > shotd.MaxSlices {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the %d px high image would make %d slices of %d px; at most %d are allowed (raise full_page_slice_height, lower full_page_slice_overlap_height or full_page_max_height)", ih, n, h, shotd.MaxSlices)
	}
	if px := int64(shotd.SliceRows(ih, h, overlap)) * int64(iw); px > maxCapturePixels {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the slices of the %dx%d px image would hold %d pixels, more than %d (lower full_page_slice_overlap_height)", iw, ih, px, maxCapturePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(r.data))
	if err != nil {
		return fmt.Errorf("decode the capture to slice it: %w", err)
	}
	b := img.Bounds()
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return fmt.Errorf("slice: %T cannot be cut", img)
	}
	var slices []shotd.Slice
	var files []shotd.Extra
	for y, i := 0, 0; ; i++ {
		if err := ctx.Err(); err != nil { // the render's deadline: encoding is the long part
			return err
		}
		bottom := min(y+h, b.Dy())
		part := sub.SubImage(image.Rect(b.Min.X, b.Min.Y+y, b.Max.X, b.Min.Y+bottom))
		data, err := r.encode(ctx, part)
		if err != nil {
			return err
		}
		files = append(files, shotd.Extra{Data: data, Format: r.format, ContentType: shotd.ContentTypes[r.format]})
		slices = append(slices, shotd.Slice{Index: i, OffsetY: y, Width: b.Dx(), Height: bottom - y,
			FileRef: shotd.FileRef{Format: r.format}})
		if bottom >= b.Dy() {
			break
		}
		y = bottom - overlap
	}
	if r.o.ResponseType == "json" || r.o.Async {
		for i := range slices {
			slices[i].Extra = len(r.s1.extras)
			r.s1.extras = append(r.s1.extras, files[i])
		}
		r.s1.slices = slices
		return nil
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	ext := map[string]string{shotd.FormatJPEG: "jpg"}[r.format]
	if ext == "" {
		ext = r.format
	}
	for i, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("slice-%03d.%s", i, ext), Method: zip.Store})
		if err != nil {
			return err
		}
		if _, err := w.Write(f.Data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	r.data, r.s1.zipped, r.s1.width, r.s1.height = buf.Bytes(), true, b.Dx(), b.Dy()
	r.s1.slices = nil
	return nil
}

// s1Output puts the metadata and the slices into out.
func (r *render) s1Output(out *shotd.Output) {
	if m := r.s1.meta; m != nil {
		if r.o.S1.MetaImageSize && out.Width > 0 {
			m.ImageSize = &shotd.ImageSize{Width: out.Width, Height: out.Height}
		}
		out.Metadata = m
	}
	out.Extras, out.Slices = r.s1.extras, r.s1.slices
	if r.s1.zipped {
		out.Format, out.ContentType = "zip", "application/zip"
	}
}

// bySections captures the full page as a visitor sees it scrolling: the viewport at each
// position down the page, stitched. Sticky and fixed elements appear in every section, and
// content that reacts to scrolling is captured in the state it has there.
func (r *render) bySections(ctx context.Context, a *area) ([]tile, error) {
	var vh float64
	if err := r.eval(ctx, `innerHeight`, &vh); err != nil {
		return nil, err
	}
	if !(vh >= 1) || math.IsInf(vh, 0) {
		vh = float64(r.height)
	}
	var ts []tile
	for top := 0.0; top < a.h; top += vh {
		var y float64
		js := `async (y) => { scrollTo({top: y, left: 0, behavior: 'instant'});
			await new Promise(res => requestAnimationFrame(() => requestAnimationFrame(res))); return scrollY; }`
		if err := r.eval(ctx, jsCall(js, top), &y); err != nil {
			return nil, err
		}
		// The page may not scroll as far as asked (the last section): capture from where it is.
		from := math.Max(top, y)
		part := math.Min(vh-(from-y), a.h-from)
		if part <= 0 {
			break
		}
		clip := page.Viewport{X: 0, Y: from, Width: a.w, Height: part, Scale: 1}
		shot, err := r.t.c.Page.CaptureScreenshot(ctx, page.NewCaptureScreenshotArgs().SetFormat("png").
			SetOptimizeForSpeed(true).SetClip(clip))
		if err != nil {
			return nil, err
		}
		ts = append(ts, tile{y: r.devicePx(from), data: shot.Data})
		top = from + part - vh // the next section starts where this one ended
	}
	if err := r.eval(ctx, `scrollTo({top: 0, left: 0, behavior: 'instant'})`, nil); err != nil {
		return nil, err
	}
	return ts, nil
}
