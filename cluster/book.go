package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/store"
)

// accountRecord and keyRecord are the accounts and keys buckets' values.
type accountRecord struct {
	V       int           `json:"v"`
	Account shotd.Account `json:"account"`
}

type keyRecord struct {
	V   int       `json:"v"`
	Key shotd.Key `json:"key"` // with its secret, to verify signatures
}

// Book keeps accounts and keys in the cluster's buckets: the cluster's implementation of what
// store.Store does for a single node (httpd.AccountBook and httpd.KeyLookup), with the same
// errors (wrapping shotd.ErrNotFound, store.ErrConflict, store.ErrRevoked).
//
// Every node keeps the whole of both buckets in memory, fed by a watch: a lookup is a map read,
// and a change made on any node reaches every node as fast as the watch delivers it (a few
// milliseconds on a healthy cluster). Writes are compare-and-swap on the stored record, and
// return once this node's copy has them, so that a node reads its own writes.
type Book struct {
	accounts jetstream.KeyValue
	keys     jetstream.KeyValue
	log      zerolog.Logger
	timeout  time.Duration

	mu      sync.RWMutex
	accs    map[string]shotd.Account
	ks      map[string]shotd.Key
	seen    map[string]uint64    // bucket -> last revision applied
	missing map[string]time.Time // access key -> until: looked up in the bucket and absent
	rev     map[string]uint64    // bucket + "/" + key -> revision of the copy's value
	changed *sync.Cond           // on mu: broadcast after each applied change

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// OpenBook loads both buckets and keeps watching them until Close.
func OpenBook(ctx context.Context, n *Node, log zerolog.Logger) (*Book, error) {
	b := &Book{accounts: n.Accounts, keys: n.Keys, log: log, timeout: 5 * time.Second,
		accs: map[string]shotd.Account{}, ks: map[string]shotd.Key{}, seen: map[string]uint64{}, missing: map[string]time.Time{},
		rev: map[string]uint64{}}
	b.changed = sync.NewCond(&b.mu)
	wctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	ready := make(chan error, 2)
	for _, kv := range []jetstream.KeyValue{b.accounts, b.keys} {
		w, err := watchAll(ctx, wctx, kv, log)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("cluster: watch %s: %w", kv.Bucket(), err)
		}
		b.wg.Add(1)
		go b.watch(wctx, kv.Bucket(), w, ready)
	}
	for range 2 {
		select {
		case <-ready:
		case <-ctx.Done():
			b.Close()
			return nil, fmt.Errorf("cluster: load accounts and keys: %w", ctx.Err())
		}
	}
	return b, nil
}

// watchAll starts watching kv for as long as wctx lives, trying again until ctx ends: a node
// that joins while the cluster elects leaders after a node's death (seconds) sees its first
// tries time out, and must not give up its start for that.
func watchAll(ctx, wctx context.Context, kv jetstream.KeyValue, log zerolog.Logger) (jetstream.KeyWatcher, error) {
	for attempt := 1; ; attempt++ {
		w, err := kv.WatchAll(wctx)
		if err == nil {
			return w, nil
		}
		log.Warn().Err(err).Str("bucket", kv.Bucket()).Int("attempt", attempt).Msg("watch not started yet; trying again")
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// watch applies every change of bucket to the copy; the first nil entry marks the end of the
// values present at the start.
func (b *Book) watch(ctx context.Context, bucket string, w jetstream.KeyWatcher, ready chan<- error) {
	defer b.wg.Done()
	defer func() { _ = w.Stop() }()
	signalled := false
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				if !signalled {
					signalled = true
					ready <- nil
				}
				continue
			}
			b.apply(bucket, e, true)
		}
	}
}

// apply takes an entry into the copy unless the copy has a newer one of its key (a read outside
// the watch may run ahead of it). Only the watch moves seen, which waitSeen trusts.
func (b *Book) apply(bucket string, e jetstream.KeyValueEntry, fromWatch bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fromWatch {
		b.seen[bucket] = max(b.seen[bucket], e.Revision())
		b.changed.Broadcast()
	}
	rk := bucket + "/" + e.Key()
	if e.Revision() <= b.rev[rk] {
		return
	}
	b.rev[rk] = e.Revision()
	deleted := e.Operation() != jetstream.KeyValuePut
	switch bucket {
	case BucketAccounts:
		var r accountRecord
		if deleted || decode(b.log, "account", e.Key(), e.Value(), &r) != nil {
			delete(b.accs, e.Key()) // unreadable: unknown, not a stale copy
		} else {
			b.accs[e.Key()] = r.Account
		}
	case BucketKeys:
		var r keyRecord
		if deleted || decode(b.log, "key", redact(e.Key()), e.Value(), &r) != nil {
			delete(b.ks, e.Key())
		} else {
			b.ks[e.Key()] = r.Key
			delete(b.missing, e.Key())
		}
	}
}

