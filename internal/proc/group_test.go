package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startSh starts a shell script in a group of its own and returns the group and the pid of the
// background sleep the script started.
func startSh(t *testing.T, script string) (*Group, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	// A pipe of our own: cmd.Wait, in the reaper, would close StdoutPipe's under the read.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout = w
	g, err := Start(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Kill(); <-g.Exited() })
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid: %q", buf[:n])
	}
	return g, child
}

// TestGroupKill: Kill reaches the leader and its child; the leader is reaped, Kill afterwards
// does nothing.
func TestGroupKill(t *testing.T) {
	g, child := startSh(t, "sleep 30 & echo $!; wait")
	if s, ok := Read(child); !ok || s.PGID != g.PID() {
		t.Fatalf("child %d: %+v, %v; want in group %d", child, s, ok, g.PID())
	}
	if !g.Kill() {
		t.Fatal("Kill before the exit did not signal")
	}
	<-g.Exited()
	if g.Err() == nil {
		t.Error("Err = nil after SIGKILL")
	}
	if g.Kill() {
		t.Error("Kill after the reap signalled")
	}
	waitGone(t, child)
}

// TestGroupLeaderExit: when the leader exits by itself, what it left in its group is killed.
func TestGroupLeaderExit(t *testing.T) {
	g, child := startSh(t, "sleep 30 & echo $!")
	<-g.Exited()
	if err := g.Err(); err != nil {
		t.Errorf("Err = %v, want nil (exit 0)", err)
	}
	waitGone(t, child)
}

// waitGone waits for pid to be gone or a zombie (its parent, the shell, is gone: init reaps it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		if s, ok := Read(pid); !ok || s.State == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("process %d still runs", pid)
}

func TestWaitGroup(t *testing.T) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitGroup(ctx, &wg); err != context.Canceled {
		t.Errorf("WaitGroup with an ended context = %v, want context.Canceled", err)
	}
	close(release)
	if err := WaitGroup(context.Background(), &wg); err != nil {
		t.Errorf("WaitGroup = %v, want nil", err)
	}
}

// TestWaitOrCut: work that ends in time is waited for; work past the deadline is cut and waited
// for a grace; work that ignores the cut is left after the grace.
func TestWaitOrCut(t *testing.T) {
	run := func(ctx context.Context, honour bool) (bool, error) {
		var wg sync.WaitGroup
		cut := make(chan struct{})
		never := make(chan struct{})
		defer close(never)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if honour {
				<-cut
			} else {
				<-never
			}
		}()
		return WaitOrCut(ctx, &wg, func() { close(cut) }, 50*time.Millisecond)
	}
	var wg sync.WaitGroup
	if done, err := WaitOrCut(context.Background(), &wg, func() { t.Error("cut with nothing running") }, time.Second); !done || err != nil {
		t.Fatalf("nothing running: %v %v", done, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if done, err := run(ctx, true); !done || !errors.Is(err, context.Canceled) {
		t.Fatalf("cut work: %v %v, want done and the context's error", done, err)
	}
	if done, err := run(ctx, false); done || !errors.Is(err, context.Canceled) {
		t.Fatalf("work that ignores the cut: %v %v, want not done", done, err)
	}
}
