package cdpclient

// ScreenshotOne's `shadow/` selectors. A selector option (selector, click, hover,
// wait_for_selector, wait_for_selector_hidden, scroll_into_view, hide_selectors) that starts
// with `shadow/` is a CSS selector matched across open shadow roots, as the query handler they
// register under that name (query-selector-shadow-dom) does: every element of the document and
// of each open shadow root, at any depth, is a candidate; the last compound of each descendant
// chain must match the element itself and the ones before it an ancestor, where a shadow root's
// ancestor is its host. Any other selector is plain CSS on the document, as before.
//
// withShadowQuery wraps a page function so that it may call shotdQuery(sel) (the first match or
// null) and shotdQueryAll(sel) (every match); both throw on a selector the browser cannot
// parse, as querySelector does.

// shadowPrefix marks a selector that pierces open shadow roots.
const shadowPrefix = "shadow/"

// shadowQueryJS defines shotdQuery and shotdQueryAll.
const shadowQueryJS = `
	const split = (s, comma) => {
		const out = [];
		let depth = 0, q = '', cur = '';
		for (let i = 0; i < s.length; i++) {
			const c = s[i];
			if (c === '\\') { cur += c + (s[++i] || ''); continue; }
			if (q) { cur += c; if (c === q) q = ''; continue; }
			if (c === '"' || c === "'") { q = c; cur += c; continue; }
			if (c === '(' || c === '[') depth++;
			if (c === ')' || c === ']') depth--;
			if (depth === 0 && (comma ? c === ',' : /\s/.test(c))) { out.push(cur); cur = ''; continue; }
			cur += c;
		}
		out.push(cur);
		return out.map(t => t.trim()).filter(t => t);
	};
	// chain cuts one complex selector at its descendant combinators; the other combinators keep
	// their compounds together (matched within one tree).
	const chain = s => {
		const parts = [];
		for (const t of split(s, false)) {
			const prev = parts[parts.length - 1];
			if (prev !== undefined && (/^[>+~]/.test(t) || /[>+~]$/.test(prev))) parts[parts.length - 1] = prev + ' ' + t;
			else parts.push(t);
		}
		return parts;
	};
	const up = n => { const p = n.parentNode; return p instanceof ShadowRoot ? p.host : p; };
	const fits = (el, parts) => {
		if (!el.matches(parts[parts.length - 1])) return false;
		let n = up(el);
		for (let i = parts.length - 2; i >= 0; i--) {
			while (n && !(n.nodeType === 1 && n.matches(parts[i]))) n = up(n);
			if (!n) return false;
			n = up(n);
		}
		return true;
	};
	const deep = () => {
		const out = [];
		const walk = root => { for (const el of root.querySelectorAll('*')) { out.push(el); if (el.shadowRoot) walk(el.shadowRoot); } };
		walk(document);
		return out;
	};
	const shotdQueryAll = sel => {
		if (!sel.startsWith('shadow/')) return Array.from(document.querySelectorAll(sel));
		const chains = split(sel.slice(7), true).map(chain);
		if (!chains.length) throw new SyntaxError(JSON.stringify(sel) + ' has no selector after shadow/');
		for (const c of chains) for (const p of c) document.createDocumentFragment().querySelector(p); // throws when invalid
		return deep().filter(el => chains.some(c => fits(el, c)));
	};
	const shotdQuery = sel => sel.startsWith('shadow/') ? (shotdQueryAll(sel)[0] || null) : document.querySelector(sel);
`

// withShadowQuery returns fn, a page function expression, with shotdQuery and shotdQueryAll in
// its scope.
func withShadowQuery(fn string) string {
	return "(() => {" + shadowQueryJS + "\treturn (" + fn + ");\n})()"
}