// waitSeen returns once this node's copy of bucket has revision rev (or after the timeout: the
// write is committed; only this node's copy is late).
func (b *Book) waitSeen(bucket string, rev uint64) {
	deadline := time.Now().Add(b.timeout)
	timer := time.AfterFunc(b.timeout, func() {
		b.mu.Lock()
		b.changed.Broadcast()
		b.mu.Unlock()
	})
	defer timer.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.seen[bucket] < rev && time.Now().Before(deadline) {
		b.changed.Wait()
	}
}

// Close stops the watches.
func (b *Book) Close() {
	b.cancel()
	b.wg.Wait()
}

func (b *Book) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.timeout)
}

// accountID is store's rule for account ids.
var accountID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CreateAccount stores a new account with a random id ("acc_" and 16 hex digits).
func (b *Book) CreateAccount(email, plan string, verified bool) (shotd.Account, error) {
	for range 3 {
		a, err := b.CreateAccountWithID(store.AccountIDPrefix+randomHex(8), email, plan, verified)
		if !errors.Is(err, store.ErrConflict) {
			return a, err
		}
	}
	return shotd.Account{}, fmt.Errorf("cluster: no free account id: %w", store.ErrConflict)
}

// CreateAccountWithID stores a new account under id; an error wrapping store.ErrConflict when id
// exists.
func (b *Book) CreateAccountWithID(id, email, plan string, verified bool) (shotd.Account, error) {
	if !accountID.MatchString(id) {
		return shotd.Account{}, fmt.Errorf("cluster: account id %q: must be 1 to 64 of A-Z a-z 0-9 _ -", id)
	}
	if plan == "" {
		return shotd.Account{}, errors.New("cluster: account plan must not be empty")
	}
	a := shotd.Account{ID: id, Email: email, Plan: plan, EmailVerified: verified, CreatedAt: time.Now().UTC().Round(0)}
	data, _ := json.Marshal(accountRecord{V: recordVersion, Account: a})
	ctx, cancel := b.ctx()
	defer cancel()
	rev, err := b.accounts.Create(ctx, id, data)
	if conflict(err) {
		return shotd.Account{}, fmt.Errorf("cluster: account %s exists: %w", id, store.ErrConflict)
	}
	if err != nil {
		return shotd.Account{}, fmt.Errorf("cluster: create account %s: %w", id, err)
	}
	b.waitSeen(BucketAccounts, rev)
	return a, nil
}

// Account returns the account id, or an error wrapping shotd.ErrNotFound.
func (b *Book) Account(id string) (shotd.Account, error) {
	b.mu.RLock()
	a, ok := b.accs[id]
	b.mu.RUnlock()
	if !ok {
		return shotd.Account{}, fmt.Errorf("cluster: account %s: %w", id, shotd.ErrNotFound)
	}
	return a, nil
}

// CountAccounts returns the number of accounts.
func (b *Book) CountAccounts() (int, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.accs), nil
}

