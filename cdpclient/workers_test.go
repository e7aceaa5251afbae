package cdpclient

import (
	"net/http"
	"testing"
	"time"
)

// TestWorkerWebSocket: a dedicated worker's WebSocket is blocked like the page's, and the worker
// still runs (it is held at its start only until it has the blocking script). The worker reports
// to the page only once its socket has closed: refused by the server after the handshake reached
// it, or failed by the blocking script without a request. So when the render has seen the report,
// every handshake the worker made has been counted, and none can come later.
func TestWorkerWebSocket(t *testing.T) {
	rec := newRecorder()
	mux := http.NewServeMux()
	base, _, _ := recorded(t, rec, mux)
	mux.HandleFunc("/{$}", htmlPage(`<body><script>
const w = new Worker('/worker.js');
w.onmessage = e => document.body.insertAdjacentHTML('beforeend', '<p id="' + e.data + '">' + e.data + '</p>');
</script></body>`))
	mux.HandleFunc("/worker.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write([]byte(`const ws = new WebSocket('ws://' + location.host + '/wsw');
ws.onclose = () => fetch('/alive').then(() => postMessage('alive'));`))
	})
	mux.HandleFunc("/alive", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/wsw", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 400) })

	for _, tt := range []struct {
		name      string
		resources []string
		requests  []string
		wantWS    int
	}{
		{"not blocked", nil, nil, 1},
		{"block_resources websocket", []string{"websocket"}, nil, 0},
		{"block_requests pattern", nil, []string{"ws://*/wsw"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec.reset()
			o := opts(base + "/")
			o.BlockResources, o.BlockRequests = tt.resources, tt.requests
			o.WaitForSelector, o.Timeout = "#alive", 10*time.Second
			mustRender(t, shared, o) // the worker ran, and its socket has closed: it posted "alive"
			if n := rec.count("/wsw"); n != tt.wantWS {
				t.Errorf("the worker's WebSocket reached the server %d times, want %d", n, tt.wantWS)
			}
		})
	}
}
