package pressure

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

type pool struct {
	bs  []shotd.BrowserInfo
	err error
}

func (p pool) Browsers(time.Duration) ([]shotd.BrowserInfo, error) { return p.bs, p.err }

type jobs struct{ queued int64 }

func (j jobs) Stats() shotd.JobStats { return shotd.JobStats{Queued: j.queued} }

func TestRead(t *testing.T) {
	two := []shotd.BrowserInfo{{ID: 0, Up: true, Inflight: 2, ReadyTabs: 1}, {ID: 1, Up: true, Inflight: 1}}
	for _, c := range []struct {
		name   string
		g      Gauge
		avail  bool
		reason string
		free   int
	}{
		{"room", Gauge{Pool: pool{bs: two}, Jobs: jobs{3}, SlotsPerBrowser: 2}, true, "", 1},
		{"full", Gauge{Pool: pool{bs: two}, SlotsPerBrowser: 1}, false, "every render slot is busy", 0},
		{"down", Gauge{Pool: pool{bs: []shotd.BrowserInfo{{ID: 0}}}}, false, "no browser is up", 0},
		{"no answer", Gauge{Pool: pool{err: errors.New("timeout")}}, false, "the browser pool did not answer", 0},
	} {
		p := c.g.Read()
		if p.Available != c.avail || p.Reason != c.reason || p.FreeSlots != c.free {
			t.Errorf("%s: %+v", c.name, p)
		}
	}
	p := Gauge{Pool: pool{bs: two}, Jobs: jobs{3}, SlotsPerBrowser: 2}.Read()
	if p.Running != 3 || p.Queued != 3 || p.Capacity != 4 || p.FreeTabs != 1 || p.Browsers != 2 || p.BrowsersUp != 2 {
		t.Errorf("reading %+v", p)
	}
}

// TestReadMemoryTree: the memory of a process tree counts its children: the test's own tree
// with a child of its own holds more than the test alone.
func TestReadMemoryTree(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	child := treeRSS(cmd.Process.Pid)
	if child <= 0 {
		t.Fatalf("the child's memory: %d", child)
	}
	alone := rssOf(os.Getpid())
	if tree := ReadMemory(os.Getpid()); tree.Cgroup || tree.Bytes < alone+child/2 {
		t.Errorf("the tree: %+v; the test alone %d, its child %d", tree, alone, child)
	}
	if m := ReadMemory(1 << 30); m.Bytes != 0 {
		t.Errorf("a pid that does not exist: %+v", m)
	}
}

func rssOf(pid int) int64 {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	f := strings.Fields(string(b))
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * int64(os.Getpagesize())
}

// TestReadMemoryCached: readings of a pid within MemoryTTL share one read of /proc (or of the
// cgroup); an older one is read again, and a pid of its own is read on its own.
func TestReadMemoryCached(t *testing.T) {
	clock := time.Now().Add(time.Hour) // after every reading of the other tests
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	pid := os.Getpid()
	first := readings.Load()
	a := ReadMemory(pid)
	clock = clock.Add(MemoryTTL / 2)
	if b := ReadMemory(pid); b != a {
		t.Errorf("a second reading within MemoryTTL: %+v, the first %+v", b, a)
	}
	if n := readings.Load() - first; n != 1 {
		t.Fatalf("two probes within MemoryTTL read the memory %d times, want once", n)
	}
	ReadMemory(1 << 30)
	if n := readings.Load() - first; n != 2 {
		t.Fatalf("another pid: %d readings in all, want 2", n)
	}
	clock = clock.Add(MemoryTTL)
	ReadMemory(pid)
	if n := readings.Load() - first; n != 3 {
		t.Fatalf("a reading older than MemoryTTL: %d readings in all, want 3", n)
	}
}
