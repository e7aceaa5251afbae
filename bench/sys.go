package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
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

// userHZ is the unit of the times in /proc/<pid>/stat on Linux.
const userHZ = 100

// groupCPU sums the user and system time of every process in the groups led by leaders, and
// that of the children they reaped (Chrome's zygote reaps its renderers). Each Chrome of shotd
// leads a process group of its own.
func groupCPU(leaders []int) time.Duration {
	groups := map[string]bool{}
	for _, pid := range leaders {
		groups[strconv.Itoa(pid)] = true
	}
	ents, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the command: state ppid pgrp ... utime(12) stime(13) cutime(14) cstime(15).
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 14 || !groups[f[2]] {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}
