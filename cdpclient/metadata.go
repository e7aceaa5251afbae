package cdpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/shotd/shotd"
)

// The metadata of the JSON answer (metadata_*): what the page shows (title, Open Graph, icon,
// fonts, content) and its document's answer (status code, headers).

// maxContentBytes bounds metadata_content: the page's HTML travels in one DevTools message and,
// for markdown, is converted in memory.
const maxContentBytes = 32 << 20

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

// readMetadata reads what the metadata_* options ask for: from the page (title, Open Graph,
// icon, fonts, content) and from its document's answer (status code, headers).
func (r *render) readMetadata(ctx context.Context) error {
	s := r.o
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
	if r.side.net != nil && (s.MetaStatusCode || s.MetaHeaders) {
		if err := r.documentAnswer(m); err != nil {
			return err
		}
	}
	r.side.meta = m
	return nil
}

// contentFile keeps the page's content as a file of the render (metadata_content), in
// metadata_content_format.
func (r *render) contentFile(html string) (*shotd.FileRef, error) {
	if len(html) > maxContentBytes {
		return nil, shotd.Errorf(shotd.CodeContentTooLarge, "the page's content is %d bytes; metadata_content takes at most %d", len(html), maxContentBytes)
	}
	x := shotd.Extra{Data: []byte(html), Format: "html", ContentType: "text/html; charset=utf-8"}
	if r.o.MetaContentFormat == "markdown" {
		md, err := r.toMarkdown(html) // document.go
		if err != nil {
			return nil, err
		}
		x = shotd.Extra{Data: []byte(md), Format: "md", ContentType: "text/markdown; charset=utf-8"}
	}
	ref := &shotd.FileRef{Extra: len(r.side.extras), Format: x.Format}
	r.side.extras = append(r.side.extras, x)
	return ref, nil
}

// documentAnswer puts the status code and the headers (names in lower case) of the page's
// document into m, as far as asked for.
func (r *render) documentAnswer(m *shotd.Metadata) error {
	if err := r.side.net.drain(string(r.t.frameID)); err != nil {
		return err
	}
	doc := r.side.net.doc
	if doc == nil {
		return nil
	}
	if r.o.MetaStatusCode {
		m.HTTPResponseStatusCode = doc.Status
	}
	if r.o.MetaHeaders {
		var hs map[string]string
		_ = json.Unmarshal(doc.Headers, &hs)
		m.HTTPResponseHeaders = make(map[string]string, len(hs))
		for k, v := range hs {
			m.HTTPResponseHeaders[strings.ToLower(k)] = v
		}
	}
	return nil
}
