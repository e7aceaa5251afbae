package main

import (
	"os/exec"
	"runtime"
	"slices"
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

// chromeCPU returns the CPU time that the process groups led by pids() spend during f and the
// settleTime after it.
func chromeCPU(pids func() []int, f func() error) (time.Duration, error) {
	leaders := pids()
	before := groupCPU(leaders)
	if err := f(); err != nil {
		return 0, err
	}
	time.Sleep(settleTime)
	return groupCPU(leaders) - before, nil
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
