package cdpclient

import (
	"testing"

	"github.com/mafredri/cdp/protocol/network"
)

// Tests of block_socials and block_banners_by_heuristics (hide.go).

func TestBlockSocials(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;background:#fff"><blockquote class="twitter-tweet" style="margin:0;height:100px;background:rgb(255,0,0)"></blockquote></body>`
	for _, block := range []bool{false, true} {
		o := htmlOpts(page)
		o.BlockSocials = block
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 10, 10) == [3]uint8{255, 0, 0}; red == block {
			t.Errorf("block_socials=%v: the embed shows = %v", block, red)
		}
	}
	o := htmlOpts(page)
	o.BlockSocials = true
	rr := newRequestRules(o, nil)
	for u, want := range map[string]bool{
		"https://platform.twitter.com/widgets.js":            true,
		"https://connect.facebook.net/en_US/sdk.js":          true,
		"https://www.facebook.com/plugins/like.php?href=x":   true,
		"https://www.instagram.com/embed.js":                 true,
		"https://example.com/twitter.js":                     false,
		"https://www.facebook.com/somepage":                  false,
		"https://static.example.org/platform.twitter.com.js": false,
	} {
		if got := rr.blocks(u, network.ResourceTypeScript, false, ""); got != want {
			t.Errorf("blocks(%s) = %v, want %v", u, got, want)
		}
	}
}

func TestBannersByHeuristics(t *testing.T) {
	t.Parallel()
	page := `<!doctype html><body style="margin:0;background:#fff;height:2000px">
<header style="position:fixed;top:0;left:0;right:0;height:40px;background:rgb(0,0,255)"><nav>menu</nav></header>
<div style="position:fixed;bottom:0;left:0;right:0;height:60px;background:rgb(255,0,0)">We use cookies</div></body>`
	for _, block := range []bool{false, true} {
		o := htmlOpts(page)
		o.BlockBannersByHeuristics = block
		img := decodePNG(t, mustRender(t, shared, o).Data)
		if red := rgbAt(img, 200, 280) == [3]uint8{255, 0, 0}; red == block {
			t.Errorf("block_banners_by_heuristics=%v: the banner shows = %v", block, red)
		}
		if got := rgbAt(img, 200, 10); got != [3]uint8{0, 0, 255} {
			t.Errorf("block_banners_by_heuristics=%v: the header is %v, want kept", block, got)
		}
	}
}
