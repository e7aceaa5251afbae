package pressure

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/cgroup"
)

// Pressure is one reading. Its JSON is the body of /pressure: numbers and a verdict only.
type Pressure struct {
	Running    int `json:"running"`     // renders in the browser pool now, sync and job
	Queued     int `json:"queued"`      // background jobs waiting for a slot of their account
	Capacity   int `json:"capacity"`    // render slots of the browsers that are up
	FreeSlots  int `json:"free_slots"`  // Capacity - Running, at least 0
	FreeTabs   int `json:"free_tabs"`   // tabs ready for a render (pre-warmed, or wiped after one)
	Browsers   int `json:"browsers"`    // Chrome processes of the pool
	BrowsersUp int `json:"browsers_up"` // of which accept renders
	// ChromeMemoryBytes is the memory of every Chrome's process tree together.
	ChromeMemoryBytes int64 `json:"chrome_memory_bytes"`
	// ChromeOOMKills counts the processes the kernel's OOM killer ended in the memory cgroups of
	// the Chromes running now (0 without cgroups).
	ChromeOOMKills int `json:"chrome_oom_kills"`
	// Available: a browser is up and a render slot is free, so that a render sent now starts
	// at once. Reason says why not.
	Available bool      `json:"is_available"`
	Reason    string    `json:"reason,omitempty"`
	Date      time.Time `json:"date"`
}

// BrowserPool lists the browsers of the render pool: actors.Renderer implements it.
type BrowserPool interface {
	Browsers(timeout time.Duration) ([]shotd.BrowserInfo, error)
}

// JobCounter counts the jobs of this run: actors.Jobs implements it.
type JobCounter interface {
	Stats() shotd.JobStats
}

// Gauge reads the pressure of one node.
type Gauge struct {
	Pool            BrowserPool
	Jobs            JobCounter // nil: no queue
	SlotsPerBrowser int        // renders one Chrome serves at once; <1 counts as 1
}

// Memory is one Chrome's memory, read outside any actor.
type Memory struct {
	Bytes    int64
	OOMKills int
	Cgroup   bool // read from its memory cgroup; else the resident memory of its processes
}

// Read takes one reading; a pool that does not answer within a second counts as no browser.
func (g Gauge) Read() Pressure {
	p := Pressure{Date: time.Now().UTC()}
	slots := max(g.SlotsPerBrowser, 1)
	var bs []shotd.BrowserInfo
	var err error
	if g.Pool != nil {
		bs, err = g.Pool.Browsers(time.Second)
	}
	for _, b := range bs {
		p.Browsers++
		p.Running += b.Inflight
		if !b.Up {
			continue
		}
		p.BrowsersUp++
		p.Capacity += slots
		p.FreeTabs += b.ReadyTabs
		if b.PID > 0 {
			m := ReadMemory(b.PID)
			p.ChromeMemoryBytes += m.Bytes
			p.ChromeOOMKills += m.OOMKills
		}
	}
	if g.Jobs != nil {
		p.Queued = int(g.Jobs.Stats().Queued)
	}
	p.FreeSlots = max(p.Capacity-p.Running, 0)
	switch {
	case err != nil:
		p.Reason = "the browser pool did not answer"
	case p.BrowsersUp == 0:
		p.Reason = "no browser is up"
	case p.FreeSlots == 0:
		p.Reason = "every render slot is busy"
	default:
		p.Available = true
	}
	return p
}

// MemoryTTL is how long a reading of a Chrome's memory is served again. /pressure is a load
// balancer's health check, probed every second or two by each balancer, and without a cgroup a
// reading scans every process in /proc: within MemoryTTL, probes share one scan.
const MemoryTTL = 2 * time.Second

// memCache holds the last reading of each pid, for MemoryTTL.
var memCache = struct {
	sync.Mutex
	byPID map[int]memReading
}{byPID: map[int]memReading{}}

type memReading struct {
	m  Memory
	at time.Time
}

// Tests: the clock of memCache, and a count of the readings made.
var (
	now      = time.Now
	readings atomic.Int64
)

// ReadMemory reads the memory of the process tree of pid: its memory cgroup when it is in one
// of shotd's, else the resident memory of pid and its descendants. A reading younger than
// MemoryTTL is returned again.
func ReadMemory(pid int) Memory {
	t := now()
	memCache.Lock()
	for p, r := range memCache.byPID { // the pids of Chromes that are gone, too
		if t.Sub(r.at) >= MemoryTTL || t.Before(r.at) {
			delete(memCache.byPID, p)
		}
	}
	r, ok := memCache.byPID[pid]
	memCache.Unlock()
	if ok {
		return r.m
	}
	m := readMemory(pid)
	memCache.Lock()
	memCache.byPID[pid] = memReading{m: m, at: t}
	memCache.Unlock()
	return m
}

func readMemory(pid int) Memory {
	readings.Add(1)
	if c, ok := cgroup.OfPID(pid); ok {
		if n, ok := c.Current(); ok {
			k, _ := c.OOMKills()
			return Memory{Bytes: n, OOMKills: k, Cgroup: true}
		}
	}
	return Memory{Bytes: treeRSS(pid)}
}

// treeRSS sums the resident memory of pid and every process under it.
func treeRSS(pid int) int64 {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, the last ")" ends it.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		self, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		children[ppid] = append(children[ppid], self)
	}
	var total int64
	page := int64(os.Getpagesize())
	seen := map[int]bool{}
	for todo := []int{pid}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/statm"); err == nil {
			if f := bytes.Fields(b); len(f) >= 2 {
				n, _ := strconv.ParseInt(string(f[1]), 10, 64)
				total += n * page
			}
		}
		todo = append(todo, children[p]...)
	}
	return total
}
