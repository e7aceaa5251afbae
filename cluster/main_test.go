package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/internal/freeport"
)

// freePorts returns n loopback addresses for route listeners (internal/freeport: outside the
// ephemeral range, so a route's own outgoing connection cannot take one before its node listens).
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = freeport.Addr(t)
	}
	return addrs
}

// startCluster starts n nodes on loopback, each in its own temp dir, and closes them at the end.
func startCluster(t testing.TB, n int) []*Node {
	t.Helper()
	return startClusterWith(t, n, nil)
}

// startClusterWith is startCluster with each node's config changed by change (nil: none).
func startClusterWith(t testing.TB, n int, change func(i int, c *Config)) []*Node {
	t.Helper()
	addrs := freePorts(t, n)
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := range n {
		cfg := Config{
			NodeName: fmt.Sprintf("n%d", i+1),
			Listen:   addrs[i],
			Peers:    addrs,
			Replicas: 3,
			DataDir:  t.TempDir(),
			Log:      zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
		}
		if change != nil {
			change(i, &cfg)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = Start(ctx, cfg)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd != nil {
				cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
				_ = nd.Close(cctx)
				ccancel()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	return nodes
}
