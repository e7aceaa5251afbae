package httpd

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/shotd/shotd"
)

// capConns caps the open connections of each client address on ln: each
// connection holds a 64 KiB read buffer (maxHeadBytes) and a goroutine, so one client could
// otherwise hold the server's memory with idle connections. It is done here rather than with
// fasthttp's MaxConnsPerIP, which answers in plain text instead of the error shape and counts
// every IPv6 client as one address.
func (s *Server) capConns(ln net.Listener, max int) net.Listener {
	return &capListener{Listener: ln, max: max, open: map[string]int{}, srv: s, refusing: make(chan struct{}, 32)}
}

type capListener struct {
	net.Listener
	max      int
	srv      *Server
	refusing chan struct{} // bounds the goroutines answering refused connections

	mu   sync.Mutex
	open map[string]int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		id := clientID(c.RemoteAddr())
		l.mu.Lock()
		over := l.open[id] >= l.max
		if !over {
			l.open[id]++
		}
		l.mu.Unlock()
		if !over {
			return &capConn{Conn: c, l: l, id: id}, nil
		}
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				l.refuse(c)
			}()
		default:
			c.Close() // already answering many: a flood gets no answer
		}
	}
}

func (l *capListener) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[id]--; l.open[id] <= 0 {
		delete(l.open, id)
	}
}

// refuse answers a connection over the cap with 429 rate_limited in the error shape, then
// closes it. What the client sent is drained a little first, so that closing with unread bytes
// does not reset the connection before the answer is read.
func (l *capListener) refuse(c net.Conn) {
	defer c.Close()
	ref := newRef()
	body, _ := json.Marshal(errorBody{ErrorCode: shotd.CodeRateLimited,
		ErrorMessage:     fmt.Sprintf("more than %d connections are open from this address; reuse them", l.max),
		DocumentationURL: l.srv.set.PublicURL + "/docs/errors#" + string(shotd.CodeRateLimited)})
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Retry-After: 1\r\nX-Reference-Id: %s\r\nConnection: close\r\nServer: shotd\r\n\r\n%s", len(body), ref, body)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	drain(c, 64<<10, time.Second)
	l.srv.log.Info().Str("ref", ref).Str("client", clientID(c.RemoteAddr())).Int("max_conns_per_address", l.max).
		Msg("connection refused over the per-address cap")
	l.srv.metrics.Request("unread", 429)
}

type capConn struct {
	net.Conn
	l    *capListener
	id   string
	once sync.Once
}

func (c *capConn) Close() error {
	c.once.Do(func() { c.l.release(c.id) })
	return c.Conn.Close()
}
