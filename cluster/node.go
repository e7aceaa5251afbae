package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/store"
)

// Config starts a node. config.Cluster holds the operator's part of it.
type Config struct {
	NodeName string
	Name     string // the cluster's name; "" = "shotd"
	Listen   string // host:port for routes
	Peers    []string
	Replicas int // 0 = 3; clamped to the number of known nodes
	CertFile string
	KeyFile  string
	CAFile   string
	// DataDir is the node's data directory: JetStream stores in DataDir/cluster/jetstream, and
	// DataDir/cluster/client.json tells `shotd cluster status` how to reach the node.
	DataDir string
	Log     zerolog.Logger
	// Version is the shotd version this node runs, shown by cluster status.
	Version string
	// Plans, when set, is a digest of the plans this node runs with (read at every heartbeat, so
	// that a reload shows): cluster status warns when the nodes' plans differ.
	Plans func() string
}

// Bucket names. Every bucket is created at start with the node's replica count.
const (
	BucketAccounts = "shotd_accounts" // account id -> accountRecord
	BucketKeys     = "shotd_keys"     // access key -> keyRecord (with the secret)
	BucketLedger   = "shotd_ledger"   // account id "." period start (unix) -> ledgerRecord
	BucketNodes    = "shotd_nodes"    // node name -> nodeRecord, expires unless refreshed
	BucketFiles    = "shotd_files"    // file id -> fileRecord, expires with the file (per-key TTL)
	BucketJobs     = "shotd_jobs"     // "j." job id -> jobRecord, "b." batch id -> batchRecord (jobs.go)
	BucketSecrets  = "shotd_secrets"  // "sealing" -> the cluster's key for job credentials (sealing.go)
	BucketLeases   = "shotd_leases"   // task name -> leaseRecord: which node runs a once-per-cluster task (lease.go)
)

// nodeTTL: a node record not refreshed for this long disappears (the node is gone).
const (
	nodeTTL       = 15 * time.Second
	nodeHeartbeat = 3 * time.Second
)

// ClientFile is where a node writes how a local `shotd cluster status` reaches it.
const ClientFile = "client.json"

// clientInfo is ClientFile: a loopback URL and a token (the file is 0600, like the database).
type clientInfo struct {
	V     int    `json:"v"`
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Node is this node's part of the cluster: the embedded NATS server, the in-process connection
// and the buckets.
type Node struct {
	cfg      Config
	log      zerolog.Logger
	srv      *server.Server
	nc       *nats.Conn
	js       jetstream.JetStream
	replicas int

	Accounts jetstream.KeyValue
	Keys     jetstream.KeyValue
	Ledger   jetstream.KeyValue
	Nodes    jetstream.KeyValue
	Files    jetstream.KeyValue
	Jobs     jetstream.KeyValue // job and batch records (jobs.go)
	Secrets  jetstream.KeyValue // the sealing key (sealing.go)
	Leases   jetstream.KeyValue // once-per-cluster tasks (lease.go)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	started   time.Time
	lastBeat  atomic.Int64 // unix nanoseconds of the last heartbeat written
}

// Start starts the embedded server, joins the peers and creates the buckets. In a new cluster
// the buckets can be created only once a quorum of nodes is up, so Start waits for it until ctx
// ends (a node started alone of three waits for a second one).
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Name == "" {
		cfg.Name = "shotd"
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 3
	}
	n := &Node{cfg: cfg, log: cfg.Log.With().Str("node", cfg.NodeName).Logger(), stop: make(chan struct{}), started: time.Now().UTC()}
	opts, token, err := serverOptions(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: nats server: %w", err)
	}
	srv.SetLoggerV2(natsLogger{n.log}, false, false, false)
	go srv.Start()
	n.srv = srv
	fail := func(err error) (*Node, error) {
		n.shutdown()
		return nil, err
	}
	if !srv.ReadyForConnections(30 * time.Second) {
		return fail(errors.New("cluster: the embedded nats server did not start (see the log: a route listener in use?)"))
	}
	if err := n.writeClientFile(token); err != nil {
		return fail(err)
	}
	n.nc, err = nats.Connect("", nats.InProcessServer(srv), nats.Token(token), nats.Name("shotd-"+cfg.NodeName),
		nats.MaxReconnects(-1))
	if err != nil {
		return fail(fmt.Errorf("cluster: connect in process: %w", err))
	}
	if n.js, err = jetstream.New(n.nc); err != nil {
		return fail(fmt.Errorf("cluster: jetstream: %w", err))
	}
	known := knownNodes(cfg)
	n.replicas = min(cfg.Replicas, known)
	if n.replicas < cfg.Replicas {
		n.log.Warn().Int("replicas", cfg.Replicas).Int("known_nodes", known).Int("using", n.replicas).
			Msg("fewer nodes known than replicas: streams and buckets use one replica per known node")
	}
	if err := n.createBuckets(ctx); err != nil {
		return fail(err)
	}
	if err := n.serveStatus(); err != nil {
		return fail(fmt.Errorf("cluster: status responder: %w", err))
	}
	n.wg.Add(1)
	go n.heartbeat()
	n.log.Info().Str("listen", cfg.Listen).Strs("peers", cfg.Peers).Int("replicas", n.replicas).Msg("cluster node started")
	return n, nil
}