// Accounts lists accounts in id order, at most limit (0 = all), starting after the id after.
func (b *Book) Accounts(after string, limit int) ([]shotd.Account, error) {
	b.mu.RLock()
	out := make([]shotd.Account, 0, len(b.accs))
	for id, a := range b.accs {
		if id > after {
			out = append(out, a)
		}
	}
	b.mu.RUnlock()
	slices.SortFunc(out, func(x, y shotd.Account) int { return cmp.Compare(x.ID, y.ID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// UpdateAccount applies fn to the stored account and writes it back by compare-and-swap,
// retrying when another node wrote it meanwhile (fn may then run more than once). The rules are
// store.Store's: fn may not change ID or CreatedAt (ErrConflict) nor empty the plan.
func (b *Book) UpdateAccount(id string, fn func(*shotd.Account) error) (shotd.Account, error) {
	var a shotd.Account
	err := swap(b, b.accounts, BucketAccounts, "account", id, id, false, func(r *accountRecord) error {
		old := r.Account
		a = old
		if err := fn(&a); err != nil {
			return err
		}
		if a.ID != old.ID || !a.CreatedAt.Equal(old.CreatedAt) {
			return fmt.Errorf("cluster: account %s: id and created_at cannot change: %w", id, store.ErrConflict)
		}
		if a.Plan == "" {
			return fmt.Errorf("cluster: account %s: plan must not be empty", id)
		}
		*r = accountRecord{V: recordVersion, Account: a}
		return nil
	})
	if err != nil {
		return shotd.Account{}, err
	}
	return a, nil
}

// swap applies change to the record of type R stored under key in kv by compare-and-swap
// (casRecord), retrying when another node wrote it meanwhile or no answer came (change may then
// run more than once: it sets fields, it adds nothing), until the Book's timeout; a write whose
// answer was lost but that landed is found as such, not made twice. It then waits until this
// node's copy has seen the write. kind and name name the record in errors and logs;
// invalidIsAbsent treats a key NATS refuses as one that is not there.
func swap[R any](b *Book, kv jetstream.KeyValue, bucket, kind, name, key string, invalidIsAbsent bool, change func(*R) error) error {
	ctx, cancel := b.ctx()
	defer cancel()
	var final error // the record is not there or cannot be read: no try will do better
	var rev uint64  // of the record last read, then of the write
	_, err := casRecord(ctx,
		func(ctx context.Context) (r R, _ uint64, _ []byte, err error) {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			defer cancel()
			e, err := kv.Get(actx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) || invalidIsAbsent && errors.Is(err, jetstream.ErrInvalidKey) {
				final = fmt.Errorf("cluster: %s %s: %w", kind, name, shotd.ErrNotFound)
				return r, 0, nil, final
			}
			if err != nil {
				return r, 0, nil, err
			}
			if final = decode(b.log, kind, name, e.Value(), &r); final != nil {
				return r, 0, nil, final
			}
			rev = e.Revision()
			return r, rev, e.Value(), nil
		},
		func(ctx context.Context, r *R, at uint64) ([]byte, error) {
			data, _ := json.Marshal(r)
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			defer cancel()
			n, err := kv.Update(actx, key, data, at)
			switch {
			case err == nil:
				rev = n
				return nil, nil
			case conflict(err):
				return nil, err
			}
			return data, err // it may have landed
		},
		change,
		func(attempt int, err error) error {
			if final != nil {
				return final
			}
			if !pause(ctx, attempt) {
				return fmt.Errorf("cluster: %s %s: %w", kind, name, err)
			}
			return nil
		})
	if err != nil {
		return err
	}
	b.waitSeen(bucket, rev)
	return nil
}

// CreateKey makes a key for the account, as store.Store.CreateKey does. The account must exist.
func (b *Book) CreateKey(accountID, name string, requireSignature bool) (shotd.Key, error) {
	ctx, cancel := b.ctx()
	defer cancel()
	if _, err := b.accounts.Get(ctx, accountID); errors.Is(err, jetstream.ErrKeyNotFound) {
		return shotd.Key{}, fmt.Errorf("cluster: account %s: %w", accountID, shotd.ErrNotFound)
	} else if err != nil {
		return shotd.Key{}, fmt.Errorf("cluster: account %s: %w", accountID, err)
	}
	k := shotd.Key{SecretKey: randomToken(32), Name: name, RequireSignature: requireSignature, AccountID: accountID,
		CreatedAt: time.Now().UTC().Round(0)}
	for {
		k.AccessKey = store.AccessKeyPrefix + randomToken(16)
		data, _ := json.Marshal(keyRecord{V: recordVersion, Key: k})
		rev, err := b.keys.Create(ctx, k.AccessKey, data)
		if conflict(err) {
			continue
		}
		if err != nil {
			return shotd.Key{}, fmt.Errorf("cluster: create key: %w", err)
		}
		b.waitSeen(BucketKeys, rev)
		return k, nil
	}
}

// Keys lists the account's keys, revoked ones included, oldest first, with SecretKey blank.
func (b *Book) Keys(accountID string) ([]shotd.Key, error) {
	b.mu.RLock()
	_, ok := b.accs[accountID]
	keys := []shotd.Key{}
	for _, k := range b.ks {
		if k.AccountID == accountID {
			k.SecretKey = ""
			keys = append(keys, k)
		}
	}
	b.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("cluster: account %s: %w", accountID, shotd.ErrNotFound)
	}
	slices.SortFunc(keys, func(x, y shotd.Key) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.AccessKey, y.AccessKey))
	})
	return keys, nil
}

