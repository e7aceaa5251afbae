package cdpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/mafredri/cdp/rpcc"
)

// Chrome speaks DevTools over a pair of pipes (--remote-debugging-pipe: it reads commands from
// its fd 3 and writes answers and events to its fd 4, each message JSON ended by a NUL byte)
// rather than a TCP port: no other process on the host can drive it, and no page can reach a
// debugging port. One pipe carries every session: the browser's (no sessionId) and one per tab,
// attached in flat mode (Target.attachToTarget with flatten), whose messages carry its
// sessionId. pipeConn sends for all of them and hands each message read to its session; each
// session is an rpcc.Conn of its own, so the rest of the package sees per-tab connections as it
// would over per-page websockets.

// maxMessage bounds one message from Chrome. The largest are captures: a PNG of 2^27 pixels is
// rarely over 200 MB, and base64 adds a third.
const maxMessage = 512 << 20

// sessionBuffer is how many messages a session may have waiting before the pipe's reader waits
// for it. rpcc reads its connection continuously, so this only smooths bursts of events.
const sessionBuffer = 256

// errPipeClosed ends every session when the pipe is gone.
var errPipeClosed = errors.New("devtools pipe closed")

// testHookWrite, when set by a test, sees every CDP message sent.
var testHookWrite atomic.Pointer[func([]byte)]

// testHookRead, when set by a test, sees every CDP message read, as it is read.
var testHookRead atomic.Pointer[func([]byte)]

// pipeConn is the parent's end of Chrome's DevTools pipes.
type pipeConn struct {
	w   *os.File // Chrome's fd 3
	r   *os.File // Chrome's fd 4
	wmu sync.Mutex

	mu       sync.Mutex
	sessions map[string]*pipeSession
	done     chan struct{} // closed when the reader ends
	ended    func()        // called when the pipe ends, before its sessions do
}

// newPipeConn starts reading r; Close (or Chrome's end) stops it, and calls ended (may be nil)
// before any session sees the end: a render that fails on its session's end can then tell that
// the whole browser went.
func newPipeConn(w, r *os.File, ended func()) *pipeConn {
	p := &pipeConn{w: w, r: r, sessions: map[string]*pipeSession{}, done: make(chan struct{}), ended: ended}
	go p.read()
	return p
}

// dial opens the rpcc connection of one session; "" is the browser's.
func (p *pipeConn) dial(ctx context.Context, sessionID string) (*rpcc.Conn, error) {
	s := &pipeSession{p: p, id: sessionID, in: make(chan []byte, sessionBuffer), closed: make(chan struct{})}
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return nil, errPipeClosed
	default:
	}
	p.sessions[sessionID] = s
	p.mu.Unlock()
	return rpcc.DialContext(ctx, "pipe:"+sessionID,
		rpcc.WithDialer(func(context.Context, string) (io.ReadWriteCloser, error) { return s, nil }),
		rpcc.WithCodec(func(io.ReadWriter) rpcc.Codec { return s }))
}

// read hands every message to its session until the pipe ends, then ends them all.
func (p *pipeConn) read() {
	defer func() {
		if p.ended != nil {
			p.ended()
		}
		p.mu.Lock()
		close(p.done)
		for id, s := range p.sessions {
			s.end()
			delete(p.sessions, id)
		}
		p.mu.Unlock()
	}()
	br := bufio.NewReaderSize(p.r, 64<<10)
	for {
		msg, err := readMessage(br)
		if err != nil {
			return
		}
		if h := testHookRead.Load(); h != nil {
			(*h)(msg)
		}
		id := sessionOf(msg)
		p.mu.Lock()
		s := p.sessions[id]
		p.mu.Unlock()
		if s == nil {
			continue // a session closed on our side: its late events have no reader
		}
		select {
		case s.in <- msg:
		case <-s.closed:
		}
		if id == "" {
			p.detached(msg)
		}
	}
}

