package egress

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestAuthSniffer: an Authorization header in a tunnel's plain-text requests is seen wherever
// the writes split it, in a first request or one that follows on the same connection; a request
// without one, a TLS stream and a header past the bound are not; every byte goes on unchanged.
func TestAuthSniffer(t *testing.T) {
	first := "GET /ws HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\n\r\n"
	withAuth := "GET /ws HTTP/1.1\r\nHost: a.test\r\nAUTHORIZATION: Basic dTpw\r\nUpgrade: websocket\r\n\r\n"
	tests := []struct {
		name   string
		stream string
		want   bool
	}{
		{"handshake with credentials", withAuth, true},
		{"second handshake on the connection", first + withAuth, true},
		{"handshake without", first + "\x81\x85masked", false},
		{"header name in a query", "GET /ws?authorization:x HTTP/1.1\r\nHost: a.test\r\n\r\n", false},
		{"tls", "\x16\x03\x01\x02\x00" + withAuth, false},
		{"past the bound", first + strings.Repeat("x", sniffBytes) + withAuth, false},
	}
	for _, tt := range tests {
		for split := 0; split <= len(tt.stream); split += max(1, len(tt.stream)/200) {
			var out bytes.Buffer
			saw := false
			s := &authSniffer{w: &out, saw: func() { saw = true }}
			for _, part := range []string{tt.stream[:split], tt.stream[split:]} {
				if _, err := s.Write([]byte(part)); err != nil {
					t.Fatal(err)
				}
			}
			if saw != tt.want {
				t.Fatalf("%s, split at %d: saw %v, want %v", tt.name, split, saw, tt.want)
			}
			if out.String() != tt.stream {
				t.Fatalf("%s, split at %d: the bytes changed on the way", tt.name, split)
			}
		}
		// As io.Copy uses it, a read at a time.
		var out bytes.Buffer
		saw := false
		s := &authSniffer{w: &out, saw: func() { saw = true }}
		n, err := io.Copy(s, iotest.OneByteReader(strings.NewReader(tt.stream)))
		if err != nil || n != int64(len(tt.stream)) || out.String() != tt.stream || saw != tt.want {
			t.Fatalf("%s, io.Copy: %d bytes, %v, same bytes %v, saw %v; want %v", tt.name, n, err, out.String() == tt.stream, saw, tt.want)
		}
	}
}
