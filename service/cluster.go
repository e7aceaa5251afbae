package service

import (
	"context"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/cluster"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/store"
	"github.com/shotd/shotd/webhook"
)

// clusterStartTimeout bounds the wait for a quorum of nodes at start (the first node of a new
// cluster waits for a second one). Below the unit's TimeoutStartSec (120 s): serve exits with a
// clear error and systemd restarts it, rather than killing a start that says nothing.
const clusterStartTimeout = 100 * time.Second

// clustered is what cluster mode adds to a node: the embedded NATS node, the accounts and keys
// it shares, and the quota ledger. nil in single-node mode.
type clustered struct {
	node    *cluster.Node
	book    *cluster.Book
	ledger  *cluster.Ledger
	gate    *cluster.Gate
	rates   *cluster.Rates // the rate and failure counts shared with the other nodes
	files   *cluster.Files
	jobs    *cluster.Jobs    // nil until startJobs
	sweeper *cluster.Sweeper // nil until startSweeper
}

// startSweeper has this node run for the lease of the cluster's sweeper, which deletes the
// objects of expired files from the shared bucket on one node at a time.
func (c *clustered) startSweeper(bucket *objstore.Client, log zerolog.Logger) {
	if bucket == nil {
		return // not in cluster mode: [storage.s3] is required there
	}
	c.sweeper = cluster.StartSweeper(c.node, cluster.SweeperConfig{Bucket: bucket, Log: log})
}

// startCluster joins the cluster that cfg.Cluster describes.
func startCluster(ctx context.Context, cfg *config.Config, store cluster.LocalFiles, version string, plans func() map[string]shotd.Plan, log zerolog.Logger) (*clustered, error) {
	c := cfg.Cluster
	log = log.With().Str("component", "cluster").Logger()
	sctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	node, err := cluster.Start(sctx, cluster.Config{NodeName: c.NodeName, Name: c.Name, Listen: c.Listen, Peers: c.Peers,
		Replicas: c.Replicas, CertFile: c.CertFile, KeyFile: c.KeyFile, CAFile: c.CAFile, DataDir: cfg.DataDir, Log: log, Version: version,
		Plans: func() string { return cluster.PlansDigest(plans()) }})
	if err != nil {
		return nil, err
	}
	book, err := cluster.OpenBook(sctx, node, log)
	if err != nil {
		_ = node.Close(context.Background())
		return nil, err
	}
	rates, err := cluster.StartRates(node, cluster.RatesConfig{Log: log})
	if err != nil {
		book.Close()
		_ = node.Close(context.Background())
		return nil, err
	}
	return &clustered{node: node, book: book, ledger: cluster.NewLedger(node.Ledger, c.NodeName, cluster.LedgerConfig{Log: log}),
		rates: rates, files: cluster.NewFiles(store, node, log)}, nil
}

// startJobs starts the cluster's job queue, which takes jobs while this node has free render
// slots. The node's own job actor still runs, idle: nothing is submitted to it.
func (c *clustered) startJobs(s *Service, retryDelays []time.Duration, log zerolog.Logger) error {
	cfg := s.cfg
	slots := max(cfg.Browser.RendersPerProcess, 1)
	free := func() int {
		bs, err := s.renderer.Browsers(time.Second)
		if err != nil {
			return 0
		}
		n := 0
		for _, b := range bs {
			if b.Up {
				n += slots - b.Inflight
			}
		}
		return n
	}
	sender := &webhook.Sender{Client: webhook.NewClient(s.guard.DialContext, cfg.Webhooks.Timeout()), Keys: bookKeys{c.book}, PublicURL: cfg.PublicURL}
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	defer cancel()
	// One key for the whole cluster, not data_dir's: the node that renders a job opens what the
	// node that queued it sealed.
	sealer, err := cluster.OpenSealer(ctx, c.node)
	if err != nil {
		return err
	}
	c.jobs, err = cluster.OpenJobs(ctx, c.node, cluster.JobsConfig{Ledger: c.ledger, Sender: sender, RetryDelays: retryDelays, Secrets: sealer,
		Renderer: actors.JobRenderer{Files: c.files, Render: s.jobRender, Uploader: s.storage.jobs, FileTTL: cfg.Storage.FileTTL(), RenderGrace: cfg.Browser.RenderDeadlineGrace(),
			BusyRetry: 10 * time.Minute, MaxOutputBytes: cfg.Limits.MaxOutputBytes},
		Capacity: cfg.Browser.PoolSize * slots, Free: free, Ended: s.renders.AddJob, Failed: c.rates.CountJobFailure, Attempted: s.metrics.WebhookAttempted,
		Log: log.With().Str("component", "cluster-jobs").Logger()})
	return err
}