// knownNodes counts this node and its distinct peers (its own listen address, if listed, once).
func knownNodes(cfg Config) int {
	seen := map[string]bool{cfg.Listen: true}
	for _, p := range cfg.Peers {
		seen[p] = true
	}
	return len(seen)
}

func serverOptions(cfg Config) (*server.Options, string, error) {
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: listen %q: %w", cfg.Listen, err)
	}
	token := randomHex(24)
	opts := &server.Options{
		ServerName: cfg.NodeName,
		// Clients (the in-process connection, `shotd cluster status`) only on loopback, on a
		// free port, with a token that only this node's data directory holds.
		Host:          "127.0.0.1",
		Port:          server.RANDOM_PORT,
		Authorization: token,
		NoSigs:        true,
		JetStream:     true,
		StoreDir:      filepath.Join(cfg.DataDir, "cluster", "jetstream"),
		// fsync every write: with the default interval, acknowledged writes were lost in a
		// published analysis (December 2025), and a lost ledger write is a lost bill.
		SyncAlways: true,
		Cluster: server.ClusterOpts{
			Name:           cfg.Name,
			Host:           host,
			Port:           port,
			ConnectRetries: -1, // keep trying peers that are down: they come back
			TLSTimeout:     5,
		},
		MaxPayload: 1 << 20,
	}
	if knownNodes(cfg) == 1 {
		// NATS runs JetStream clustered only with routes: a cluster of one node is a standalone
		// JetStream server, which a later restart with peers cannot join (its data stays).
		opts.Cluster = server.ClusterOpts{}
		return opts, token, nil
	}
	if cfg.CertFile != "" {
		tc, err := mutualTLS(cfg)
		if err != nil {
			return nil, "", err
		}
		opts.Cluster.TLSConfig = tc
	}
	for _, p := range cfg.Peers {
		if p == cfg.Listen {
			continue
		}
		u, err := url.Parse("nats-route://" + p)
		if err != nil {
			return nil, "", fmt.Errorf("cluster: peer %q: %w", p, err)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return opts, token, nil
}

// mutualTLS is the routes' TLS: this node's certificate, and the CA that every peer's
// certificate must chain to, asked of both sides.
func mutualTLS(cfg Config) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: cert_file/key_file: %w", err)
	}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: ca_file %s holds no PEM certificate", cfg.CAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func splitHostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, n, nil
}

// bucketSpec is one of the node's buckets: where it goes and how it is made.
type bucketSpec struct {
	dst *jetstream.KeyValue
	cfg jetstream.KeyValueConfig
}

// buckets lists every bucket of the node, so that one added here is created (createBuckets),
// has its stream's leadership handed off (handOffLeaders) and shows in Status.
func (n *Node) buckets() []bucketSpec {
	return []bucketSpec{
		{&n.Accounts, jetstream.KeyValueConfig{Bucket: BucketAccounts, Description: "shotd accounts"}},
		{&n.Keys, jetstream.KeyValueConfig{Bucket: BucketKeys, Description: "shotd access keys"}},
		{&n.Ledger, jetstream.KeyValueConfig{Bucket: BucketLedger, Description: "shotd quota ledger"}},
		{&n.Nodes, jetstream.KeyValueConfig{Bucket: BucketNodes, Description: "shotd members", TTL: nodeTTL}},
		{&n.Files, jetstream.KeyValueConfig{Bucket: BucketFiles, Description: "shotd stored files", LimitMarkerTTL: time.Minute}},
		// A record lives JobRetention after its last change, as a finished job in bbolt.
		{&n.Jobs, jetstream.KeyValueConfig{Bucket: BucketJobs, Description: "shotd jobs and batches", TTL: store.JobRetention}},
		{&n.Secrets, jetstream.KeyValueConfig{Bucket: BucketSecrets, Description: "shotd cluster secrets"}},
		{&n.Leases, jetstream.KeyValueConfig{Bucket: BucketLeases, Description: "shotd once-per-cluster tasks"}},
	}
}

