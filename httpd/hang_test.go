package httpd_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shotd/shotd"
)

// TestHungWebhookReceiver: a receiver that accepts the connection and never answers. Every
// attempt ends by the webhook client's timeout (webhooks.timeout_seconds, 2 s in this harness),
// the delivery ends failed after its retries, and renders go on meanwhile.
func TestHungWebhookReceiver(t *testing.T) {
	a := newAccount(t, "jobs", true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never read from nor answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})

	id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>hung hook</p>", "viewport_width": 300,
		"viewport_height": 200, "webhook_url": "http://" + ln.Addr().String() + "/hook"})
	// While the deliveries hang, sync renders are answered.
	for range 2 {
		r := get(t, "/api/v1/screenshot", a.q("html", "<p>meanwhile</p>", "viewport_width", "300", "viewport_height", "200"))
		if r.status != http.StatusOK {
			t.Fatalf("render while the receiver hangs: %d %s", r.status, r.body)
		}
	}
	j := waitDelivered(t, a.key.AccessKey, id)
	const attempts = 4 // the first and the harness's three retries
	if j.Status != "succeeded" || j.Webhook.Status != "failed" || j.Webhook.Attempts != attempts {
		t.Fatalf("job %s, webhook %+v; want succeeded, webhook failed after %d attempts", j.Status, *j.Webhook, attempts)
	}
	if n := accepted.Load(); n != attempts {
		t.Errorf("the receiver accepted %d connections, want one per attempt (%d)", n, attempts)
	}
}

// TestNeverLoadingPage: a page whose document never arrives ends by the render's timeout with
// 504 timeout, and the next render on the same pool works.
func TestNeverLoadingPage(t *testing.T) {
	a := newAccount(t, "default", true)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/never" {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><body><p>next</p></body></html>"))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body><p>loading"))
		w.(http.Flusher).Flush() // headers and a first chunk: the load has begun and never ends
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })

	wantError(t, get(t, "/api/v1/screenshot", a.q("url", srv.URL+"/never", "timeout", "2")), 504, shotd.CodeTimeout)
	r := get(t, "/api/v1/screenshot", a.q("url", srv.URL+"/next"))
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("the render after the timeout: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
}
