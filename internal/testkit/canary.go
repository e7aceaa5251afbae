package testkit

import (
	"net"
	"sync"
	"testing"
)

// Canary is a set of TCP listeners on addresses that must never be connected to. It accepts and
// closes every connection at once, remembering the local address of each.
type Canary struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	lns   []net.Listener
	conns []string
}

// NewCanary listens on each of addrs (host:port, port 0 for any free one) and fails the test
// when it cannot; Listen adds more. The listeners close, and their goroutines end, when the test
// ends.
func NewCanary(t testing.TB, addrs ...string) *Canary {
	t.Helper()
	c := &Canary{}
	t.Cleanup(c.close)
	for _, addr := range addrs {
		if _, err := c.Listen(addr); err != nil {
			t.Fatalf("canary cannot listen on %s: %v", addr, err)
		}
	}
	return c
}

// Listen adds a listener on addr to the canary and returns its address.
func (c *Canary) Listen(addr string) (*net.TCPAddr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.lns = append(c.lns, ln)
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn.LocalAddr().String())
			c.mu.Unlock()
			_ = conn.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr), nil
}

// Addr is the address of the first listener.
func (c *Canary) Addr() *net.TCPAddr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lns[0].Addr().(*net.TCPAddr)
}

// Count is the number of connections accepted so far, on all listeners.
func (c *Canary) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

// CheckUntouched fails the test (without stopping it) when any listener accepted a connection.
func (c *Canary) CheckUntouched(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.conns) != 0 {
		t.Errorf("the canary accepted %d connections: %v", len(c.conns), c.conns)
	}
}

func (c *Canary) close() {
	c.mu.Lock()
	for _, ln := range c.lns {
		_ = ln.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
