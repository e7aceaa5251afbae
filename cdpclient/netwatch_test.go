package cdpclient

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shotd/shotd"
)

// Tests of fail_if_request_failed (netwatch.go).

func TestFailIfRequestFailed(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/broken.png", func(w http.ResponseWriter, r *http.Request) {
		// The connection closes without an answer: a network failure (ERR_EMPTY_RESPONSE).
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	})
	srv, _ := server(t, mux)
	mux.HandleFunc("/", htmlPage(`<!doctype html><body><img src="/broken.png"></body>`))
	o := opts(srv.URL + "/")
	o.FailIfRequestFailed = []string{srv.URL + "/*.png"}
	_, err := doRender(t, shared, o)
	e := wantCode(t, err, shotd.CodeNavigationFailed)
	if !strings.Contains(e.Message, "fail_if_request_failed") || !strings.Contains(e.Message, "/broken.png") {
		t.Errorf("message %q", e.Message)
	}
	o = opts(srv.URL + "/")
	o.FailIfRequestFailed = []string{"*/other.png"}
	mustRender(t, shared, o)
}
