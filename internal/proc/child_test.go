package proc

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestChildStderrTail: a failed child's exit and the tail of its stderr are kept.
func TestChildStderrTail(t *testing.T) {
	cmd := exec.Command("sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x >&2; echo the end >&2; exit 3")
	c, err := StartChild(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if c.Err() == nil || c.CtxErr() != nil {
		t.Fatalf("Err %v, CtxErr %v; want an exit error alone", c.Err(), c.CtxErr())
	}
	tail := c.Stderr()
	if len(tail) != StderrTail || !strings.HasSuffix(tail, "xthe end\n") {
		t.Fatalf("stderr tail of %d bytes ending %q", len(tail), tail[max(0, len(tail)-20):])
	}
}

// TestChildContext: the end of ctx kills the child, and says so.
func TestChildContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := StartChild(ctx, exec.Command("sh", "-c", "sleep 60 & wait"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-c.Done()
	if c.CtxErr() != context.Canceled {
		t.Fatalf("CtxErr %v; want context.Canceled", c.CtxErr())
	}
}
