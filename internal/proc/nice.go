package proc

import "syscall"

// MaxNice is Linux's highest nice value, its lowest CPU priority.
const MaxNice = 19

// Nice is the nice value of the calling thread (Linux keeps one per thread; the service's
// threads share the service's); 0 when it cannot be read.
func Nice() int {
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - raw // the kernel's getpriority answers 20 - nice
}

// Lower sets every thread of every process in the group to the caller's nice value plus by (at
// most MaxNice), and returns the value set; by 0 leaves the group at the caller's. What the
// group starts afterwards inherits it; a thread being made during the call may keep the value
// it was made with, so a caller lowers again once the command has started all it starts at
// first. A reaped group, whose id may be someone else's, is left alone.
func (g *Group) Lower(by int) (int, error) {
	n := min(Nice()+max(by, 0), MaxNice)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reaped {
		return n, nil
	}
	return n, syscall.Setpriority(syscall.PRIO_PGRP, g.pid, n)
}

// Lower lowers the child's CPU priority (Group.Lower).
func (c *Child) Lower(by int) (int, error) { return c.g.Lower(by) }
