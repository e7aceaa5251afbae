package cluster

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// handOffTimeout bounds the hand-off of a stopping node's leaderships.
const handOffTimeout = 3 * time.Second

// handOffLeaders moves the leadership of every stream and consumer this node leads to a peer
// before the node stops. Without it the others notice the leader gone only after raft's election
// timeout (4 to 9 s), and until then the writes to those buckets (the ledger, the job records)
// and the fetches of the work stream go unanswered: a graceful restart would stall the cluster
// as a crash does. It returns the streams (and "stream/consumer"s) it handed off; it waits, up
// to handOffTimeout, until a peer leads each, so that the node does not stop before its
// transfer message left.
func (n *Node) handOffLeaders() []string {
	if n.srv == nil || !n.srv.JetStreamIsClustered() || n.js == nil {
		return nil
	}
	acc := n.srv.GlobalAccount().GetName()
	var streams, moved []string
	for _, b := range n.buckets() {
		if *b.dst != nil {
			streams = append(streams, "KV_"+b.cfg.Bucket)
		}
	}
	streams = append(streams, StreamWork)
	ctx, cancel := context.WithTimeout(context.Background(), handOffTimeout)
	defer cancel()
	for _, s := range streams {
		if n.srv.JetStreamIsStreamLeader(acc, s) && n.peersCarryOn(ctx, s) && n.srv.JetStreamStepdownStream(acc, s) == nil {
			moved = append(moved, s)
		}
	}
	for _, c := range []string{consumerJob, consumerHk} {
		name := StreamWork + "/" + c
		if n.srv.JetStreamIsConsumerLeader(acc, StreamWork, c) && n.peersCarryOn(ctx, name) && n.srv.JetStreamStepdownConsumer(acc, StreamWork, c) == nil {
			moved = append(moved, name)
		}
	}
	if len(moved) == 0 {
		return nil
	}
	for _, s := range moved {
		for !n.ledByPeer(ctx, s) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	n.log.Info().Strs("leaderships", moved).Msg("leaderships handed to other nodes before stopping")
	return moved
}

// ledByPeer reports whether stream (or "stream/consumer") has a leader other than this node.
func (n *Node) ledByPeer(ctx context.Context, name string) bool {
	ci := n.clusterInfo(ctx, name)
	return ci != nil && ci.Leader != "" && ci.Leader != n.cfg.NodeName
}

// peersCarryOn reports whether the replicas of stream (or "stream/consumer") other than this
// node are a quorum of its group, current and online: only then can one of them take over. The
// last nodes of a stopping cluster keep their leadership, as nobody could take it.
func (n *Node) peersCarryOn(ctx context.Context, name string) bool {
	ci := n.clusterInfo(ctx, name)
	if ci == nil {
		return false
	}
	live := 0
	for _, r := range ci.Replicas {
		if r.Current && !r.Offline {
			live++
		}
	}
	return live >= (len(ci.Replicas)+1)/2+1
}

// clusterInfo reads the raft group of stream (or "stream/consumer"): nil when it cannot.
func (n *Node) clusterInfo(ctx context.Context, name string) *jetstream.ClusterInfo {
	stream, consumer, _ := strings.Cut(name, "/")
	actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if consumer == "" {
		s, err := n.js.Stream(actx, stream)
		if err != nil {
			return nil
		}
		return s.CachedInfo().Cluster
	}
	c, err := n.js.Consumer(actx, stream, consumer)
	if err != nil {
		return nil
	}
	return c.CachedInfo().Cluster
}
