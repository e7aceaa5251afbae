package cdpclient

import "context"

// Hiding before the capture: block_socials' widgets and block_banners_by_heuristics' banners.

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

// hideWidgets applies block_socials' CSS and block_banners_by_heuristics before the capture.
func (r *render) hideWidgets(ctx context.Context) error {
	if r.o.BlockSocials {
		js := `(css) => { const s = new CSSStyleSheet(); s.replaceSync(css); document.adoptedStyleSheets = [...document.adoptedStyleSheets, s]; }`
		if err := r.eval(ctx, jsCall(js, socialCSS), nil); err != nil {
			return err
		}
	}
	if r.o.BlockBannersByHeuristics {
		if err := r.eval(ctx, bannersJS, nil); err != nil {
			return err
		}
		return r.eval(ctx, paintedJS, nil)
	}
	return nil
}
