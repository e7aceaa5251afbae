package cdpclient

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// TestProxy: a render with the proxy option fetches its page through the user's proxy, with the
// credentials, while a bypass host is fetched directly; the guard still refuses the proxy's own
// address when it is not allowed; wrong credentials fail the render; the next render without
// the option does not use the proxy.
func TestProxy(t *testing.T) {
	p := launchGuarded(t, "127.0.0.1/32", "127.0.0.2/32")

	// A blue square on 127.0.0.2, the bypass host.
	var blueHits atomic.Int64
	blue := image.NewRGBA(image.Rect(0, 0, 1, 1))
	blue.Set(0, 0, color.RGBA{0, 0, 255, 255})
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, blue); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	imgSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blueHits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngData.Bytes())
	}))
	imgSrv.Listener.Close()
	imgSrv.Listener = ln
	imgSrv.Start()
	t.Cleanup(imgSrv.Close)

	// The page on 127.0.0.1: green, with the blue square in its top-left corner.
	mux := http.NewServeMux()
	mux.HandleFunc("/page", htmlPage(`<!doctype html><body style="margin:0;background:rgb(0,128,0)">`+
		`<img src="`+imgSrv.URL+`/blue.png" style="display:block;width:100px;height:100px"></body>`))
	srv, _ := server(t, mux)
	page := srv.URL + "/page"

	up := testkit.NewUpstreamProxy(t, "127.0.0.1", "render-user", "pass-word")
	// A listener on 127.0.0.3, which the guard does not allow: it must never be dialled.
	refused, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	var refusedHits atomic.Int64
	go func() {
		for {
			c, err := refused.Accept()
			if err != nil {
				return
			}
			refusedHits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { refused.Close() })

	withProxy := func(host, user, pass string) *shotd.Options {
		o := opts(page)
		o.Proxy = &shotd.UpstreamProxy{Host: host, Username: shotd.Secret(user), Password: shotd.Secret(pass),
			Bypass: []string{"127.0.0.2"}}
		return o
	}
	tests := []struct {
		name        string
		o           *shotd.Options
		code        shotd.Code // "" = success
		wantProxied bool       // the page went through the proxy, with the credentials
	}{
		{name: "through the proxy", o: withProxy(up.Addr(), "render-user", "pass-word"), wantProxied: true},
		{name: "wrong credentials", o: withProxy(up.Addr(), "render-user", "wrong"), code: shotd.CodeNavigationFailed},
		{name: "proxy on a refused address", o: withProxy(refused.Addr().String(), "render-user", "pass-word"), code: shotd.CodeHostNotAllowed},
		{name: "next render without proxy", o: opts(page)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, hitsBefore := len(up.Requests()), blueHits.Load()
			out, err := doRender(t, p, tt.o)
			got := up.Requests()[before:]
			if tt.code != "" {
				wantCode(t, err, tt.code)
				for _, r := range got {
					if r.Authorized {
						t.Errorf("request %+v went through", r)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			img := decodePNG(t, out.Data)
			if c := rgbAt(img, 50, 50); c != [3]uint8{0, 0, 255} {
				t.Errorf("pixel in the bypassed image = %v, want blue", c)
			}
			if c := rgbAt(img, 200, 200); c != [3]uint8{0, 128, 0} {
				t.Errorf("page pixel = %v, want green", c)
			}
			if blueHits.Load() == hitsBefore {
				t.Error("the image server saw no request")
			}
			var pageReqs int
			for _, r := range got {
				if strings.Contains(r.Target, "127.0.0.2") {
					t.Errorf("the bypass host went through the proxy: %+v", r)
				}
				if r.Method == "GET" && r.Target == page && r.Authorized {
					pageReqs++
				}
			}
			switch {
			case tt.wantProxied && pageReqs == 0:
				t.Errorf("the proxy was not asked for the page with its credentials; it saw %+v", got)
			case !tt.wantProxied && len(got) != 0:
				t.Errorf("a render without proxy used it: %+v", got)
			}
		})
	}
	if n := refusedHits.Load(); n != 0 {
		t.Errorf("the refused proxy address was dialled %d times", n)
	}
}