// closeJobs stops taking jobs and waits, up to ctx, for those this node renders; those still
// running then go back to the cluster, for another node.
func (c *clustered) closeJobs(ctx context.Context, log zerolog.Logger) {
	if c == nil || c.jobs == nil {
		return
	}
	if err := c.jobs.Close(ctx); err != nil {
		log.Warn().Err(err).Msg("cluster jobs still running at the deadline go to another node")
	}
}

// bookKeys finds the key that signs a webhook in the cluster's Book.
type bookKeys struct{ book *cluster.Book }

func (k bookKeys) Key(accessKey string) (shotd.Key, error) {
	key, _, err := k.book.Lookup(accessKey)
	return key, err
}

// wrap puts the ledger in front of the node's own admission.
func (c *clustered) wrap(a *actors.Accounts, log zerolog.Logger) httpd.Gate {
	c.gate = cluster.NewGate(a, c.ledger, cluster.GateConfig{Rates: c.rates, Log: log.With().Str("component", "cluster").Logger()})
	return c.gate
}

// close stops the ledger's renewals, the watches and the node; call it after the HTTP servers
// and the account actors, which settle through them.
func (c *clustered) close(ctx context.Context, log zerolog.Logger) {
	if c == nil {
		return
	}
	c.closeJobs(ctx, log)
	if c.sweeper != nil {
		if err := c.sweeper.Close(ctx); err != nil {
			log.Warn().Err(err).Msg("cluster sweeper")
		}
	}
	if err := c.ledger.Close(ctx); err != nil {
		log.Warn().Err(err).Msg("cluster ledger")
	}
	if err := c.rates.Close(ctx); err != nil {
		log.Warn().Err(err).Msg("cluster rates")
	}
	c.book.Close()
	if err := c.node.Close(ctx); err != nil {
		log.Warn().Err(err).Msg("cluster node")
	}
}

// ready is /readyz's check in cluster mode: a browser can render and the node is current with
// the cluster, so that a balancer's health check leaves out a node cut off from the quorum (it
// could admit nothing).
func (c *clustered) ready(browser func() bool) func() bool {
	return func() bool { return browser() && c.node.Healthy() }
}

// accountList is where the accounts are: the node's store, or the cluster's Book.
func (s *Service) accountList() interface {
	Accounts(after string, limit int) ([]shotd.Account, error)
} {
	if s.cluster != nil {
		return s.cluster.book
	}
	return s.store
}

// clusterAdminStore is the admin API's store in cluster mode: accounts and keys from the
// cluster, the node's daily history and backups from its own database.
type clusterAdminStore struct {
	*cluster.Book
	local *store.Store
	jobs  *cluster.Jobs
	files *cluster.Files
}

func (s clusterAdminStore) DailyUsage(accountID string, days int, now time.Time) ([]shotd.DayUsage, error) {
	return s.local.DailyUsage(accountID, days, now)
}

func (s clusterAdminStore) Backup(w io.Writer, size func(n int64) error) error {
	return s.local.Backup(w, size)
}

func (s clusterAdminStore) BackupArchive(w io.Writer) error { return s.local.BackupArchive(w) }

// Jobs are the cluster's.
func (s clusterAdminStore) JobByID(jobID string) (shotd.Job, error) { return s.jobs.JobByID(jobID) }

func (s clusterAdminStore) BatchByID(batchID string) (shotd.Batch, []shotd.Job, error) {
	return s.jobs.BatchByID(batchID)
}

func (s clusterAdminStore) JobsOf(accountID, before string, limit int) ([]shotd.Job, string, error) {
	return s.jobs.JobsOf(accountID, before, limit)
}

// DeleteAccount removes the account from the cluster (cluster.DeleteAccount): its keys stop
// working on every node at once.
func (s clusterAdminStore) DeleteAccount(id string) (shotd.AccountDeletion, error) {
	return cluster.DeleteAccount(s.Book, s.jobs, s.files, id)
}