// detached ends the session a Target.detachedFromTarget event of the browser names: its target
// is gone (closed, its context disposed), as a page websocket would close.
func (p *pipeConn) detached(msg []byte) {
	if !bytes.Contains(msg, []byte(`"Target.detachedFromTarget"`)) {
		return
	}
	var ev struct {
		Method string `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &ev) != nil || ev.Method != "Target.detachedFromTarget" || ev.Params.SessionID == "" {
		return
	}
	p.mu.Lock()
	s := p.sessions[ev.Params.SessionID]
	p.mu.Unlock()
	if s != nil {
		s.end()
	}
}

// readMessage reads one NUL-ended message, at most maxMessage bytes.
func readMessage(br *bufio.Reader) ([]byte, error) {
	var msg []byte
	for {
		chunk, err := br.ReadSlice(0)
		if len(msg)+len(chunk) > maxMessage {
			return nil, fmt.Errorf("devtools message over %d bytes", maxMessage)
		}
		msg = append(msg, chunk...)
		switch {
		case err == nil:
			return msg[:len(msg)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// sessionTail is how Chrome ends a message of a flat session: the sessionId is its last member.
var sessionTail = []byte(`,"sessionId":"`)

// sessionOf returns the sessionId of a message, "" for the browser's. Chrome writes it last, so
// it is looked for at the end first and a capture of megabytes is not parsed to route it.
func sessionOf(msg []byte) string {
	if len(msg) > 2 && bytes.HasSuffix(msg, []byte(`"}`)) {
		tail := msg[max(0, len(msg)-128):]
		if i := bytes.LastIndex(tail, sessionTail); i >= 0 {
			return string(tail[i+len(sessionTail) : len(tail)-2])
		}
	}
	if len(msg) > 64<<10 {
		return ""
	}
	var m struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.SessionID
}

// write sends one message, whole, to Chrome.
func (p *pipeConn) write(msg []byte) error {
	if h := testHookWrite.Load(); h != nil {
		(*h)(msg)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.w.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("devtools pipe: %w", err)
	}
	return nil
}

// Close closes both pipes; the reader then ends every session.
func (p *pipeConn) Close() error {
	err := p.w.Close()
	if rerr := p.r.Close(); err == nil {
		err = rerr
	}
	<-p.done
	return err
}

// pipeSession is one session on the pipe, as rpcc's connection and codec at once.
type pipeSession struct {
	p      *pipeConn
	id     string
	in     chan []byte
	closed chan struct{}
	once   sync.Once
}

// request is rpcc.Request with the session it goes to.
type request struct {
	ID        uint64 `json:"id"`
	Method    string `json:"method"`
	Params    any    `json:"params,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
}

// WriteRequest implements rpcc.Codec.
func (s *pipeSession) WriteRequest(r *rpcc.Request) error {
	select {
	case <-s.closed:
		return errPipeClosed
	default:
	}
	b, err := json.Marshal(request{ID: r.ID, Method: r.Method, Params: r.Args, SessionID: s.id})
	if err != nil {
		return err
	}
	return s.p.write(b)
}

// ReadResponse implements rpcc.Codec: the session's next message.
func (s *pipeSession) ReadResponse(r *rpcc.Response) error {
	select {
	case msg := <-s.in:
		*r = rpcc.Response{}
		return json.Unmarshal(msg, r)
	case <-s.closed:
		return io.EOF
	}
}

// end closes the session: its rpcc connection sees the end of its stream.
func (s *pipeSession) end() { s.once.Do(func() { close(s.closed) }) }

// Close implements io.Closer for rpcc: the session is forgotten; the target stays.
func (s *pipeSession) Close() error {
	s.end()
	s.p.mu.Lock()
	if s.p.sessions[s.id] == s {
		delete(s.p.sessions, s.id)
	}
	s.p.mu.Unlock()
	return nil
}

// Read and Write are never called: the session is its own codec.
func (s *pipeSession) Read([]byte) (int, error)  { return 0, errors.New("pipe session: read") }
func (s *pipeSession) Write([]byte) (int, error) { return 0, errors.New("pipe session: write") }
