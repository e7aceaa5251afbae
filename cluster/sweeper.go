package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/objstore"
	"github.com/shotd/shotd/store"
)

// SweepBucket is the shared bucket as the sweeper sees it: objstore.Client implements it.
type SweepBucket interface {
	List(ctx context.Context, fn func(objstore.Object) error) error
	Remove(ctx context.Context, key string) error
}

// SweeperConfig tunes the cluster's sweeper; zero values take the defaults.
type SweeperConfig struct {
	Bucket SweepBucket
	// Grace: an object younger than this is never deleted, whatever its record (a file being
	// stored has its object before its record). Default 10 minutes.
	Grace time.Duration
	// Interval between sweeps of the holder (default 1 minute).
	Interval time.Duration
	// LeaseTTL: a holder that stops renewing loses the lease after this (default 30 s); it
	// renews every third of it.
	LeaseTTL time.Duration
	Removed  func(key string) // hears every object deleted (tests, metrics)
	Now      func() time.Time // the clock that ages objects and records (tests); time.Now
	Log      zerolog.Logger
}

// sweeperLease is the key of the sweeper's lease in the leases bucket.
const sweeperLease = "sweeper"

// Sweeper deletes the objects of expired files from the shared bucket, on one node of the
// cluster at a time: the node that holds the "sweeper" lease. Its index is the bucket's listing
// under shotd's prefix: an object named as a file id (f_...) whose shared record is gone or
// expired, and older than the grace period, is deleted; anything else under the prefix is left
// alone. So the objects of a node that is gone for good are deleted too. The same node drops
// the ledger's reservations of jobs that ended or are gone (sweepReservations).
type Sweeper struct {
	cfg    SweeperConfig
	kv     jetstream.KeyValue
	jobs   jetstream.KeyValue
	js     jetstream.JetStream
	ledger *Ledger // no renewals: it only drops reservations (sweepReservations)
	lease  *lease
	log    zerolog.Logger
	now    func() time.Time

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	mu   sync.Mutex
	held bool
	// ledgerAfter: where the next pass over the ledger goes on, after a pass cut by its time
	// (sweepLedgerAfter); "" from the start. Under mu: a test sweeps beside the loop.
	ledgerAfter string
}

// StartSweeper starts the node's candidacy for the sweeper lease; Close ends it.
func StartSweeper(n *Node, cfg SweeperConfig) *Sweeper {
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Minute
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log.With().Str("component", "cluster-sweeper").Logger()
	s := &Sweeper{cfg: cfg, kv: n.Files, jobs: n.Jobs, js: n.js, log: log, now: cfg.Now, stop: make(chan struct{}),
		ledger: NewLedger(n.Ledger, n.NodeName(), LedgerConfig{NoRenew: true, Log: log}),
		lease:  &lease{kv: n.Leases, name: sweeperLease, node: n.NodeName(), ttl: cfg.LeaseTTL, log: log, now: time.Now}}
	s.wg.Add(1)
	go s.run()
	return s
}

// Holding reports whether this node held the lease at its last try.
func (s *Sweeper) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *Sweeper) run() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer tick.Stop()
	var last time.Time // of the last sweep while holding
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.LeaseTTL/3)
		held, err := s.lease.hold(ctx)
		cancel()
		if err != nil {
			s.log.Debug().Err(err).Msg("sweeper lease not reached")
		}
		s.mu.Lock()
		was := s.held
		s.held = held
		s.mu.Unlock()
		if held != was {
			s.log.Info().Bool("holding", held).Msg("sweeper lease")
		}
		if !held {
			last = time.Time{}
		} else if time.Since(last) >= s.cfg.Interval {
			last = time.Now()
			s.sweep()
		}
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// sweep makes one pass over the bucket. It stops early when the node stops, and it is bounded
// by the lease: a pass longer than the lease goes on, harmlessly (deleting an object twice, or
// one that another holder deleted, is no error).
func (s *Sweeper) sweep() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	now := s.now()
	n := 0
	err := s.cfg.Bucket.List(ctx, func(o objstore.Object) error {
		if !strings.HasPrefix(o.Key, store.FileIDPrefix) || strings.Contains(o.Key, "/") || now.Sub(o.Modified) < s.cfg.Grace {
			return nil
		}
		if !s.expired(ctx, o.Key, now) {
			return nil
		}
		if err := s.cfg.Bucket.Remove(ctx, o.Key); err != nil {
			s.log.Warn().Err(err).Str("file", o.Key).Msg("sweep: object not deleted")
			return nil
		}
		n++
		if s.cfg.Removed != nil {
			s.cfg.Removed(o.Key)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("sweep: the bucket could not be listed")
	}
	if n > 0 {
		s.log.Info().Int("objects", n).Msg("sweep: expired files deleted")
	}
	// Bounded: the lease is renewed between passes only, and an outage of the ledger must not
	// keep this loop (the next pass takes up what this one left).
	lctx, lcancel := context.WithTimeout(ctx, min(s.cfg.Interval, s.cfg.LeaseTTL))
	defer lcancel()
	s.mu.Lock()
	from := s.ledgerAfter
	s.mu.Unlock()
	_, after, err := sweepLedgerAfter(lctx, s.js, s.ledger, s.jobs, from)
	s.mu.Lock()
	s.ledgerAfter = after
	s.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Str("resume_after", after).Msg("sweep: the ledger's reservations could not all be checked")
	}
}

// expired reports whether the file's shared record is gone or expired. A record that cannot be
// read (the cluster unreachable, a newer node's version) keeps the object.
func (s *Sweeper) expired(ctx context.Context, fileID string, now time.Time) bool {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e, err := s.kv.Get(gctx, fileID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	var r fileRecord
	if decode(s.log, "file", fileID, e.Value(), &r) != nil {
		return false
	}
	return r.Record.Expired(now)
}

// Close stops the sweeper and gives its lease up, so that another node takes it at its next try.
func (s *Sweeper) Close(ctx context.Context) error {
	s.once.Do(func() { close(s.stop) })
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.lease.release(rctx)
	return nil
}
