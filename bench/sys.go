package main

import (
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/shotd/shotd/internal/proc"
)

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

func numCPU() int { return runtime.NumCPU() }

// settleTime is how long chromeCPU keeps counting after the measured work: the service disposes
// the contexts it used and prepares new ones after its answers.
const settleTime = time.Second

// cpuUse is the CPU time a row's side spent: its Chrome processes', and the bench process's own
// (the service or the raw loop, with the egress proxy, the fixture server and the clients that
// both sides share).
type cpuUse struct{ chrome, self time.Duration }

// measureCPU returns the CPU time that the process groups led by pids() and this process spend
// during f and the settleTime after it.
func measureCPU(pids func() []int, f func() error) (cpuUse, error) {
	leaders := pids()
	chrome, self := groupCPU(leaders), selfCPU()
	if err := f(); err != nil {
		return cpuUse{}, err
	}
	time.Sleep(settleTime)
	return cpuUse{chrome: groupCPU(leaders) - chrome, self: selfCPU() - self}, nil
}

// selfCPU is the user and system time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// groupCPU sums the CPU time of every process in the groups led by leaders, with that of the
// children they reaped (Chrome's zygote reaps its renderers). Each Chrome of shotd leads a
// process group of its own.
func groupCPU(leaders []int) time.Duration {
	var sum time.Duration
	for _, st := range proc.All() {
		if slices.Contains(leaders, st.PGID) {
			sum += st.CPU
		}
	}
	return sum
}
