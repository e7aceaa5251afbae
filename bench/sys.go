package main

import (
	"maps"
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
// during f and the settleTime after it. The service replaces a Chrome every
// browser.recycle_after renders: a group that ends during f is counted up to its last sample
// (cpuSample apart), and one that starts during it from its start.
func measureCPU(pids func() []int, f func() error) (cpuUse, error) {
	first := groupsCPU(pids())
	last := maps.Clone(first)
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(cpuSample)
		defer tick.Stop()
		for {
			maps.Copy(last, groupsCPU(pids()))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	self := selfCPU()
	err := f()
	if err == nil {
		time.Sleep(settleTime)
	}
	close(stop)
	<-sampled
	if err != nil {
		return cpuUse{}, err
	}
	var chrome time.Duration
	for pgid, cpu := range last {
		chrome += cpu - first[pgid] // a group started meanwhile: from zero
	}
	return cpuUse{chrome: chrome, self: selfCPU() - self}, nil
}

// cpuSample is how often measureCPU reads the groups' CPU while it measures.
const cpuSample = 250 * time.Millisecond

// selfCPU is the user and system time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// groupsCPU is the CPU time of every process group led by leaders (each Chrome of shotd leads
// one), by leader: its processes' and that of the children they reaped (Chrome's zygote reaps
// its renderers). A group with no process left is not in it.
func groupsCPU(leaders []int) map[int]time.Duration {
	sums := make(map[int]time.Duration, len(leaders))
	for _, st := range proc.All() {
		if slices.Contains(leaders, st.PGID) {
			sums[st.PGID] += st.CPU
		}
	}
	return sums
}
