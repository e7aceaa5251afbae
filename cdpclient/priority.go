package cdpclient

import (
	"sync"
	"syscall"

	"github.com/shotd/shotd/internal/proc"
)

// idleNice is the nice value of a Chrome that has no render in flight and only cleans up.
const idleNice = proc.MaxNice

// priority runs a Chrome's background work (a tab's wipe, a disposal, a pre-warmed tab) at the
// lowest CPU priority while no render of its own is in flight, and gives the Chrome its priority
// back when that work ends, or sooner when a render starts on it. A wipe costs about as much CPU
// as a small render; at normal priority it slows down the render that the next request starts
// on another Chrome (on two cores, 1.3x for one client sending renders back to back, against
// 0.97x with a pause between them). At the lowest priority it takes only the CPU that the
// renders leave.
//
// Nice values are per thread; PRIO_PGRP sets every thread of every process in the group, which
// Chrome leads. Giving a priority back needs the right to lower a nice value (root, CAP_SYS_NICE
// or RLIMIT_NICE): without it nothing is lowered.
type priority struct {
	pgid int
	base int  // the nice value Chrome started with (Config.Nice below the service's)
	ok   bool // nice values can be given back

	mu      sync.Mutex
	renders int  // renders in flight
	jobs    int  // background work under way (background to backgroundEnds)
	lowered bool // the group runs at idleNice
}

// newPriority is the priority of the group led by pgid, started at nice value base.
func newPriority(pgid, base int) *priority {
	return &priority{pgid: pgid, base: base, ok: base < idleNice && canRestoreNice(base)}
}

// renderStarts gives the Chrome its priority back before a render uses it, when background work
// is still under way.
func (pr *priority) renderStarts() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.renders++
	if pr.lowered {
		pr.lowered = false
		_ = syscall.Setpriority(syscall.PRIO_PGRP, pr.pgid, pr.base)
	}
}

// renderEnds counts a render out.
func (pr *priority) renderEnds() {
	pr.mu.Lock()
	pr.renders--
	pr.mu.Unlock()
}

// background starts a piece of background work: it lowers the Chrome's priority when no render
// is in flight and spare is true (the pool has tabs ready, so a render need not wait for this
// work). Each call is paired with backgroundEnds.
func (pr *priority) background(spare bool) {
	if !pr.ok {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.jobs++
	if spare && pr.renders == 0 && !pr.lowered {
		pr.lowered = syscall.Setpriority(syscall.PRIO_PGRP, pr.pgid, idleNice) == nil
	}
}

// backgroundEnds ends a piece of background work; after the last one it gives the Chrome its
// priority back, so that the next render does not wait for that call: a setpriority over every
// thread of the group takes 0.1 to 0.2 ms (about 15 processes, 250 threads), which a paused
// render paid before its navigation.
func (pr *priority) backgroundEnds() {
	if !pr.ok {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.jobs--
	if pr.jobs == 0 && pr.lowered {
		pr.lowered = false
		_ = syscall.Setpriority(syscall.PRIO_PGRP, pr.pgid, pr.base)
	}
}

// rlimitNice is RLIMIT_NICE on Linux: a process may lower a nice value down to 20 - its value.
const rlimitNice = 13

// canRestoreNice tells whether this process may lower a nice value back to base: as root, or
// under an RLIMIT_NICE that allows it (systemd's LimitNICE=). A try on a thread of our own would
// have to end that thread, and Chrome, started with Pdeathsig, dies with the thread that forked
// it.
func canRestoreNice(base int) bool {
	if syscall.Geteuid() == 0 {
		return true
	}
	var rl syscall.Rlimit
	return syscall.Getrlimit(rlimitNice, &rl) == nil && 20-int64(rl.Cur) <= int64(base)
}
