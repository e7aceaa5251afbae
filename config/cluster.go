package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
)

// Cluster is the [cluster] table: with it, this node is one of several that form one service
// over embedded NATS JetStream (package cluster). Without it (every key empty) nothing changes:
// bbolt alone, no NATS, a single node.
type Cluster struct {
	// NodeName names this node among its peers (the NATS server name); unique in the cluster.
	NodeName string `toml:"node_name"`
	// Name is the cluster's name, the same on every node; "" = "shotd".
	Name string `toml:"name"`
	// Listen is host:port for the routes between nodes.
	Listen string `toml:"listen"`
	// Peers are the other nodes' route addresses, host:port each (this node's own may be listed:
	// it is ignored by NATS).
	Peers []string `toml:"peers,omitempty"`
	// Replicas of every stream and bucket; 0 = 3. Clamped to the number of known nodes.
	Replicas int `toml:"replicas"`
	// Mutual TLS between nodes: required whenever listen or a peer is not a loopback address.
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
	CAFile   string `toml:"ca_file"`
}

// DefaultReplicas is the replica count of streams and buckets when [cluster] sets none.
const DefaultReplicas = 3

// DefaultClusterName is the NATS cluster name when [cluster] sets none.
const DefaultClusterName = "shotd"

// Enabled reports whether the table is set: cluster mode.
func (c Cluster) Enabled() bool {
	return c.NodeName != "" || c.Listen != "" || len(c.Peers) > 0
}

// TLS reports whether certificates are configured.
func (c Cluster) TLS() bool { return c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" }

// NeedsTLS reports whether listen or a peer is off loopback, where mutual TLS is required.
func (c Cluster) NeedsTLS() bool {
	if !loopbackHostPort(c.Listen) {
		return true
	}
	for _, p := range c.Peers {
		if !loopbackHostPort(p) {
			return true
		}
	}
	return false
}

// nodeName is what NATS accepts as a server name and what a KV key may carry.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// validate checks the table against the rest of the configuration. It normalizes Name and
// Replicas, so that the cluster package reads them as they are.
func (c *Cluster) validate(v *validator, s3 S3) {
	if !c.Enabled() {
		return
	}
	if !nodeName.MatchString(c.NodeName) {
		v.addf("cluster.node_name", "must be 1 to 64 of A-Z a-z 0-9 _ -, starting with a letter or digit, got %q", c.NodeName)
	} else if strings.HasPrefix(strings.ToLower(c.NodeName), "job-") {
		// The ledger names a job's reservation job-<id>, and a node's own <node>-<n>.
		v.addf("cluster.node_name", "must not start with \"job-\" (reserved), got %q", c.NodeName)
	}
	if c.Name == "" {
		c.Name = DefaultClusterName
	} else if !nodeName.MatchString(c.Name) {
		v.addf("cluster.name", "must be 1 to 64 of A-Z a-z 0-9 _ -, got %q", c.Name)
	}
	v.listen("cluster.listen", c.Listen)
	for i, p := range c.Peers {
		if _, port, err := net.SplitHostPort(p); err != nil || port == "" || port == "0" {
			v.addf(fmt.Sprintf("cluster.peers[%d]", i), "must be host:port with a port, got %q", p)
		}
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	v.between("cluster.replicas", c.Replicas, 1, 5)
	if c.TLS() {
		for _, f := range []struct{ key, path string }{{"cluster.cert_file", c.CertFile}, {"cluster.key_file", c.KeyFile}, {"cluster.ca_file", c.CAFile}} {
			if f.path == "" {
				v.addf(f.key, "must be set: cert_file, key_file and ca_file go together (mutual TLS)")
			} else if _, err := os.Stat(f.path); err != nil {
				v.addf(f.key, "cannot be read: %v", err)
			}
		}
	} else if c.NeedsTLS() {
		// Routes carry accounts, keys with their secrets and the quota ledger: never in clear
		// text beyond this host.
		v.addf("cluster.cert_file", "mutual TLS is required when cluster.listen or a peer is not a loopback address: set cert_file, key_file and ca_file")
	}
	if !s3.Enabled() {
		v.addf("storage.s3", "is required in cluster mode: every node serves every stored file from the shared bucket")
	}
}

// loopbackHostPort reports whether addr's host is a loopback address or "localhost". An
// unspecified host (":7422", "0.0.0.0") listens on every interface: not loopback.
func loopbackHostPort(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
