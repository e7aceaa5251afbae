package main

import (
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMeasureCPUChromeReplaced: a group that ends while a row is measured (the service recycles
// a Chrome every browser.recycle_after renders) counts up to its last sample, and the group that
// replaces it from its start: the sum stays positive, where subtracting the ended group's CPU
// from nothing made it negative.
func TestMeasureCPUChromeReplaced(t *testing.T) {
	spin := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	a := spin()
	time.Sleep(500 * time.Millisecond) // a has CPU time of its own before the row
	var leader atomic.Int64
	leader.Store(int64(a.Process.Pid))
	pids := func() []int { return []int{int(leader.Load())} }
	use, err := measureCPU(pids, func() error {
		time.Sleep(500 * time.Millisecond)
		_ = a.Process.Kill()
		_ = a.Wait()
		b := spin()
		leader.Store(int64(b.Process.Pid))
		time.Sleep(500 * time.Millisecond)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if use.chrome <= 0 {
		t.Fatalf("CPU of the groups %v, want more than none", use.chrome)
	}
}
