package testkit

import (
	"net"
	"sync"
	"sync/atomic"
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

// UDPCanary is a UDP socket on an address that must never be sent to; it counts the datagrams
// it receives. It closes when the test ends.
type UDPCanary struct {
	conn    net.PacketConn
	packets atomic.Int64
	done    chan struct{}
}

// NewUDPCanary listens on addr (host:port, port 0 for any free one) and fails the test when it
// cannot.
func NewUDPCanary(t testing.TB, addr string) *UDPCanary {
	t.Helper()
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("UDP canary cannot listen on %s: %v", addr, err)
	}
	c := &UDPCanary{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			c.packets.Add(1)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-c.done })
	return c
}

// Addr is the canary's address.
func (c *UDPCanary) Addr() string { return c.conn.LocalAddr().String() }

// Packets is the number of datagrams received so far.
func (c *UDPCanary) Packets() int64 { return c.packets.Load() }
