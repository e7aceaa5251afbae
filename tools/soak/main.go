// Command soak renders many times at full concurrency against a real shotd on loopback, samples
// its resources every interval and fails when one grows without bound (internal/chaos.Soak).
// `make soak` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shotd/shotd/internal/chaos"
)

func main() {
	bin := flag.String("bin", "", "shotd binary (default: build one)")
	n := flag.Int("n", 5000, "renders")
	clients := flag.Int("clients", 8, "concurrent clients (the plan's concurrency)")
	interval := flag.Duration("interval", 10*time.Second, "between two samples")
	limit := flag.Duration("limit", 2*time.Hour, "the run ends by this, done or not")
	flag.Parse()
	// An interrupt ends the run through its context, so the service and its directory are removed.
	sigctx, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	ctx, cancel := context.WithTimeout(sigctx, *limit)
	defer cancel()
	rep, err := chaos.Soak(ctx, chaos.SoakOptions{Bin: *bin, Renders: *n, Clients: *clients, Interval: *interval, Out: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if len(rep.Problems) > 0 {
		os.Exit(1)
	}
}
