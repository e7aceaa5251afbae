package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/s3test"
)

// TestSweeperOncePerCluster: three nodes run for the sweeper lease; the one holding it deletes,
// once, the objects whose shared record is expired or gone, and leaves alone a live file, an
// object younger than the grace period and what is not a file; when its holder stops, another
// node takes the lease and sweeps.
func TestSweeperOncePerCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	srv := s3test.Start(t, "files")
	bucket := sharedBucket(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	put := func(key string) {
		t.Helper()
		if err := bucket.PutContent(ctx, key, []byte("x"), "image/png"); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(key string) bool {
		_, err := os.Stat(filepath.Join(srv.Root, "files", "shotd", filepath.FromSlash(key)))
		return err == nil
	}
	record := func(id string, expires time.Time) {
		t.Helper()
		data, _ := json.Marshal(fileRecord{V: recordVersion, Record: shotd.FileRecord{FileID: id, AccountID: "acc_1", Remote: true, ExpiresAt: expires}})
		if _, err := nodes[0].Files.Create(ctx, id, data, jetstream.KeyTTL(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// The sweepers' clock runs an hour ahead until the grace check below: every object is past
	// the grace period.
	var ahead atomic.Int64
	ahead.Store(int64(time.Hour))
	// current[i]: sweeper i started a sweep after the clock was set right (sweep reads the
	// clock once, at its start).
	current := make([]atomic.Bool, len(nodes))
	clockOf := func(i int) func() time.Time {
		return func() time.Time {
			a := ahead.Load()
			if a == 0 {
				current[i].Store(true)
			}
			return time.Now().Add(time.Duration(a))
		}
	}
	put("f_expired000000000000")
	record("f_expired000000000000", time.Now().Add(-time.Minute))
	put("f_gone0000000000000000") // its record expired from the bucket, or its node died
	put("f_live0000000000000000")
	record("f_live0000000000000000", time.Now().Add(3*time.Hour))
	put("other/f_nested00000000")
	put("notafile")

	var mu sync.Mutex
	removed := map[string][]string{} // key -> the nodes that deleted it
	sweepers := make([]*Sweeper, len(nodes))
	for i, n := range nodes {
		name := n.NodeName()
		sweepers[i] = StartSweeper(n, SweeperConfig{Bucket: bucket, Grace: 30 * time.Minute, Interval: 200 * time.Millisecond,
			// Renewed on attempts of a third of it: a long sweep must not let it lapse.
			LeaseTTL: 5 * time.Second, Now: clockOf(i), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
			Removed: func(key string) {
				mu.Lock()
				defer mu.Unlock()
				removed[key] = append(removed[key], name)
			}})
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer ccancel()
			_ = sweepers[i].Close(cctx)
		})
	}
	waitFor(t, "the expired objects to be deleted", func() bool {
		return !exists("f_expired000000000000") && !exists("f_gone0000000000000000")
	})
	holder := -1
	waitFor(t, "one holder", func() bool {
		n := 0
		for i, s := range sweepers {
			if s.Holding() {
				holder, n = i, n+1
			}
		}
		return n == 1
	})
	// A few more passes of the holder: nothing else goes, and nothing goes twice.
	for range 3 {
		sweepers[holder].sweep()
	}
	for _, k := range []string{"f_live0000000000000000", "other/f_nested00000000", "notafile"} {
		if !exists(k) {
			t.Fatalf("%s was deleted", k)
		}
	}
	mu.Lock()
	for _, k := range []string{"f_expired000000000000", "f_gone0000000000000000"} {
		if len(removed[k]) != 1 {
			t.Errorf("%s deleted by %v, want once", k, removed[k])
		}
	}
	if len(removed) != 2 {
		t.Errorf("deleted: %v", removed)
	}
	mu.Unlock()

	// The grace period: an object without a record, just written, stays.
	ahead.Store(0)
	// A sweep of the holder's that read the clock while it was ahead could still be running and
	// would delete the young object: put it once the holder's loop has begun a sweep since.
	waitFor(t, "a sweep with the clock set right", current[holder].Load)
	put("f_young000000000000000")
	sweepers[holder].sweep()
	if !exists("f_young000000000000000") {
		t.Fatal("an object younger than the grace period was deleted")
	}

	// The holder stops: another node takes the lease and sweeps.
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := sweepers[holder].Close(cctx); err != nil {
		t.Fatal(err)
	}
	ccancel()
	ahead.Store(int64(time.Hour))
	put("f_gone1111111111111111")
	waitFor(t, "another holder to sweep", func() bool { return !exists("f_gone1111111111111111") })
	mu.Lock()
	by := removed["f_gone1111111111111111"]
	mu.Unlock()
	if len(by) != 1 || by[0] == nodes[holder].NodeName() {
		t.Fatalf("deleted by %v after %s stopped", by, nodes[holder].NodeName())
	}
}

// TestSweeperLeaseLapses: a holder that stops renewing without releasing (its node died) loses
// the lease once it lapses, and only then.
func TestSweeperLeaseLapses(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	clock := func() time.Time { return now }
	a := &lease{kv: nodes[0].Leases, name: "test", node: "n1", ttl: 10 * time.Second, log: zerolog.Nop(), now: clock}
	b := &lease{kv: nodes[1].Leases, name: "test", node: "n2", ttl: 10 * time.Second, log: zerolog.Nop(), now: clock}
	try := func(l *lease, want bool) {
		t.Helper()
		got, err := l.hold(ctx)
		if err != nil || got != want {
			t.Fatalf("%s: hold %v %v, want %v", l.node, got, err, want)
		}
	}
	try(a, true)
	try(b, false)
	try(a, true) // renewed
	now = now.Add(9 * time.Second)
	try(b, false)
	now = now.Add(2 * time.Second) // a has not renewed for 11 s: it lapsed
	try(b, true)
	try(a, false)
	b.release(ctx)
	if _, err := nodes[2].Leases.Get(ctx, "test"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after release: %v", err)
	}
	try(a, true)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited too long for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
