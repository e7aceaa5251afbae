package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/store"
)

// accountBook is the contract that store.Store (a single node) and Book (a cluster) both keep:
// httpd.AccountBook, httpd.KeyLookup and what serve uses at first start.
type accountBook interface {
	CreateAccount(email, plan string, verified bool) (shotd.Account, error)
	CreateAccountWithID(id, email, plan string, verified bool) (shotd.Account, error)
	Account(id string) (shotd.Account, error)
	Accounts(after string, limit int) ([]shotd.Account, error)
	CountAccounts() (int, error)
	UpdateAccount(id string, fn func(*shotd.Account) error) (shotd.Account, error)
	CreateKey(accountID, name string, requireSignature bool) (shotd.Key, error)
	Keys(accountID string) ([]shotd.Key, error)
	UpdateKey(accessKey string, fn func(*shotd.Key) error) (shotd.Key, error)
	RevokeKey(accessKey string) error
	Lookup(accessKey string) (shotd.Key, shotd.Account, error)
}

// bboltBook is store.Store with its key cache's Lookup.
type bboltBook struct{ *store.Store }

func (b bboltBook) Lookup(ak string) (shotd.Key, shotd.Account, error) {
	return b.KeyCache().Lookup(ak)
}

var (
	_ accountBook = bboltBook{}
	_ accountBook = (*Book)(nil)
)

func openBook(t *testing.T, n *Node) *Book {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := OpenBook(ctx, n, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// TestBookContract runs the same checks on the single node's store and on the cluster's Book.
func TestBookContract(t *testing.T) {
	nodes := startCluster(t, 1)
	impls := []struct {
		name string
		open func(t *testing.T) accountBook
	}{
		{"bbolt", func(t *testing.T) accountBook {
			st, err := store.Open(t.TempDir(), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close(context.Background()) })
			return bboltBook{st}
		}},
		{"jetstream", func(t *testing.T) accountBook { return openBook(t, nodes[0]) }},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			b := impl.open(t)
			checkBook(t, b)
		})
	}
}

