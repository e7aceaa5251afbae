package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestOutsideEphemeral: ports come from below the kernel's ephemeral range, are distinct and can
// be listened on.
func TestOutsideEphemeral(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		addr := Addr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if low > lowest+100 && (port < lowest || port >= low) {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, low)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		_ = l.Close()
	}
}
