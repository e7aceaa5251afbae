package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCluster(t *testing.T) {
	dir := t.TempDir()
	pem := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("-----BEGIN X-----\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key, ca := pem("node.crt"), pem("node.key"), pem("ca.crt")
	const s3 = "[storage.s3]\nendpoint = \"http://127.0.0.1:9000\"\nbucket = \"shots\"\naccess_key_id = \"a\"\nsecret_access_key = \"s\"\n"
	const loop = "[cluster]\nnode_name = \"n1\"\nlisten = \"127.0.0.1:7422\"\npeers = [\"127.0.0.1:7423\", \"localhost:7424\"]\n"
	tlsKeys := "cert_file = \"" + cert + "\"\nkey_file = \"" + key + "\"\nca_file = \"" + ca + "\"\n"
	cases := []struct {
		name string
		toml string
		env  []string
		err  string // a substring of the error; "" = valid
		want Cluster
	}{
		{name: "absent: a single node", toml: s3, want: Cluster{}},
		{name: "loopback without TLS", toml: s3 + loop,
			want: Cluster{NodeName: "n1", Name: "shotd", Listen: "127.0.0.1:7422", Peers: []string{"127.0.0.1:7423", "localhost:7424"}, Replicas: 3}},
		{name: "replicas kept", toml: s3 + loop + "replicas = 1\n",
			want: Cluster{NodeName: "n1", Name: "shotd", Listen: "127.0.0.1:7422", Peers: []string{"127.0.0.1:7423", "localhost:7424"}, Replicas: 1}},
		{name: "from the environment", toml: s3, env: []string{"SHOTD_CLUSTER_NODE_NAME=n2", "SHOTD_CLUSTER_LISTEN=127.0.0.1:1", "SHOTD_CLUSTER_PEERS=127.0.0.1:2,127.0.0.1:3"},
			want: Cluster{NodeName: "n2", Name: "shotd", Listen: "127.0.0.1:1", Peers: []string{"127.0.0.1:2", "127.0.0.1:3"}, Replicas: 3}},
		{name: "without S3", toml: loop, err: "storage.s3: is required in cluster mode"},
		{name: "public listen without TLS", toml: s3 + "[cluster]\nnode_name = \"n1\"\nlisten = \"0.0.0.0:7422\"\n", err: "mutual TLS is required"},
		{name: "remote peer without TLS", toml: s3 + loop + "", env: []string{"SHOTD_CLUSTER_PEERS=10.0.0.2:7422"}, err: "mutual TLS is required"},
		{name: "peer by host name without TLS", toml: s3 + loop, env: []string{"SHOTD_CLUSTER_PEERS=node2.internal:7422"}, err: "mutual TLS is required"},
		{name: "remote peer with TLS", toml: s3 + "[cluster]\nnode_name = \"n1\"\nlisten = \"0.0.0.0:7422\"\npeers = [\"10.0.0.2:7422\"]\n" + tlsKeys,
			want: Cluster{NodeName: "n1", Name: "shotd", Listen: "0.0.0.0:7422", Peers: []string{"10.0.0.2:7422"}, Replicas: 3, CertFile: cert, KeyFile: key, CAFile: ca}},
		{name: "TLS half set", toml: s3 + loop + "cert_file = \"" + cert + "\"\n", err: "cluster.key_file: must be set"},
		{name: "TLS file missing", toml: s3 + loop + "cert_file = \"/nonexistent/c\"\nkey_file = \"" + key + "\"\nca_file = \"" + ca + "\"\n", err: "cluster.cert_file: cannot be read"},
		{name: "bad node name", toml: s3 + "[cluster]\nnode_name = \"n 1\"\nlisten = \"127.0.0.1:7422\"\n", err: "cluster.node_name"},
		{name: "node name of a job hold", toml: s3 + "[cluster]\nnode_name = \"job-1\"\nlisten = \"127.0.0.1:7422\"\n", err: "reserved"},
		{name: "no node name", toml: s3 + "[cluster]\nlisten = \"127.0.0.1:7422\"\n", err: "cluster.node_name"},
		{name: "bad listen", toml: s3 + "[cluster]\nnode_name = \"n1\"\nlisten = \"127.0.0.1\"\n", err: "cluster.listen"},
		{name: "peer without port", toml: s3 + loop, env: []string{"SHOTD_CLUSTER_PEERS=127.0.0.1"}, err: "cluster.peers[0]"},
		{name: "too many replicas", toml: s3 + loop + "replicas = 7\n", err: "cluster.replicas"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.toml), c.env)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Cluster
			if got.NodeName != c.want.NodeName || got.Name != c.want.Name || got.Listen != c.want.Listen || !slices.Equal(got.Peers, c.want.Peers) ||
				got.Replicas != c.want.Replicas || got.CertFile != c.want.CertFile || got.KeyFile != c.want.KeyFile || got.CAFile != c.want.CAFile {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if got.Enabled() != (c.want.NodeName != "") {
				t.Fatalf("Enabled() = %v", got.Enabled())
			}
		})
	}
}
