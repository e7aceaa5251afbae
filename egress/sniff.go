package egress

import (
	"bytes"
	"io"
)

// authHeader is what authSniffer looks for, in lower case, at the start of a header line.
var authHeader = []byte("\r\nauthorization:")

// sniffBytes bounds how much of a tunnel authSniffer reads: the handshakes of a WebSocket
// (a first one, then one answering the server's challenge) come first.
const sniffBytes = 64 << 10

// authSniffer passes on what the browser sends into a tunnel and looks in its beginning for a
// plain-text HTTP request (a ws:// handshake; https and wss begin with a TLS handshake) with an
// Authorization header. The browser sends one there only from the credentials of a URL
// (ws://user:password@host) or from its HTTP auth cache, which they then stay in; no CDP call
// clears it, and Chrome's Fetch domain never sees a WebSocket handshake. saw is called before
// the bytes go on, so before any answer to them.
type authSniffer struct {
	w    io.Writer
	seen int    // bytes looked at
	tail []byte // the last bytes of the previous write, lower case, for a header split in two
	off  bool   // not plain HTTP, or seen enough
	saw  func()
}

func (s *authSniffer) Write(b []byte) (int, error) {
	if !s.off {
		s.look(b)
	}
	return s.w.Write(b)
}

// ReadFrom copies r on, through look until it is decided, then with w's own ReadFrom: from one
// TCP connection to another the kernel splices, as it does for an unsniffed tunnel.
func (s *authSniffer) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	buf := make([]byte, 32<<10)
	for !s.off {
		k, err := r.Read(buf)
		if k > 0 {
			if _, werr := s.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	m, err := io.Copy(s.w, r)
	return n + m, err
}

func (s *authSniffer) look(b []byte) {
	if s.seen == 0 && len(b) > 0 && b[0] == 0x16 {
		s.off = true // a TLS record: nothing readable follows
		return
	}
	b = b[:min(len(b), sniffBytes-s.seen)]
	s.seen += len(b)
	buf := append(s.tail, bytes.ToLower(b)...)
	if bytes.Contains(buf, authHeader) {
		s.saw()
		s.off = true
		return
	}
	s.tail = append(s.tail[:0], buf[max(0, len(buf)-len(authHeader)+1):]...)
	s.off = s.seen >= sniffBytes
}
