package httpd

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestShutdownReleasesServer: a Server that has answered requests is garbage soon after its
// Shutdown. fasthttp's worker pool keeps the server, and through its handler the whole
// service, until its cleaner next wakes: MaxIdleWorkerDuration, 10 s unless set, in which a
// service closed and opened again (an upgrade in place, the bench's warm start) holds two.
func TestShutdownReleasesServer(t *testing.T) {
	gone := make(chan struct{})
	func() {
		s := New(Settings{PublicURL: "http://127.0.0.1"}, Deps{Log: zerolog.Nop()})
		runtime.AddCleanup(s, func(ch chan struct{}) { close(ch) }, gone)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() { defer close(served); _ = s.Serve(ln) }()
		client := &http.Client{Transport: &http.Transport{}}
		for range 4 {
			resp, err := client.Get("http://" + ln.Addr().String() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		<-served
	}()
	deadline := time.Now().Add(4 * time.Second)
	for {
		runtime.GC()
		select {
		case <-gone:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the Server is still reachable 4 s after its Shutdown")
		}
	}
}