func checkBook(t *testing.T, b accountBook) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	isErr := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", what, err, want)
		}
	}
	n0, err := b.CountAccounts()
	must(err)
	def, err := b.CreateAccountWithID("default", "d@example.test", "default", true)
	must(err)
	_, err = b.CreateAccountWithID("default", "x@example.test", "default", true)
	isErr("duplicate id", err, store.ErrConflict)
	if _, err := b.CreateAccountWithID("bad/id", "x@example.test", "default", true); err == nil {
		t.Fatal("a bad id was accepted")
	}
	if _, err := b.CreateAccountWithID("plainid", "x@example.test", "", true); err == nil {
		t.Fatal("an empty plan was accepted")
	}
	acc, err := b.CreateAccount("a@example.test", "pro", false)
	must(err)
	if len(acc.ID) != len(store.AccountIDPrefix)+16 || acc.Plan != "pro" || acc.CreatedAt.IsZero() {
		t.Fatalf("created %+v", acc)
	}
	got, err := b.Account(acc.ID)
	must(err)
	if got.Email != "a@example.test" || !got.CreatedAt.Equal(acc.CreatedAt) {
		t.Fatalf("read %+v, created %+v", got, acc)
	}
	_, err = b.Account("nope")
	isErr("unknown account", err, shotd.ErrNotFound)
	n, err := b.CountAccounts()
	must(err)
	if n != n0+2 {
		t.Fatalf("%d accounts, want %d", n, n0+2)
	}
	list, err := b.Accounts("", 0)
	must(err)
	if len(list) != 2 || list[0].ID > list[1].ID {
		t.Fatalf("list %+v", list)
	}
	list, err = b.Accounts(list[0].ID, 1)
	must(err)
	if len(list) != 1 || list[0].ID == def.ID && def.ID < acc.ID {
		t.Fatalf("list after the first: %+v", list)
	}

	up, err := b.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.Plan = "default"; a.BonusScreenshots = 5; return nil })
	must(err)
	if up.Plan != "default" || up.BonusScreenshots != 5 {
		t.Fatalf("updated %+v", up)
	}
	if got, _ := b.Account(acc.ID); got.Plan != "default" {
		t.Fatalf("read after update %+v", got)
	}
	_, err = b.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.ID = "other"; return nil })
	isErr("changed id", err, store.ErrConflict)
	if _, err := b.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.Plan = ""; return nil }); err == nil {
		t.Fatal("an empty plan was stored")
	}
	stop := errors.New("stop")
	_, err = b.UpdateAccount(acc.ID, func(a *shotd.Account) error { return stop })
	isErr("fn's error", err, stop)
	_, err = b.UpdateAccount("nope", func(a *shotd.Account) error { return nil })
	isErr("update unknown", err, shotd.ErrNotFound)

	_, err = b.CreateKey("nope", "k", false)
	isErr("key of unknown account", err, shotd.ErrNotFound)
	k, err := b.CreateKey(acc.ID, "first", true)
	must(err)
	if len(k.AccessKey) != len(store.AccessKeyPrefix)+22 || len(k.SecretKey) != 43 || !k.RequireSignature {
		t.Fatalf("key %+v", k)
	}
	lk, la, err := b.Lookup(k.AccessKey)
	must(err)
	if lk.SecretKey != k.SecretKey || la.ID != acc.ID || la.Plan != "default" {
		t.Fatalf("lookup %+v %+v", lk, la)
	}
	_, _, err = b.Lookup("sk_unknown")
	isErr("lookup unknown", err, shotd.ErrNotFound)
	k2, err := b.CreateKey(acc.ID, "second", false)
	must(err)
	keys, err := b.Keys(acc.ID)
	must(err)
	if len(keys) != 2 || keys[0].AccessKey != k.AccessKey || keys[1].AccessKey != k2.AccessKey || keys[0].SecretKey != "" {
		t.Fatalf("keys %+v", keys)
	}
	_, err = b.Keys("nope")
	isErr("keys of unknown account", err, shotd.ErrNotFound)

	uk, err := b.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.Name = "renamed"; k.RequireSignature = false; return nil })
	must(err)
	if uk.Name != "renamed" || uk.SecretKey != "" {
		t.Fatalf("updated key %+v", uk)
	}
	if lk, _, _ := b.Lookup(k.AccessKey); lk.SecretKey != k.SecretKey || lk.Name != "renamed" {
		t.Fatalf("the update lost the secret or the name: %+v", lk)
	}
	_, err = b.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.AccountID = "default"; return nil })
	isErr("moved key", err, store.ErrConflict)
	_, err = b.UpdateKey("sk_unknown", func(k *shotd.Key) error { return nil })
	isErr("update unknown key", err, shotd.ErrNotFound)

	must(b.RevokeKey(k.AccessKey))
	must(b.RevokeKey(k.AccessKey)) // twice is fine
	_, _, err = b.Lookup(k.AccessKey)
	isErr("revoked lookup", err, store.ErrRevoked)
	isErr("revoked lookup is not found", err, shotd.ErrNotFound)
	_, err = b.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.Revoked = false; return nil })
	isErr("unrevoke", err, store.ErrConflict)
	if _, _, err := b.Lookup(k2.AccessKey); err != nil {
		t.Fatalf("the other key: %v", err)
	}
	isErr("revoke unknown", b.RevokeKey("sk_unknown"), shotd.ErrNotFound)
}

