package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Status is one node's view of the cluster, what `shotd cluster status` prints.
type Status struct {
	V          int            `json:"v"`
	Node       string         `json:"node"`
	Cluster    string         `json:"cluster"`
	MetaLeader string         `json:"meta_leader"`
	Members    []MemberStatus `json:"members"`
	Buckets    []BucketStatus `json:"buckets"`
	Now        time.Time      `json:"now"`
	// PlansDiffer: the members run with different plans (each node reads its own config file).
	PlansDiffer bool `json:"plans_differ,omitempty"`
	// Work is the work-queue stream of jobs and webhooks; nil before a node created it.
	Work *WorkStatus `json:"work,omitempty"`
}

// WorkStatus is the state of the work stream: its leader and replicas, the messages it holds,
// and each consumer's figures.
type WorkStatus struct {
	BucketStatus
	Messages  uint64           `json:"messages"`
	Consumers []ConsumerStatus `json:"consumers"`
}

// ConsumerStatus is a consumer of the work stream: messages waiting for a node, delivered and
// not acknowledged yet (being worked on), and delivered more than once (a node died or gave
// them back).
type ConsumerStatus struct {
	Name        string `json:"name"`
	Waiting     uint64 `json:"waiting"`
	InProgress  int    `json:"in_progress"`
	Redelivered int    `json:"redelivered"`
}

// MemberStatus is a node as the JetStream meta group and the nodes bucket see it.
type MemberStatus struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Listen  string `json:"listen,omitempty"`
	// Health: "ok" (current in the meta group and heartbeating), "lagging", "offline".
	Health   string        `json:"health"`
	Leader   bool          `json:"leader,omitempty"`
	LastSeen time.Duration `json:"last_seen"`       // since its last heartbeat; -1: none
	Plans    string        `json:"plans,omitempty"` // digest of its plans
}

// BucketStatus is a bucket's stream: its leader and replicas.
type BucketStatus struct {
	Name     string          `json:"name"`
	Leader   string          `json:"leader"`
	Replicas []ReplicaStatus `json:"replicas"`
	Keys     uint64          `json:"keys"`
	Bytes    uint64          `json:"bytes"`
}

// ReplicaStatus is a follower of a stream.
type ReplicaStatus struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline,omitempty"`
	Lag     uint64 `json:"lag,omitempty"`
}

// statusSubject is where a node answers status requests, by name.
func statusSubject(node string) string { return "shotd.cluster.status." + node }

