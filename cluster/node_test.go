package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestNodesShareBuckets: a value written through one node is read through the others, and the
// buckets have the replicas asked for.
func TestNodesShareBuckets(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := nodes[0].Accounts.Put(ctx, "acc_x", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if n.Replicas() != 3 {
			t.Fatalf("node %d: replicas %d, want 3", i+1, n.Replicas())
		}
		e, err := n.Accounts.Get(ctx, "acc_x")
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		if string(e.Value()) != `{"v":1}` {
			t.Fatalf("node %d: got %s", i+1, e.Value())
		}
		st, err := n.Accounts.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
			t.Fatalf("bucket replicas %d, want 3", r)
		}
	}
}
