package cdpclient

import (
	"context"
	"fmt"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/shotd/shotd"
)

// The document formats (html, markdown): the page's DOM as the capture would have shown it,
// after the waits, scripts, clicks and delay, serialized instead of captured.

// documentJS serializes the main frame's document without what the render hid: the elements
// that the render's own style rules set to display: none (hide_selectors, block_socials, the
// blocker's element hiding, the styles option) and, with block_banners_by_heuristics, the
// banners it hid inline. The live page is not changed: the elements are found in it, where
// every selector matches as in the capture, and removed from a copy at the same places.
const documentJS = `(hide, css, banners) => {
	const d = document.documentElement;
	if (!d) return '';
	const sels = [...hide];
	const collect = rules => {
		for (const r of rules) {
			if (r.selectorText !== undefined) {
				if (r.style.getPropertyValue('display').trim() === 'none') sels.push(r.selectorText);
			} else if (r.cssRules && (!r.media || matchMedia(r.media.mediaText).matches)) {
				collect(r.cssRules);
			}
		}
	};
	for (const text of css) {
		const s = new CSSStyleSheet();
		try { s.replaceSync(text); } catch (e) { continue; }
		collect(s.cssRules);
	}
	const gone = new Set();
	for (const sel of sels) {
		try { for (const el of d.querySelectorAll(sel)) gone.add(el); } catch (e) {}
	}
	if (banners) {
		for (const el of d.querySelectorAll('body *')) {
			if (el.style.getPropertyValue('display') === 'none' && el.style.getPropertyPriority('display') === 'important') gone.add(el);
		}
	}
	const path = el => {
		const p = [];
		for (let n = el; n !== d; n = n.parentNode) p.push(Array.prototype.indexOf.call(n.parentNode.childNodes, n));
		return p.reverse();
	};
	const copy = d.cloneNode(true);
	const at = p => p.reduce((n, i) => n && n.childNodes[i], copy);
	for (const el of [...gone].map(el => at(path(el)))) if (el && el.parentNode) el.remove();
	const dt = document.doctype;
	return (dt ? '<!DOCTYPE ' + dt.name + '>\n' : '') + copy.outerHTML;
}`

// captureDocument serializes the page as the render's data: its HTML, or that HTML converted to
// Markdown by the converter of metadata_content.
func (r *render) captureDocument(ctx context.Context) error {
	hide := r.o.HideSelectors
	if hide == nil {
		hide = []string{}
	}
	css := []string{r.o.Styles}
	if r.blocker != nil {
		css = append(css, r.blocker.HideCSS(r.pageURL()))
	}
	if r.o.BlockSocials {
		css = append(css, socialCSS)
	}
	var html string
	if err := r.eval(ctx, jsCall(documentJS, hide, css, r.o.BlockBannersByHeuristics), &html); err != nil {
		return fmt.Errorf("serialize the page: %w", err)
	}
	if len(html) > maxContentBytes {
		return shotd.Errorf(shotd.CodeContentTooLarge, "the page's HTML is %d bytes; the %s format takes at most %d", len(html), r.format, maxContentBytes)
	}
	if r.format == shotd.FormatHTML {
		r.data = []byte(html)
		return nil
	}
	md, err := r.toMarkdown(html)
	if err != nil {
		return err
	}
	r.data = []byte(md)
	return nil
}

// toMarkdown converts the page's HTML to Markdown, its relative links made absolute against the
// page's address.
func (r *render) toMarkdown(html string) (string, error) {
	md, err := htmltomarkdown.ConvertString(html, converter.WithDomain(r.pageURL()))
	if err != nil {
		return "", fmt.Errorf("convert the page to markdown: %w", err)
	}
	return md, nil
}
