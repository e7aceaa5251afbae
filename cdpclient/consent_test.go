package cdpclient

import (
	"fmt"
	"image"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/blocklist"
	"github.com/shotd/shotd/config"
)

// consentLibrary is the real block_cookie_banners of serve: the embedded hiding list and, unless
// hideOnly, autoconsent's standalone script as scripts/install-deps.sh installs it.
// stepTolerance is added to a step's designed bound before a test calls it too long: the bound
// is the step's own deadline, and a busy machine adds the time around it (the step's recording,
// a CDP round trip). A step that ignored its bound would overshoot by seconds.
const stepTolerance = 500 * time.Millisecond

func consentLibrary(t *testing.T, hideOnly bool) *blocklist.Library {
	t.Helper()
	lib := &blocklist.Library{Cookies: blocklist.CookieBanners()}
	if !hideOnly {
		js, err := blocklist.LoadAutoconsent(config.DefaultAutoconsent)
		if err != nil {
			t.Fatalf("%v (scripts/install-deps.sh installs autoconsent)", err)
		}
		lib.Consent = js
	}
	return lib
}

// useLibrary makes the shared browser pick its blocker from lib, as serve does, until the test
// ends.
func useLibrary(t *testing.T, lib *blocklist.Library) {
	shared.cfg.Blocker = func(o *shotd.Options) Blocker {
		if s := lib.Select(o.BlockAds, o.BlockTrackers, o.BlockCookieBanners, o.BlockChats); s != nil {
			return s
		}
		return nil
	}
	t.Cleanup(func() { shared.cfg.Blocker = nil })
}

// stepTimes records when each step of the next renders ended.
type stepTimes struct {
	mu  sync.Mutex
	end map[string]time.Time
}

func recordSteps(t *testing.T) *stepTimes {
	st := &stepTimes{end: map[string]time.Time{}}
	testHookAfterStep = func(step string, _ *tab) {
		st.mu.Lock()
		st.end[step] = time.Now()
		st.mu.Unlock()
	}
	t.Cleanup(func() { testHookAfterStep = nil })
	return st
}

// took is how long the step after prev took in the last render.
func (s *stepTimes) took(prev, step string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end[step].Sub(s.end[prev])
}

// oneTrustPage imitates OneTrust's banner closely enough for autoconsent's Onetrust rule: the
// #onetrust-banner-sdk region, fixed at the bottom (red), with the accept and "reject all"
// buttons. As on a real site, a click on either tells the server (/consent/reject or
// /consent/accept) and closes the banner; the reject click also paints a green bar at the top,
// so that the capture shows whether the click came before it. With reject false the banner has
// no reject button and no settings: autoconsent's opt-out then runs through its long fallback.
func oneTrustPage(base string, reject bool) string {
	rejectButton := ""
	if reject {
		rejectButton = `<button id="onetrust-reject-all-handler">Reject All</button>`
	}
	return fmt.Sprintf(`<!doctype html><html><head><title>shop</title></head>
<body style="margin:0;background:#fff">
<div id="bar" style="height:40px"></div>
<p>Products.</p>
<div id="onetrust-consent-sdk">
<div id="onetrust-banner-sdk" class="otFlat" role="region" aria-label="Cookie banner"
  style="position:fixed;left:0;right:0;bottom:0;height:100px;background:#f00;z-index:10">
  <div id="onetrust-policy-text">We use cookies to improve your experience and for marketing.</div>
  <div id="onetrust-button-group">
    <button id="onetrust-accept-btn-handler">Accept All Cookies</button>
    %s
  </div>
</div></div>
<script>
(() => {
  const banner = document.getElementById('onetrust-banner-sdk');
  const answer = (what) => {
    fetch(%q + '/consent/' + what, {method: 'POST'});
    banner.style.display = 'none';
  };
  document.getElementById('onetrust-accept-btn-handler').addEventListener('click', () => answer('accept'));
  const rej = document.getElementById('onetrust-reject-all-handler');
  if (rej) rej.addEventListener('click', () => {
    document.getElementById('bar').style.background = '#0f0';
    answer('reject');
  });
})();
</script></body></html>`, rejectButton, base)
}

