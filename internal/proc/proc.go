package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// TicksPerSecond is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on every Linux
// architecture Go supports).
const TicksPerSecond = 100

// Stat is one process as /proc/<pid>/stat describes it.
type Stat struct {
	PID   int
	State byte // R, S, D, Z, ...
	PPID  int
	PGID  int
	Start uint64        // start time, in ticks after boot
	CPU   time.Duration // user and system time, with that of the children it reaped
}

// Read returns the Stat of pid; false when the process is gone (or was never there).
func Read(pid int) (Stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return parse(pid, b)
}

// parse reads the fields after the command, which is in parentheses and may itself hold spaces
// and parentheses: state(3) ppid(4) pgrp(5) ... utime(14) stime(15) cutime(16) cstime(17) ...
// starttime(22).
func parse(pid int, b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	num := func(k int) int64 {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		return n
	}
	var ticks int64
	for k := 11; k <= 14; k++ {
		ticks += num(k)
	}
	return Stat{
		PID:   pid,
		State: f[0][0],
		PPID:  int(num(1)),
		PGID:  int(num(2)),
		Start: uint64(num(19)),
		CPU:   time.Duration(ticks) * time.Second / TicksPerSecond,
	}, true
}

// All returns every process that can be read; one that ends meanwhile is left out.
func All() []Stat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]Stat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, ok := Read(pid); ok {
			out = append(out, s)
		}
	}
	return out
}

// Members returns the processes of process group pgid.
func Members(pgid int) []Stat {
	var out []Stat
	for _, s := range All() {
		if s.PGID == pgid {
			out = append(out, s)
		}
	}
	return out
}

// BootID identifies this boot of the machine: start times count from it, so they compare only
// within one boot. Empty when the kernel does not tell.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Ticks converts d to the unit of Stat.Start, rounding up.
func Ticks(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d*TicksPerSecond + time.Second - 1) / time.Second)
}

// MemTotal is the machine's memory in bytes (MemTotal of /proc/meminfo), 0 when unknown.
func MemTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