// createBuckets creates (or adopts) every bucket, retrying while JetStream has no quorum yet.
func (n *Node) createBuckets(ctx context.Context) error {
	logged := time.Time{}
	// Until JetStream's meta group has a leader this node follows, its API requests go
	// unanswered until their timeout: wait for it first.
	for !n.srv.JetStreamIsCurrent() {
		if time.Since(logged) > 10*time.Second {
			n.log.Info().Msg("waiting for a quorum of nodes")
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: no quorum of nodes before the start timeout (are the peers up and reachable?): %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, s := range n.buckets() {
		s.cfg.Replicas = n.replicas
		s.cfg.Storage = jetstream.FileStorage
		s.cfg.History = 1
		waitFrom := time.Now()
		var last error // the last try's error
		for {
			// One node creates and updates each bucket, the others bind once it is done: three
			// nodes creating and updating the same stream at once left most of their requests
			// unanswered for seconds. The creator is JetStream's meta leader (one live node the
			// whole cluster agrees on); a node that has waited creatorWait does it itself (the
			// meta leader may be a running node of an older version that lacks this bucket).
			create := n.createsBuckets() || time.Since(waitFrom) > creatorWait
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			kv, err := n.createBucket(actx, s.cfg, create)
			cancel()
			if err == nil {
				*s.dst = kv
				break
			}
			// A try cut short by the start's end says only that: the one before says why.
			if last == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
				last = err
			}
			if ctx.Err() != nil {
				return bucketStartErr(s.cfg.Bucket, last)
			}
			pause := 500 * time.Millisecond
			if errors.Is(err, errBucketPending) {
				pause = 100 * time.Millisecond
			} else if time.Since(logged) > 10*time.Second {
				n.log.Info().Err(err).Str("bucket", s.cfg.Bucket).Msg("bucket not ready yet: trying again")
				logged = time.Now()
			}
			select {
			case <-ctx.Done():
				return bucketStartErr(s.cfg.Bucket, last)
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// bucketStartErr says why bucket was not ready when the start timed out, err being its last
// try's error: a lack of quorum only when JetStream said so, so that an operator looks for down
// peers only when they are the cause.
func bucketStartErr(bucket string, err error) error {
	switch {
	case noQuorum(err):
		return fmt.Errorf("cluster: bucket %s: no quorum of nodes before the start timeout (are the peers up and reachable?): %w", bucket, err)
	case errors.Is(err, errBucketPending):
		return fmt.Errorf("cluster: bucket %s: not created by the JetStream meta leader before the start timeout: %w", bucket, err)
	case errors.Is(err, context.DeadlineExceeded):
		// Unanswered: the stream may have no leader, or this node no route to it.
		return fmt.Errorf("cluster: bucket %s: no answer from JetStream before the start timeout (are the peers up and reachable?): %w", bucket, err)
	}
	return fmt.Errorf("cluster: bucket %s: not ready before the start timeout: %w", bucket, err)
}

// noQuorum reports whether err is JetStream saying it lacks the nodes to act: nobody answers
// its API, it has no meta leader (temporarily unavailable), or too few peers to place a stream.
func noQuorum(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.As(err, &api) &&
		(api.ErrorCode == jetstream.ErrorCode(server.JSClusterNotAvailErr) || api.ErrorCode == jetstream.ErrorCode(server.JSClusterNoPeersErrF))
}

// creatorWait is how long a node that is not the meta leader waits for a bucket to be created
// (or its settings updated) before it does so itself.
const creatorWait = 10 * time.Second

// errBucketPending: the bucket does not exist yet, or its settings are not final, and this node
// leaves that to the creator.
var errBucketPending = errors.New("cluster: bucket not created yet")

// createsBuckets reports whether this node creates the buckets: a standalone server, or the
// JetStream meta leader of a cluster.
func (n *Node) createsBuckets() bool {
	return !n.srv.JetStreamIsClustered() || n.srv.JetStreamIsLeader()
}

// createBucket creates or adopts a bucket and turns its direct gets off: a direct get may be
// answered by a replica that has not applied the latest write, and a key revoked on one node
// must not read as valid through another, nor a ledger record as older than it is. Reads then
// go through the stream's leader. With create false it only binds, and returns errBucketPending
// while the bucket is missing or still allows direct gets.
func (n *Node) createBucket(ctx context.Context, cfg jetstream.KeyValueConfig, create bool) (jetstream.KeyValue, error) {
	// Bind when it exists: every node creating (or updating) it at once is slow to settle.
	if _, err := n.js.KeyValue(ctx, cfg.Bucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		if !create {
			return nil, errBucketPending
		}
		if _, err := n.js.CreateKeyValue(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	stream, err := n.js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return nil, err
	}
	sc := stream.CachedInfo().Config
	if sc.AllowDirect {
		if !create {
			return nil, errBucketPending
		}
		sc.AllowDirect = false
		if _, err := n.js.UpdateStream(ctx, sc); err != nil {
			return nil, err
		}
	}
	kv, err := n.js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	// Usable once a read is answered (the leader may move after the update).
	if _, err := kv.Get(ctx, "probe"); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, err
	}
	return kv, nil
}

func (n *Node) writeClientFile(token string) error {
	dir := filepath.Join(n.cfg.DataDir, "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	addr, ok := n.srv.Addr().(*net.TCPAddr)
	if !ok {
		return errors.New("cluster: the nats server has no client address")
	}
	data, _ := json.Marshal(clientInfo{V: recordVersion, URL: "nats://" + addr.String(), Token: token})
	tmp := filepath.Join(dir, ClientFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, ClientFile))
}

// Healthy reports whether this node's last heartbeats were written to the replicated nodes
// bucket: a node cut off from the quorum cannot write, so it cannot admit (its ledger writes
// fail either) and should get no traffic. It turns false within about three heartbeats.
func (n *Node) Healthy() bool {
	last := n.lastBeat.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < 3*nodeHeartbeat
}

// NodeName is this node's name.
func (n *Node) NodeName() string { return n.cfg.NodeName }

// Listeners are the addresses the node's NATS server listens on: its clients' (loopback) and,
// in a cluster of more than one node, its routes' (cluster.listen).
func (n *Node) Listeners() []net.Addr {
	var out []net.Addr
	if a := n.srv.Addr(); a != nil {
		out = append(out, a)
	}
	if a := n.srv.ClusterAddr(); a != nil {
		out = append(out, a)
	}
	return out
}

// Replicas is the replica count the buckets were created with.
func (n *Node) Replicas() int { return n.replicas }

// Conn is the in-process connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// JetStream is the in-process JetStream context.
func (n *Node) JetStream() jetstream.JetStream { return n.js }

// heartbeat keeps this node's record in the nodes bucket; the bucket's TTL removes it when the
// node stops refreshing it.
func (n *Node) heartbeat() {
	defer n.wg.Done()
	t := time.NewTicker(nodeHeartbeat)
	defer t.Stop()
	for {
		rec := nodeRecord{V: recordVersion, Name: n.cfg.NodeName, Version: n.cfg.Version, Listen: n.cfg.Listen,
			Started: n.started, Seen: time.Now().UTC()}
		if n.cfg.Plans != nil {
			rec.Plans = n.cfg.Plans()
		}
		data, _ := json.Marshal(rec)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := n.Nodes.Put(ctx, n.cfg.NodeName, data); err != nil {
			n.log.Debug().Err(err).Msg("node heartbeat")
		} else {
			n.lastBeat.Store(time.Now().UnixNano())
		}
		cancel()
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// Close stops the heartbeat, drains the connection and shuts the server down, waiting for it
// until ctx ends.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() { close(n.stop) })
	n.wg.Wait()
	if err := proc.Wait(ctx, n.shutdown); err != nil {
		return fmt.Errorf("cluster: close: %w", err)
	}
	return nil
}

func (n *Node) shutdown() {
	n.handOffLeaders()
	if n.nc != nil {
		n.nc.Close()
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
	_ = os.Remove(filepath.Join(n.cfg.DataDir, "cluster", ClientFile))
}

func randomHex(nBytes int) string {
	b := make([]byte, nBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// natsLogger writes the server's log lines through zerolog, lower-case like ours.
type natsLogger struct{ log zerolog.Logger }

func (l natsLogger) Noticef(f string, v ...any) { l.log.Info().Str("from", "nats").Msg(lower(f, v)) }
func (l natsLogger) Warnf(f string, v ...any)   { l.log.Warn().Str("from", "nats").Msg(lower(f, v)) }
func (l natsLogger) Fatalf(f string, v ...any)  { l.log.Error().Str("from", "nats").Msg(lower(f, v)) }
func (l natsLogger) Errorf(f string, v ...any)  { l.log.Error().Str("from", "nats").Msg(lower(f, v)) }
func (l natsLogger) Debugf(f string, v ...any)  { l.log.Debug().Str("from", "nats").Msg(lower(f, v)) }
func (l natsLogger) Tracef(f string, v ...any)  { l.log.Trace().Str("from", "nats").Msg(lower(f, v)) }

func lower(f string, v []any) string {
	s := fmt.Sprintf(f, v...)
	if s != "" {
		s = strings.ToLower(s[:1]) + s[1:]
	}
	return s
}
