package tunnel

import (
	"io"
	"net"
	"testing"
)

// Each way's bytes arrive, and when one end closes Join closes the other and returns.
func TestJoin(t *testing.T) {
	client, clientEnd := net.Pipe()
	upstream, upstreamEnd := net.Pipe()
	joined := make(chan struct{})
	go func() {
		Join(clientEnd, upstreamEnd, upstreamEnd)
		close(joined)
	}()
	go func() { _, _ = client.Write([]byte("ping")) }()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(upstream, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("upstream read %q, %v", buf, err)
	}
	go func() { _, _ = upstream.Write([]byte("pong")) }()
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
	_ = client.Close()
	<-joined
	if _, err := upstream.Read(buf); err != io.EOF {
		t.Fatalf("upstream after the client closed: %v, want EOF", err)
	}
}