// consentServer serves the OneTrust fixture at /, one without the reject button at /noreject and
// a page without any consent dialog at /plain, and counts the consent answers.
func consentServer(t *testing.T) (base string, answers func() map[string]int, reset func()) {
	var mu sync.Mutex
	got := map[string]int{}
	mux := http.NewServeMux()
	srv, _ := server(t, mux)
	base = srv.URL
	mux.HandleFunc("/{$}", htmlPage(oneTrustPage(base, true)))
	mux.HandleFunc("/noreject", htmlPage(oneTrustPage(base, false)))
	mux.HandleFunc("/plain", htmlPage(`<!doctype html><body style="margin:0;background:#fff"><h1>Hello</h1><p>No consent dialog here.</p>
<div style="position:fixed;left:0;right:0;bottom:0;height:100px;background:#00f"></div></body>`))
	mux.HandleFunc("POST /consent/{what}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*") // the html source's page is about:blank
		mu.Lock()
		got[r.PathValue("what")]++
		mu.Unlock()
	})
	answers = func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range got {
			out[k] = v
		}
		return out
	}
	reset = func() {
		mu.Lock()
		clear(got)
		mu.Unlock()
	}
	return base, answers, reset
}

// waitAnswers gives a fetch sent by a click just before the capture time to reach the server.
func waitAnswers(answers func() map[string]int, want string) map[string]int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := answers()
		if want == "" || got[want] > 0 || time.Now().After(deadline) {
			if want == "" {
				time.Sleep(300 * time.Millisecond) // nothing may arrive late either
				got = answers()
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsentRejects: with block_cookie_banners, autoconsent clicks the OneTrust banner's "reject
// all" before the capture (the server sees the answer, the capture shows the green bar the click
// paints and no banner); without the option the banner is captured and nobody answers it; with
// the hiding list alone the banner is hidden but not answered.
func TestConsentRejects(t *testing.T) {
	base, answers, reset := consentServer(t)
	red, green, white := [3]uint8{255, 0, 0}, [3]uint8{0, 255, 0}, [3]uint8{255, 255, 255}
	banner, bar := image.Pt(380, 290), image.Pt(200, 20) // in the 400x300 viewport
	tests := []struct {
		name     string
		hideOnly bool   // autoconsent not loaded (blocking.autoconsent empty or missing)
		block    bool   // block_cookie_banners
		html     bool   // the page as an html source rather than a URL
		answer   string // what the server must see, "" for nothing
		pixels   map[image.Point][3]uint8
	}{
		{name: "rejected", block: true, answer: "reject", pixels: map[image.Point][3]uint8{banner: white, bar: green}},
		{name: "rejected in an html source", block: true, html: true, answer: "reject", pixels: map[image.Point][3]uint8{banner: white, bar: green}},
		{name: "option off", answer: "", pixels: map[image.Point][3]uint8{banner: red, bar: white}},
		{name: "hiding list only", block: true, hideOnly: true, answer: "", pixels: map[image.Point][3]uint8{banner: white, bar: white}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			useLibrary(t, consentLibrary(t, tt.hideOnly))
			steps := recordSteps(t)
			reset()
			o := opts(base + "/")
			if tt.html {
				o = htmlOpts(oneTrustPage(base, true))
			}
			o.BlockCookieBanners = tt.block
			out := mustRender(t, shared, o)
			t.Logf("consent step took %v", steps.took("wait", "consent"))
			wantPixels(t, decodePNG(t, out.Data), tt.pixels)
			got := waitAnswers(answers, tt.answer)
			for _, what := range []string{"reject", "accept"} {
				want := 0
				if what == tt.answer {
					want = 1
				}
				if got[what] != want {
					t.Errorf("server saw %d %s answers, want %d (all: %v)", got[what], what, want, got)
				}
			}
		})
	}
}

// TestConsentBounded: a page without a consent dialog pays almost nothing for the consent step
// (the measured cost is logged: the number quoted for the step), and a dialog autoconsent cannot
// finish with holds the capture no longer than consentMax, and never into the render's timeout.
func TestConsentBounded(t *testing.T) {
	base, answers, reset := consentServer(t)
	lib := consentLibrary(t, false)

	t.Run("no dialog", func(t *testing.T) {
		steps := recordSteps(t)
		const runs = 5
		var step, withAC, hideOnly time.Duration
		for i := 0; i < runs; i++ {
			for _, ac := range []bool{true, false} {
				l := lib
				if !ac {
					l = consentLibrary(t, true)
				}
				useLibrary(t, l)
				o := opts(base + "/plain")
				o.BlockCookieBanners = true
				start := time.Now()
				out := mustRender(t, shared, o)
				took := time.Since(start)
				wantPixels(t, decodePNG(t, out.Data), map[image.Point][3]uint8{{380, 290}: {0, 0, 255}})
				if ac {
					withAC += took
					s := steps.took("wait", "consent")
					step += s
					if s > consentMax+consentSlack+stepTolerance {
						t.Errorf("consent step took %v on a page without a dialog, more than its bound %v", s, consentMax+consentSlack)
					}
				} else {
					hideOnly += took
				}
			}
		}
		t.Logf("page without a consent dialog, mean of %d: consent step %v; render %v with autoconsent, %v with the hiding list only (overhead %v)",
			runs, step/runs, withAC/runs, hideOnly/runs, (withAC-hideOnly)/runs)
	})

	t.Run("unfinished opt-out", func(t *testing.T) {
		// No reject button: autoconsent's OneTrust opt-out looks for the settings and waits
		// for seconds; the capture does not wait for it, and the hiding list hides the banner.
		useLibrary(t, lib)
		steps := recordSteps(t)
		for _, timeout := range []time.Duration{20 * time.Second, 2 * time.Second} {
			reset()
			o := opts(base + "/noreject")
			o.BlockCookieBanners = true
			o.Timeout = timeout
			out := mustRender(t, shared, o)
			took := steps.took("wait", "consent")
			t.Logf("timeout %v: consent step took %v", timeout, took)
			bound := min(consentMax, timeout-selectorMargin(timeout)-consentSlack) + consentSlack
			if took > bound+stepTolerance {
				t.Errorf("timeout %v: consent step took %v, more than its bound %v", timeout, took, bound)
			}
			if timeout == 20*time.Second && took < consentMax-100*time.Millisecond {
				t.Errorf("consent step ended after %v, before autoconsent finished or its bound", took)
			}
			wantPixels(t, decodePNG(t, out.Data), map[image.Point][3]uint8{{380, 290}: {255, 255, 255}})
			if got := waitAnswers(answers, ""); got["accept"] != 0 || got["reject"] != 0 {
				t.Errorf("answers %v: the opt-out must never accept", got)
			}
		}
	})
}

// TestConsentScriptQuiet: the wrapper switches autoconsent to opt-out, tier1 heuristics and no
// logs in the page itself.
func TestConsentScriptQuiet(t *testing.T) {
	useLibrary(t, consentLibrary(t, false))
	base, _, _ := consentServer(t)
	o := opts(base + "/plain")
	o.BlockCookieBanners = true
	o.Scripts = `const c = window.autoconsentStandalone.instance.config;
document.body.dataset.cfg = [c.autoAction, c.heuristicMode, Object.values(c.logs).some(Boolean)].join(' ');
document.body.insertAdjacentHTML('afterbegin', document.body.dataset.cfg === 'optOut tier1 false'
  ? '<div style="position:fixed;top:0;left:0;width:50px;height:50px;background:#0f0;z-index:99"></div>' : '');`
	out := mustRender(t, shared, o)
	wantPixels(t, decodePNG(t, out.Data), map[image.Point][3]uint8{{10, 10}: {0, 255, 0}})
}
