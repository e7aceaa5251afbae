//go:build unix

package blocklist

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system. Benchmarks report it beside
// wall time because the build machine is shared: under load, wall time per op measures the
// neighbours more than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
