package main

import (
	"os/exec"
	"runtime"
)

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

func numCPU() int { return runtime.NumCPU() }
