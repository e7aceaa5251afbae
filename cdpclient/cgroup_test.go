package cdpclient

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/testkit"
)

// testCgroups opens the test's own cgroup for memory-bounded children, or skips the test saying
// why it cannot.
func testCgroups(t *testing.T) *cgroup.Parent {
	t.Helper()
	cg, err := cgroup.Open()
	if err != nil {
		t.Skipf("no memory cgroup to bound Chrome with: %v", err)
	}
	return cg
}

// TestCgroupMemoryBomb: eight pages that allocate without end, at once on one Chrome whose
// JavaScript heap cap is above its cgroup's bound, so that the cgroup is what stops them: each
// answers page_crashed, the browser goes on, a normal page renders in between and after, and
// the cgroup never held more than its bound.
func TestCgroupMemoryBomb(t *testing.T) {
	const limitMB = 1536
	cg := testCgroups(t)
	p := launchHostile(t, Config{Cgroups: cg, MemoryLimitMB: limitMB, JSHeapMB: 8192, Renders: 9, Prewarm: 1})
	if p.cgroup == nil {
		t.Fatal("Chrome has no cgroup")
	}
	for i, err := range bombsBeside(t, p, 8) {
		if err == nil {
			t.Errorf("bomb %d rendered", i)
			continue
		}
		if e := shotd.AsError(err); e.Code != shotd.CodePageCrashed {
			t.Errorf("bomb %d: %s (%v), want page_crashed", i, e.Code, err)
		}
	}
	if err := p.Probe(context.Background()); err != nil {
		t.Fatalf("the browser did not survive the bombs: %v", err)
	}
	mustRender(t, p, htmlOpts(`<p>after the bombs</p>`))
	// The bound, not the heap cap, ended the pages.
	if kills, ok := p.cgroup.OOMKills(); ok && kills == 0 {
		t.Error("the cgroup's OOM killer ended nothing: the bombs were stopped by something else")
	} else if ok {
		t.Logf("%d processes ended by the cgroup's OOM killer", kills)
	}
	if peak, ok := p.cgroup.Peak(); !ok {
		t.Log("the kernel does not report the cgroup's peak usage")
	} else if peak > limitMB<<20 {
		t.Errorf("the cgroup's peak usage is %d MB, above its bound of %d MB", peak>>20, limitMB)
	} else {
		t.Logf("peak usage %d MB of %d MB", peak>>20, limitMB)
	}
}

// TestCgroupHoldsGroup: every process of Chrome's group is in Chrome's cgroup, and Close
// removes the cgroup.
func TestCgroupHoldsGroup(t *testing.T) {
	cg := testCgroups(t)
	p := launchHostile(t, Config{Cgroups: cg, MemoryLimitMB: 2048, Prewarm: 1})
	mustRender(t, p, htmlOpts(`<p>in the cgroup</p>`))
	inside, err := p.cgroup.Procs()
	if err != nil {
		t.Fatal(err)
	}
	members := testkit.GroupMembers(p.PID())
	if len(members) < 2 {
		t.Fatalf("Chrome's group has %d processes, want Chrome and its helpers", len(members))
	}
	for _, pid := range members {
		if _, alive := procState(pid); alive && !slices.Contains(inside, pid) {
			t.Errorf("process %d of Chrome's group is not in its cgroup %s (which holds %v)", pid, p.cgroup.Dir(), inside)
		}
	}
	dir := p.cgroup.Dir()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cgroup %s is left after Close: %v", dir, err)
	}
}
