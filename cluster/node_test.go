package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/freeport"
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

// TestStatus: every node answers a status request through the loopback address and token in
// its data directory, and sees three healthy members, a meta leader and the buckets.
func TestStatus(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range nodes {
		var st Status
		// Heartbeats and the meta group's view settle within a few heartbeats.
		for {
			got, err := AskStatus(ctx, n.cfg.DataDir, n.NodeName())
			if err != nil {
				t.Fatalf("%v (last status %+v)", err, st)
			}
			st = got
			healthy := 0
			for _, m := range st.Members {
				if m.Health == "ok" && m.LastSeen >= 0 {
					healthy++
				}
			}
			if healthy == 3 && st.MetaLeader != "" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("status never showed 3 healthy members: %+v", st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(st.Buckets) != 8 {
			t.Fatalf("buckets %+v", st.Buckets)
		}
		for _, b := range st.Buckets {
			if b.Leader == "" || len(b.Replicas) != 2 {
				t.Fatalf("bucket %+v: want a leader and 2 followers", b)
			}
		}
		var out strings.Builder
		st.Print(&out)
		if !strings.Contains(out.String(), "jetstream meta leader: n") || !strings.Contains(out.String(), BucketLedger) {
			t.Fatalf("printed:\n%s", out.String())
		}
	}
	// A node that is stopped shows offline on the others.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if err := nodes[2].Close(cctx); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := AskStatus(ctx, nodes[0].cfg.DataDir, nodes[0].NodeName())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(st.Members, func(m MemberStatus) bool { return m.Name == "n3" })
		if i >= 0 && st.Members[i].Health != "ok" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("n3 still healthy after it stopped: %+v", st.Members)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := AskStatus(ctx, nodes[2].cfg.DataDir, "n3"); err == nil {
		t.Fatal("a stopped node's status file is still there")
	}
}

// TestNodeRestartAndJoin: a node stopped and started again on its data directory rejoins with
// what it had, and a fourth node that lists the others joins and reads and writes the buckets.
func TestNodeRestartAndJoin(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := nodes[0].Accounts.Put(ctx, "acc_before", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	// Restart node 3 on the same data directory and address.
	cfg := nodes[2].cfg
	if err := nodes[2].Close(ctx); err != nil {
		t.Fatal(err)
	}
	// If node 3 led the bucket's stream, the other two elect a leader first: the write may go
	// unanswered until then, which takes longer on a loaded machine than one request waits.
	for {
		_, err := nodes[0].Accounts.Put(ctx, "acc_while_down", []byte(`{"v":1}`))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("two of three must keep writing: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	again, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes[2] = again // closed by startCluster's cleanup
	for _, k := range []string{"acc_before", "acc_while_down"} {
		if _, err := again.Accounts.Get(ctx, k); err != nil {
			t.Fatalf("restarted node reads %s: %v", k, err)
		}
	}
	// A fourth node.
	addr := freePorts(t, 1)[0]
	peers := append([]string{addr}, nodes[0].cfg.Peers...)
	fourth, err := Start(ctx, Config{NodeName: "n4", Listen: addr, Peers: peers, Replicas: 3, DataDir: t.TempDir(), Log: cfg.Log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fourth.Close(context.Background()) })
	if _, err := fourth.Accounts.Get(ctx, "acc_before"); err != nil {
		t.Fatalf("fourth node reads: %v", err)
	}
	if _, err := fourth.Accounts.Put(ctx, "acc_from_4", []byte(`{"v":1}`)); err != nil {
		t.Fatalf("fourth node writes: %v", err)
	}
	if _, err := nodes[1].Accounts.Get(ctx, "acc_from_4"); err != nil {
		t.Fatalf("node 2 reads the fourth's write: %v", err)
	}
}

// TestNodeCreatesMissingBucket: a node that is not JetStream's meta leader leaves the buckets
// to it at start, but one missing while the leader runs on (a bucket that a node of an older
// version lacks) it creates itself after creatorWait, direct gets off.
func TestNodeCreatesMissingBucket(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := nodes[0].js.DeleteKeyValue(ctx, BucketLeases); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(nodes, func(n *Node) bool { return !n.srv.JetStreamIsLeader() })
	cfg := nodes[i].cfg
	if err := nodes[i].Close(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes[i] = again // closed by startCluster's cleanup
	stream, err := nodes[(i+1)%3].js.Stream(ctx, "KV_"+BucketLeases)
	if err != nil {
		t.Fatalf("the missing bucket was not created: %v", err)
	}
	if stream.CachedInfo().Config.AllowDirect {
		t.Fatal("the bucket created by a node that waited allows direct gets")
	}
	if _, err := again.Leases.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

// TestHealthyNeedsQuorum: a node alone of three is not healthy (it cannot admit), and is again
// once a peer is back.
func TestHealthyNeedsQuorum(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not in time", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("all healthy", func() bool { return nodes[0].Healthy() && nodes[1].Healthy() && nodes[2].Healthy() })
	cfg := nodes[1].cfg
	for _, n := range nodes[1:] {
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("node 1 alone unhealthy", func() bool { return !nodes[0].Healthy() })
	again, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes[1] = again
	waitFor("node 1 healthy with a peer back", func() bool { return nodes[0].Healthy() })
}

// TestStatusPlansDiffer: cluster status warns when the nodes run with different plans.
func TestStatusPlansDiffer(t *testing.T) {
	same := PlansDigest(map[string]shotd.Plan{"default": {Name: "default", MonthlyQuota: 10}})
	other := PlansDigest(map[string]shotd.Plan{"default": {Name: "default", MonthlyQuota: 11}})
	if same == other || same != PlansDigest(map[string]shotd.Plan{"default": {Name: "default", MonthlyQuota: 10}}) {
		t.Fatalf("digests %s %s", same, other)
	}
	var digest atomic.Value
	digest.Store(same)
	nodes := startClusterWith(t, 3, func(i int, c *Config) {
		if i == 2 {
			c.Plans = func() string { return digest.Load().(string) }
		} else {
			c.Plans = func() string { return same }
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := func(differ bool) {
		t.Helper()
		for {
			st, err := nodes[0].Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.PlansDiffer == differ && len(st.Members) == 3 {
				var out strings.Builder
				st.Print(&out)
				if strings.Contains(out.String(), "plans differ") != differ {
					t.Fatalf("printed:\n%s", out.String())
				}
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("plans differ %v, want %v: %+v", st.PlansDiffer, differ, st.Members)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	want(false)
	digest.Store(other) // node 3 reloads other plans
	want(true)
}

// TestHandOffLeaders: a stopping node hands the streams it leads to a peer at once, instead of
// leaving the others to notice after raft's election timeout; the last nodes of a stopping
// cluster, whose peers could not elect anyone, keep theirs.
func TestHandOffLeaders(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stream := "KV_" + BucketAccounts
	acc := nodes[0].srv.GlobalAccount().GetName()
	var leader *Node
	for leader == nil && ctx.Err() == nil {
		for _, n := range nodes {
			if n.srv.JetStreamIsStreamLeader(acc, stream) {
				leader = n
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader of the accounts bucket")
	}
	// The peers must be current for the hand-off: a write read back on every node says so.
	if _, err := leader.Accounts.Put(ctx, "acc_handoff", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	var moved []string
	for !slices.Contains(moved, stream) && ctx.Err() == nil {
		moved = leader.handOffLeaders()
		if !slices.Contains(moved, stream) {
			time.Sleep(200 * time.Millisecond) // a replica not yet reported current
		}
	}
	if leader.srv.JetStreamIsStreamLeader(acc, stream) || !leader.ledByPeer(ctx, stream) {
		t.Fatalf("handed off %v, yet the accounts bucket is not led by a peer", moved)
	}
	if _, err := leader.Accounts.Put(ctx, "acc_after_handoff", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}

	// With the two others stopped, nobody could take over: the last node keeps what it leads.
	var last *Node
	for _, n := range nodes {
		if last == nil && n != leader {
			last = n
			continue
		}
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if moved := last.handOffLeaders(); len(moved) > 0 {
		t.Fatalf("the last node handed off %v to nobody", moved)
	}
}

// TestStartErrorSaysWhatFailed: a start that times out says "no quorum" only for a lack of
// quorum (a node alone of three), and otherwise names the bucket and its error (a stream in the
// accounts bucket's place that is not a bucket: binding it fails however long the start waits).
func TestStartErrorSaysWhatFailed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)

	addrs := freePorts(t, 3)
	alone := Config{NodeName: "n1", Listen: addrs[0], Peers: addrs, DataDir: t.TempDir(), Log: log}
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	_, err := Start(sctx, alone)
	scancel()
	if err == nil || !strings.Contains(err.Error(), "no quorum of nodes") {
		t.Fatalf("a node alone of three: %v, want no quorum of nodes", err)
	}

	cfg := Config{NodeName: "solo", Listen: freeport.Addr(t), DataDir: t.TempDir(), Log: log}
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stream := "KV_" + BucketAccounts
	if err := n.js.DeleteStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	// A bucket keeps one message a subject; this stream keeps them all.
	if _, err := n.js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"$KV." + BucketAccounts + ".>"}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Long enough for a loaded machine to get past the meta leader's wait to the bucket.
	sctx, scancel = context.WithTimeout(ctx, 5*time.Second)
	_, err = Start(sctx, cfg)
	scancel()
	if err == nil || strings.Contains(err.Error(), "no quorum") || !strings.Contains(err.Error(), "bucket "+BucketAccounts) ||
		!errors.Is(err, jetstream.ErrBadBucket) {
		t.Fatalf("a bucket that cannot be bound: %v, want its name and error without no quorum", err)
	}
}
