// Command chaos runs the chaos scenario of internal/chaos against a real shotd on loopback and
// prints its figures; it exits 1 when a correctness rule broke. `make chaos` runs it.
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
	clients := flag.Int("clients", 8, "concurrent rendering clients")
	settle := flag.Duration("settle", 15*time.Second, "traffic between two faults")
	stop := flag.Duration("stop", 20*time.Second, "how long a browser stays stopped (SIGSTOP)")
	flag.Parse()
	// An interrupt ends the run through its context, so the service and its directory are removed.
	sigctx, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	// Bounded: the whole run, faults and recoveries included, ends by this.
	ctx, cancel := context.WithTimeout(sigctx, 15*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, chaos.Options{Bin: *bin, Clients: *clients, Settle: *settle, Stop: *stop, Out: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if len(rep.Problems) > 0 {
		os.Exit(1)
	}
}