// Status gathers this node's view.
func (n *Node) Status(ctx context.Context) (Status, error) {
	st := Status{V: recordVersion, Node: n.cfg.NodeName, Cluster: n.cfg.Name, Now: time.Now().UTC()}
	jsz, err := n.srv.Jsz(&server.JSzOptions{})
	if err != nil {
		return st, fmt.Errorf("cluster: jetstream state: %w", err)
	}
	heard := map[string]nodeRecord{}
	if lister, err := n.Nodes.ListKeys(ctx); err == nil {
		for k := range lister.Keys() {
			if e, err := n.Nodes.Get(ctx, k); err == nil {
				var r nodeRecord
				if decode(n.log, "node", k, e.Value(), &r) == nil {
					heard[k] = r
				}
			}
		}
	}
	health := map[string]string{}
	meta := jsz.Meta
	if meta != nil && meta.Leader != "" && meta.Leader != n.cfg.NodeName {
		// Only the meta leader knows how current the others are; a follower's view of them is
		// empty or stale.
		if m, err := n.nc.RequestWithContext(ctx, metaSubject(meta.Leader), nil); err == nil {
			var lm server.MetaClusterInfo
			if json.Unmarshal(m.Data, &lm) == nil && lm.Leader != "" {
				meta = &lm
			}
		}
	}
	if m := meta; m != nil {
		st.MetaLeader = m.Leader
		if m.Leader != "" {
			health[m.Leader] = "ok"
		}
		for _, p := range m.Replicas {
			switch {
			case p.Offline:
				health[p.Name] = "offline"
			case !p.Current:
				health[p.Name] = "lagging"
			default:
				health[p.Name] = "ok"
			}
		}
	} else {
		health[n.cfg.NodeName] = "ok" // a cluster of one: standalone JetStream
		st.MetaLeader = n.cfg.NodeName
	}
	names := map[string]bool{}
	for k := range health {
		names[k] = true
	}
	for k := range heard {
		names[k] = true
	}
	for name := range names {
		m := MemberStatus{Name: name, Health: health[name], Leader: name == st.MetaLeader, LastSeen: -1}
		if r, ok := heard[name]; ok {
			m.Version, m.Listen, m.LastSeen, m.Plans = r.Version, r.Listen, st.Now.Sub(r.Seen).Round(time.Millisecond), r.Plans
		}
		if m.Health == "" {
			m.Health = "offline" // heartbeating, yet not in the meta group
		}
		if _, ok := heard[name]; !ok && m.Health == "ok" {
			m.Health = "no heartbeat"
		}
		st.Members = append(st.Members, m)
	}
	slices.SortFunc(st.Members, func(a, b MemberStatus) int { return strings.Compare(a.Name, b.Name) })
	plans := ""
	for _, m := range st.Members {
		if m.Plans != "" {
			if plans != "" && m.Plans != plans {
				st.PlansDiffer = true
			}
			plans = m.Plans
		}
	}
	for _, b := range n.buckets() {
		kv := *b.dst
		s, err := kv.Status(ctx)
		if err != nil {
			st.Buckets = append(st.Buckets, BucketStatus{Name: kv.Bucket(), Leader: "unavailable: " + err.Error()})
			continue
		}
		bs := BucketStatus{Name: kv.Bucket(), Keys: s.Values(), Bytes: s.Bytes()}
		if ks, ok := s.(*jetstream.KeyValueBucketStatus); ok {
			if ci := ks.StreamInfo().Cluster; ci != nil {
				bs.Leader = ci.Leader
				for _, r := range ci.Replicas {
					bs.Replicas = append(bs.Replicas, ReplicaStatus{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag})
				}
			}
		}
		if bs.Leader == "" {
			bs.Leader = n.cfg.NodeName
		}
		st.Buckets = append(st.Buckets, bs)
	}
	st.Work = n.workStatus(ctx)
	return st, nil
}

// workStatus reads the work stream and its consumers; nil when there is none yet.
func (n *Node) workStatus(ctx context.Context) *WorkStatus {
	stream, err := n.js.Stream(ctx, StreamWork)
	if err != nil {
		return nil
	}
	info := stream.CachedInfo()
	ws := &WorkStatus{BucketStatus: BucketStatus{Name: StreamWork, Leader: n.cfg.NodeName, Bytes: info.State.Bytes}, Messages: info.State.Msgs}
	if ci := info.Cluster; ci != nil && ci.Leader != "" {
		ws.Leader = ci.Leader
		for _, r := range ci.Replicas {
			ws.Replicas = append(ws.Replicas, ReplicaStatus{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag})
		}
	}
	for _, name := range []string{consumerJob, consumerHk} {
		c, err := stream.Consumer(ctx, name)
		if err != nil {
			continue
		}
		ci := c.CachedInfo()
		ws.Consumers = append(ws.Consumers, ConsumerStatus{Name: name, Waiting: ci.NumPending, InProgress: ci.NumAckPending, Redelivered: ci.NumRedelivered})
	}
	return ws
}

// metaSubject is where a node answers with its view of the JetStream meta group.
func metaSubject(node string) string { return "shotd.cluster.meta." + node }

// serveStatus answers status requests addressed to this node.
func (n *Node) serveStatus() error {
	if _, err := n.nc.Subscribe(metaSubject(n.cfg.NodeName), func(m *nats.Msg) {
		jsz, err := n.srv.Jsz(&server.JSzOptions{})
		if err != nil || jsz.Meta == nil {
			_ = m.Respond([]byte("{}"))
			return
		}
		data, _ := json.Marshal(jsz.Meta)
		_ = m.Respond(data)
	}); err != nil {
		return err
	}
	_, err := n.nc.Subscribe(statusSubject(n.cfg.NodeName), func(m *nats.Msg) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := n.Status(ctx)
		if err != nil {
			n.log.Warn().Err(err).Msg("cluster status")
		}
		data, _ := json.Marshal(st)
		_ = m.Respond(data)
	})
	return err
}

