package chaos

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestChaosShort is the short form of `make chaos`: every fault once with little traffic in
// between. It asserts the correctness figures only, never a duration.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Chrome")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out strings.Builder
	rep, err := Run(ctx, Options{Clients: 8, Settle: 3 * time.Second, Stop: 10 * time.Second, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	var figures strings.Builder
	rep.Print(&figures)
	t.Log("\n" + out.String() + figures.String())
	for _, p := range rep.Problems {
		t.Error(p)
	}
	if rep.Renders == 0 || rep.Jobs == 0 {
		t.Errorf("%d renders and %d jobs: the run did not render", rep.Renders, rep.Jobs)
	}
}
