package metrics_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/metrics"
	"github.com/shotd/shotd/pressure"
)

// gather returns the value of every series of the named families, keyed by
// name{label="value"} (one label: all these series have one).
func gather(t *testing.T, m *metrics.Metrics, names ...string) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	got := map[string]float64{}
	for _, f := range families {
		if !want[f.GetName()] {
			continue
		}
		for _, s := range f.GetMetric() {
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			for _, l := range s.GetLabel() {
				got[f.GetName()+`{`+l.GetName()+`="`+l.GetValue()+`"}`] = v
			}
		}
	}
	return got
}

// TestMetricsChromeReplaced: each replacement of a Chrome counts once, under its reason.
func TestMetricsChromeReplaced(t *testing.T) {
	m := metrics.New(nil)
	for _, r := range []string{"recycled", "process exited", "process exited"} {
		m.ChromeReplaced(r)
	}
	got := gather(t, m, "shotd_chrome_restarts_total")
	for series, want := range map[string]float64{
		`shotd_chrome_restarts_total{reason="process exited"}`: 2,
		`shotd_chrome_restarts_total{reason="recycled"}`:       1,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
}

type pool []shotd.BrowserInfo

func (p pool) Browsers(time.Duration) ([]shotd.BrowserInfo, error) { return p, nil }

// TestMetricsChromeOOMKills: a Chrome in a memory cgroup of shotd's has its cgroup's OOM kills
// (the oom_kill line of memory.events) and memory (memory.current) as series; one in no such
// cgroup has its memory only. This machine may have no memory cgroup to make, so cgroup.ProcDir
// points at a /proc of two processes, whose mountinfo names a cgroup v2 tree in a temp dir.
func TestMetricsChromeOOMKills(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Pids no process has (pid_max is at most 1<<22), so that the reading without a cgroup
	// finds no process tree either.
	const inCgroup, outside = 1<<30 + 1, 1<<30 + 2
	write("proc/self/mountinfo", "35 24 0:30 / "+filepath.Join(root, "cgroup")+" rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n")
	child := "/system.slice/shotd.service/shotd-chrome-4133-1"
	write("proc/"+strconv.Itoa(inCgroup)+"/cgroup", "0::"+child+"\n")
	write("proc/"+strconv.Itoa(outside)+"/cgroup", "0::/system.slice/shotd.service/shotd-service\n")
	write("cgroup"+child+"/memory.current", "734003200\n")
	write("cgroup"+child+"/memory.events", "low 0\nhigh 0\nmax 41\noom 4\noom_kill 3\noom_group_kill 0\n")
	old := cgroup.ProcDir
	cgroup.ProcDir = filepath.Join(root, "proc")
	t.Cleanup(func() { cgroup.ProcDir = old })

	browsers := pool{{ID: 0, PID: inCgroup, Up: true}, {ID: 1, PID: outside, Up: true}}
	m := metrics.New(nil)
	m.WatchBrowsers(browsers)
	got := gather(t, m, "shotd_chrome_oom_kills_total", "shotd_chrome_memory_bytes")
	want := map[string]float64{
		`shotd_chrome_oom_kills_total{browser="0"}`: 3,
		`shotd_chrome_memory_bytes{browser="0"}`:    734003200,
		`shotd_chrome_memory_bytes{browser="1"}`:    0,
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
		}
	}
	for series := range got {
		if _, ok := want[series]; !ok {
			t.Errorf("series %s = %v: a Chrome in no cgroup of shotd's has no OOM kills", series, got[series])
		}
	}
	// /pressure adds up the same readings.
	if p := (pressure.Gauge{Pool: browsers}).Read(); p.ChromeOOMKills != 3 || p.ChromeMemoryBytes != 734003200 {
		t.Errorf("pressure: %d OOM kills, %d bytes; want 3 and 734003200", p.ChromeOOMKills, p.ChromeMemoryBytes)
	}
}