// TestBookKeyBeforeItsAccount: a key that this node's copy has before its account (the
// buckets' watches run apart) works at once: its account is read from the bucket.
func TestBookKeyBeforeItsAccount(t *testing.T) {
	nodes := startCluster(t, 1)
	b := openBook(t, nodes[0])
	acc, err := b.CreateAccount("late@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.CreateKey(acc.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock() // the copy as when the keys' watch is ahead of the accounts'
	delete(b.accs, acc.ID)
	delete(b.rev, BucketAccounts+"/"+acc.ID)
	b.mu.Unlock()
	if _, a, err := b.Lookup(k.AccessKey); err != nil || a.ID != acc.ID {
		t.Fatalf("key whose account the copy lacks: %v", err)
	}
}

// TestBookAcrossNodes: a key made on one node works on another at once, and stops working
// there soon (through the bucket's watch) after its revocation on a third.
func TestBookAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	books := []*Book{openBook(t, nodes[0]), openBook(t, nodes[1]), openBook(t, nodes[2])}
	acc, err := books[0].CreateAccount("x@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := books[0].CreateKey(acc.ID, "", false)
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, ok func() bool) {
		t.Helper()
		// A generous bound: the watch is quick, but a loaded test machine is not.
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// At once: a key this node's copy lacks is read from the bucket.
	if _, a, err := books[1].Lookup(k.AccessKey); err != nil || a.ID != acc.ID {
		t.Fatalf("new key on node 2 right after its creation on node 1: %v", err)
	}
	// Many new accounts and keys on node 1: each works on node 3 at once.
	for range 20 {
		a, err := books[0].CreateAccount("y@example.test", "default", true)
		if err != nil {
			t.Fatal(err)
		}
		k, err := books[0].CreateKey(a.ID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := books[2].Lookup(k.AccessKey); err != nil || got.ID != a.ID {
			t.Fatalf("node 3, at once: %v %+v", err, got)
		}
	}
	if err := books[2].RevokeKey(k.AccessKey); err != nil {
		t.Fatal(err)
	}
	for i, b := range books {
		within("revoked key on node "+string(rune('1'+i)), func() bool {
			_, _, err := b.Lookup(k.AccessKey)
			return errors.Is(err, store.ErrRevoked)
		})
	}
	// Two nodes changing one account at once: both changes land (compare-and-swap retries).
	done := make(chan error, 2)
	for _, b := range books[:2] {
		go func() {
			var err error
			for range 10 {
				if _, err = b.UpdateAccount(acc.ID, func(a *shotd.Account) error { a.BonusScreenshots++; return nil }); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	within("both nodes' updates", func() bool { a, _ := books[2].Account(acc.ID); return a.BonusScreenshots == 20 })
}

// TestBookUnknownVersion: a key record of an unknown version is not usable (refused with a log
// line), and does not stop the watch.
func TestBookUnknownVersion(t *testing.T) {
	nodes := startCluster(t, 1)
	b := openBook(t, nodes[0])
	acc, err := b.CreateAccount("v@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := nodes[0].Keys.Put(ctx, "sk_future", []byte(`{"v":2,"key":{"access_key":"sk_future"}}`)); err != nil {
		t.Fatal(err)
	}
	k, err := b.CreateKey(acc.ID, "", false) // written after: the watch still runs
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lookup(k.AccessKey); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lookup("sk_future"); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("got %v, want not found for a record of an unknown version", err)
	}
	if _, err := b.UpdateKey("sk_future", func(*shotd.Key) error { return nil }); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("update: got %v, want ErrUnknownVersion", err)
	}
}

// flakyWatchKV is a bucket whose first watches fail, as while the cluster elects a leader.
type flakyWatchKV struct {
	jetstream.KeyValue
	fails atomic.Int32 // watches still to fail
	tries atomic.Int32
}

func (f *flakyWatchKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	f.tries.Add(1)
	if f.fails.Add(-1) >= 0 {
		return nil, errNoAnswer
	}
	return f.KeyValue.WatchAll(ctx, opts...)
}

// TestWatchAllRetries: a node starting while the buckets have no leader tries its watch again
// until its start's context ends, instead of giving up at the first timeout.
func TestWatchAllRetries(t *testing.T) {
	n := startCluster(t, 1)[0]
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	wctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kv := &flakyWatchKV{KeyValue: n.Accounts}
	kv.fails.Store(3)
	w, err := watchAll(context.Background(), wctx, kv, log)
	if err != nil || kv.tries.Load() != 4 {
		t.Fatalf("watch %v after %d tries; want one after 4", err, kv.tries.Load())
	}
	_ = w.Stop()

	kv.fails.Store(1 << 30)
	ctx, stop := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer stop()
	if _, err := watchAll(ctx, wctx, kv, log); !errors.Is(err, errNoAnswer) {
		t.Fatalf("watch with its start's time up: %v, want the last error", err)
	}
}

// TestBookUpdateAnswerLost: every write of an account or key record lands with its answer lost.
// The update is answered as done, its change applied once (an increment added once), and the
// node's copy has it when the call returns.
func TestBookUpdateAnswerLost(t *testing.T) {
	nodes := startCluster(t, 1)
	b := openBook(t, nodes[0])
	acc, err := b.CreateAccount("lost@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := b.CreateKey(acc.ID, "first", false)
	if err != nil {
		t.Fatal(err)
	}
	lose := func(string) bool { return true }
	b.accounts = &faultKV{KeyValue: b.accounts, downFor: 50 * time.Millisecond, lose: lose}
	b.keys = &faultKV{KeyValue: b.keys, downFor: 50 * time.Millisecond, lose: lose}

	calls := 0
	got, err := b.UpdateAccount(acc.ID, func(a *shotd.Account) error {
		calls++
		a.BonusScreenshots += 10
		return nil
	})
	if err != nil {
		t.Fatalf("update with its answer lost: %v", err)
	}
	if calls != 1 || got.BonusScreenshots != 10 {
		t.Errorf("change applied %d times, bonus %d; want once, 10", calls, got.BonusScreenshots)
	}
	if a, err := b.Account(acc.ID); err != nil || a.BonusScreenshots != 10 {
		t.Errorf("the node's copy: %+v %v; want bonus 10", a, err)
	}

	kk, err := b.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.Name = "renamed"; return nil })
	if err != nil || kk.Name != "renamed" {
		t.Fatalf("key update with its answer lost: %+v %v", kk, err)
	}
}