// UpdateKey applies fn to the key by compare-and-swap, with store.Store.UpdateKey's rules: only
// name, require_signature and revoked may change, and a revoked key stays revoked.
func (b *Book) UpdateKey(accessKey string, fn func(*shotd.Key) error) (shotd.Key, error) {
	var k shotd.Key
	err := swap(b, b.keys, BucketKeys, "key", redact(accessKey), accessKey, true, func(r *keyRecord) error {
		old := r.Key
		k = old
		k.SecretKey = ""
		if err := fn(&k); err != nil {
			return err
		}
		switch {
		case k.AccessKey != old.AccessKey || k.AccountID != old.AccountID || !k.CreatedAt.Equal(old.CreatedAt) || k.SecretKey != "":
			return fmt.Errorf("cluster: key %s: only name, require_signature and revoked can change: %w", redact(accessKey), store.ErrConflict)
		case old.Revoked && !k.Revoked:
			return fmt.Errorf("cluster: key %s: a revoked key stays revoked: %w", redact(accessKey), store.ErrConflict)
		}
		stored := k
		stored.SecretKey = old.SecretKey
		*r = keyRecord{V: recordVersion, Key: stored}
		return nil
	})
	if err != nil {
		return shotd.Key{}, err
	}
	return k, nil
}

// RevokeKey revokes the key for good; revoking a revoked key is not an error.
func (b *Book) RevokeKey(accessKey string) error {
	_, err := b.UpdateKey(accessKey, store.Revoke)
	return err
}

// Lookup returns the key (with SecretKey) and its account from this node's copy: an error
// wrapping shotd.ErrNotFound for an unknown key, store.ErrRevoked for a revoked one.
//
// A key this node's copy does not have yet (made on another node a moment ago) is read from
// the bucket once; an absent one is remembered for a few seconds, in a bounded map, so that a
// flood of unknown keys does not become a flood of reads. So is a key whose account the copy
// lacks: the two buckets' watches run apart, and a new key can come before its account.
func (b *Book) Lookup(accessKey string) (shotd.Key, shotd.Account, error) {
	b.mu.RLock()
	k, kok := b.ks[accessKey]
	a, aok := b.accs[k.AccountID]
	until, neg := b.missing[accessKey]
	b.mu.RUnlock()
	if (kok && !aok) || (!kok && (!neg || time.Now().After(until)) && store.PlausibleAccessKey(accessKey)) {
		k, a, kok, aok = b.readKey(accessKey)
	}
	switch {
	case !kok:
		return shotd.Key{}, shotd.Account{}, fmt.Errorf("cluster: key %s: %w", redact(accessKey), shotd.ErrNotFound)
	case k.Revoked:
		return shotd.Key{}, shotd.Account{}, fmt.Errorf("cluster: key %s: %w", redact(accessKey), store.ErrRevoked)
	case !aok:
		return shotd.Key{}, shotd.Account{}, fmt.Errorf("cluster: account of key %s: %w", redact(accessKey), shotd.ErrNotFound)
	}
	return k, a, nil
}

// Negative lookups are kept this long, at most this many.
const (
	missingTTL = 5 * time.Second
	missingMax = 10_000
)

// readKey reads a key and its account from the buckets (through their leaders) into the copy,
// or remembers the key absent.
func (b *Book) readKey(accessKey string) (k shotd.Key, a shotd.Account, kok, aok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e, err := b.keys.Get(ctx, accessKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		b.mu.Lock()
		if len(b.missing) >= missingMax {
			clear(b.missing)
		}
		b.missing[accessKey] = time.Now().Add(missingTTL)
		b.mu.Unlock()
		return
	}
	if err != nil {
		return
	}
	b.apply(BucketKeys, e, false)
	b.mu.RLock()
	k, kok = b.ks[accessKey]
	a, aok = b.accs[k.AccountID]
	b.mu.RUnlock()
	if kok && !aok {
		if ae, err := b.accounts.Get(ctx, k.AccountID); err == nil {
			b.apply(BucketAccounts, ae, false)
			b.mu.RLock()
			a, aok = b.accs[k.AccountID]
			b.mu.RUnlock()
		}
	}
	return
}

func randomToken(nBytes int) string {
	b := make([]byte, nBytes)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// redact keeps enough of an access key to tell keys apart in logs.
func redact(accessKey string) string {
	if len(accessKey) <= 7 {
		return accessKey
	}
	return accessKey[:7] + "..."
}
