package cdpclient

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/gorilla/websocket"
	"github.com/mafredri/cdp/rpcc"
)

// wsBufferSize is the websocket frame buffer. rpcc's own dialer refuses any message larger than
// its write buffer (4 KiB by default), which would cap the HTML of Page.setDocumentContent; Chrome
// accepts fragmented messages, so our dialer lets gorilla fragment large writes instead.
const wsBufferSize = 64 << 10

// dial opens an rpcc connection over a websocket that writes each CDP message whole, fragmented
// into wsBufferSize frames when needed.
func dial(ctx context.Context, url string) (*rpcc.Conn, error) {
	return rpcc.DialContext(ctx, url, rpcc.WithDialer(func(ctx context.Context, addr string) (io.ReadWriteCloser, error) {
		d := websocket.Dialer{ReadBufferSize: wsBufferSize, WriteBufferSize: wsBufferSize}
		c, resp, err := d.DialContext(ctx, addr, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			return nil, err
		}
		return &wsStream{c: c}, nil
	}))
}

// wsStream turns a message-oriented websocket into the byte stream rpcc's JSON codec reads and
// writes. rpcc serialises writes and reads from one goroutine, as gorilla requires.
type wsStream struct {
	c *websocket.Conn
	r io.Reader
}

func (s *wsStream) Read(p []byte) (int, error) {
	for {
		if s.r != nil {
			n, err := s.r.Read(p)
			if err != io.EOF {
				return n, err
			}
			if n > 0 {
				return n, nil
			}
		}
		_, r, err := s.c.NextReader()
		if err != nil {
			return 0, err
		}
		s.r = r
	}
}

// testHookWrite, when set by a test, sees every CDP message sent.
var testHookWrite atomic.Pointer[func([]byte)]

func (s *wsStream) Write(p []byte) (int, error) {
	if h := testHookWrite.Load(); h != nil {
		(*h)(p)
	}
	if err := s.c.WriteMessage(websocket.TextMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *wsStream) Close() error { return s.c.Close() }