// AskStatus asks the node whose data directory is dataDir for its status, through the loopback
// address and token it wrote there.
func AskStatus(ctx context.Context, dataDir, node string) (Status, error) {
	path := filepath.Join(dataDir, "cluster", ClientFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Status{}, fmt.Errorf("%s does not exist: is serve running in cluster mode with this configuration?", path)
	}
	if err != nil {
		return Status{}, err
	}
	var ci clientInfo
	if err := json.Unmarshal(data, &ci); err != nil || ci.V != recordVersion {
		return Status{}, fmt.Errorf("%s: unreadable (version %d): %v", path, ci.V, err)
	}
	nc, err := nats.Connect(ci.URL, nats.Token(ci.Token), nats.Name("shotd-cluster-status"), nats.Timeout(5*time.Second))
	if err != nil {
		return Status{}, fmt.Errorf("connect to the node at %s: %w", ci.URL, err)
	}
	defer nc.Close()
	m, err := nc.RequestWithContext(ctx, statusSubject(node), nil)
	if err != nil {
		return Status{}, fmt.Errorf("ask node %s for its status: %w", node, err)
	}
	var st Status
	if err := json.Unmarshal(m.Data, &st); err != nil {
		return Status{}, fmt.Errorf("status answer: %w", err)
	}
	if st.V != recordVersion {
		return Status{}, fmt.Errorf("status answer of version %d, this shotd reads %d: %w", st.V, recordVersion, ErrUnknownVersion)
	}
	return st, nil
}

// Print writes the status for operators.
func (st Status) Print(w io.Writer) {
	fmt.Fprintf(w, "cluster %s, seen from %s at %s\n", st.Cluster, st.Node, st.Now.Format(time.RFC3339))
	leader := st.MetaLeader
	if leader == "" {
		leader = "none (no quorum)"
	}
	fmt.Fprintf(w, "jetstream meta leader: %s\n\nmembers:\n", leader)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tHEALTH\tLEADER\tVERSION\tLISTEN\tLAST HEARTBEAT\tPLANS")
	for _, m := range st.Members {
		seen := "never"
		if m.LastSeen >= 0 {
			seen = m.LastSeen.String() + " ago"
		}
		lead := ""
		if m.Leader {
			lead = "*"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Health, lead, m.Version, m.Listen, seen, m.Plans)
	}
	_ = tw.Flush()
	if st.PlansDiffer {
		fmt.Fprintln(w, "\nwarning: the members' plans differ: keep the [plans.*] tables of every node's config equal")
	}
	fmt.Fprintln(w, "\nbuckets:")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tLEADER\tKEYS\tBYTES\tREPLICAS")
	for _, b := range st.Buckets {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", b.Name, b.Leader, b.Keys, b.Bytes, replicaList(b.Replicas))
	}
	_ = tw.Flush()
	if wk := st.Work; wk != nil {
		fmt.Fprintf(w, "\nwork stream %s: leader %s, %d messages, replicas %s\n", wk.Name, wk.Leader, wk.Messages, replicaList(wk.Replicas))
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CONSUMER\tWAITING\tIN PROGRESS\tREDELIVERED")
		for _, c := range wk.Consumers {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", c.Name, c.Waiting, c.InProgress, c.Redelivered)
		}
		_ = tw.Flush()
	}
}

// replicaList is a stream's followers as "name:current", "name:offline" or "name:lag n".
func replicaList(rs []ReplicaStatus) string {
	var reps []string
	for _, r := range rs {
		s := r.Name + ":current"
		switch {
		case r.Offline:
			s = r.Name + ":offline"
		case !r.Current:
			s = fmt.Sprintf("%s:lag %d", r.Name, r.Lag)
		}
		reps = append(reps, s)
	}
	return strings.Join(reps, " ")
}
