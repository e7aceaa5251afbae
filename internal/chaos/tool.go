package chaos

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Printable is a run's report as the tools print it: a *Report or a *SoakReport.
type Printable interface {
	Print(w io.Writer)
	Failed() bool
}

// Failed reports whether a correctness rule broke.
func (r *Report) Failed() bool { return len(r.Problems) > 0 }

// Failed reports whether something grew without bound or an answer broke the contract.
func (r *SoakReport) Failed() bool { return len(r.Problems) > 0 }

// ChaosTool is the command tools/chaos (`make chaos`): Run with the options from its flags.
func ChaosTool() {
	clients := flag.Int("clients", 8, "concurrent rendering clients")
	settle := flag.Duration("settle", 15*time.Second, "traffic between two faults")
	stop := flag.Duration("stop", 20*time.Second, "how long a browser stays stopped (SIGSTOP)")
	// Bounded: the whole run, faults and recoveries included, ends by -limit.
	toolMain("chaos", 15*time.Minute, func(ctx context.Context, bin string) (Printable, error) {
		return Run(ctx, Options{Bin: bin, Clients: *clients, Settle: *settle, Stop: *stop, Out: os.Stderr})
	})
}

// SoakTool is the command tools/soak (`make soak`): Soak with the options from its flags.
func SoakTool() {
	n := flag.Int("n", 5000, "renders")
	clients := flag.Int("clients", 8, "concurrent clients (the plan's concurrency)")
	interval := flag.Duration("interval", 10*time.Second, "between two samples")
	toolMain("soak", 2*time.Hour, func(ctx context.Context, bin string) (Printable, error) {
		return Soak(ctx, SoakOptions{Bin: bin, Renders: *n, Clients: *clients, Interval: *interval, Out: os.Stderr})
	})
}

// toolMain is what both tools share. It adds the flags -bin (the shotd binary, "" to build one)
// and -limit (the bound of the whole run) to the tool's own, parses them, runs run, prints the
// report and exits 2 when the run could not be made, 1 when a rule broke, 0 otherwise. An
// interrupt ends the run through its context, so the service and its directory are removed.
func toolMain(name string, limit time.Duration, run func(ctx context.Context, bin string) (Printable, error)) {
	bin := flag.String("bin", "", "shotd binary (default: build one)")
	flag.DurationVar(&limit, "limit", limit, "the run ends by this, done or not")
	flag.Parse()
	sigctx, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(sigctx, limit)
	rep, err := run(ctx, *bin)
	cancel()
	stopSig()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if rep.Failed() {
		os.Exit(1)
	}
}
