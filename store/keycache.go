package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

// Negative answers are kept briefly so that a flood of one unknown key does not reach bbolt on
// every request, and in a bounded map so that a flood of random keys cannot grow memory.
const (
	negativeTTL = 5 * time.Second
	negativeMax = 10_000
	// maxAccessKeyLen: anything longer is not a key this store made; it is refused without a
	// bbolt read or a cache entry.
	maxAccessKeyLen = 128
)

// KeyCache answers "which key and account is this access key" from memory. Positive entries
// live until a Store mutation invalidates them; negative ones for negativeTTL. Get it from
// Store.KeyCache.
type KeyCache struct {
	s *Store

	mu       sync.RWMutex
	gen      uint64 // bumped by every invalidation; a load that raced one is not cached
	keys     map[string]shotd.Key
	accounts map[string]shotd.Account
	negative map[string]time.Time // access key -> until

	negTTL time.Duration
	negMax int
	now    func() time.Time

	loads         atomic.Int64 // bbolt reads, for tests
	testAfterLoad func()       // runs between the bbolt read and the cache write, for tests
}

func newKeyCache(s *Store) *KeyCache {
	return &KeyCache{
		s:        s,
		keys:     make(map[string]shotd.Key),
		accounts: make(map[string]shotd.Account),
		negative: make(map[string]time.Time),
		negTTL:   negativeTTL,
		negMax:   negativeMax,
		now:      time.Now,
	}
}

// Lookup returns the key (with SecretKey, to verify signatures) and its account. It returns an
// error wrapping ErrNotFound for an unknown key and ErrRevoked (which also wraps ErrNotFound) for
// a revoked one; other errors are bbolt failures.
func (c *KeyCache) Lookup(accessKey string) (shotd.Key, shotd.Account, error) {
	if !PlausibleAccessKey(accessKey) {
		return shotd.Key{}, shotd.Account{}, fmt.Errorf("store: key %s: %w", redact(accessKey), shotd.ErrNotFound)
	}
	c.mu.RLock()
	k, kok := c.keys[accessKey]
	a, aok := c.accounts[k.AccountID]
	until, neg := c.negative[accessKey]
	gen := c.gen
	c.mu.RUnlock()
	if kok && aok {
		return answer(k, a, nil)
	}
	if neg && c.now().Before(until) {
		return answer(shotd.Key{}, shotd.Account{}, fmt.Errorf("store: key %s: %w", redact(accessKey), shotd.ErrNotFound))
	}

	k, a, keyMissing, err := c.load(accessKey)
	if c.testAfterLoad != nil {
		c.testAfterLoad()
	}
	c.mu.Lock()
	// A mutation committed and invalidated while we read: what we read may predate it, so
	// answer with it (the request was concurrent with the change) but do not keep it.
	if c.gen == gen {
		switch {
		case err == nil:
			c.keys[accessKey] = k
			c.accounts[a.ID] = a
			delete(c.negative, accessKey)
		case keyMissing:
			if len(c.negative) >= c.negMax {
				clear(c.negative) // crude but bounded and O(1) amortized; real keys stay cached
			}
			c.negative[accessKey] = c.now().Add(c.negTTL)
		}
	}
	c.mu.Unlock()
	return answer(k, a, err)
}

// load reads the key and its account in one read transaction.
func (c *KeyCache) load(accessKey string) (k shotd.Key, a shotd.Account, keyMissing bool, err error) {
	c.loads.Add(1)
	err = c.s.db.View(func(tx *bbolt.Tx) error {
		var err error
		if k, err = getKey(tx, accessKey); err != nil {
			keyMissing = errors.Is(err, shotd.ErrNotFound)
			return err
		}
		if a, err = getAccount(tx, k.AccountID); err != nil {
			return fmt.Errorf("store: account of key %s: %w", redact(accessKey), err)
		}
		return nil
	})
	return k, a, keyMissing, err
}

func answer(k shotd.Key, a shotd.Account, err error) (shotd.Key, shotd.Account, error) {
	if err != nil {
		return shotd.Key{}, shotd.Account{}, err
	}
	if k.Revoked {
		return shotd.Key{}, shotd.Account{}, fmt.Errorf("store: key %s: %w", redact(k.AccessKey), ErrRevoked)
	}
	return k, a, nil
}

// PlausibleAccessKey rejects what CreateKey never makes, before any lookup: too long, or
// characters outside the url-safe alphabet. cluster.Book applies the same rule to its copy.
func PlausibleAccessKey(s string) bool {
	if s == "" || len(s) > maxAccessKeyLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// invalidateKey drops what the cache knows about accessKey. Called after the commit.
func (c *KeyCache) invalidateKey(accessKey string) {
	c.mu.Lock()
	c.gen++
	delete(c.keys, accessKey)
	delete(c.negative, accessKey)
	c.mu.Unlock()
}

// invalidateAccount drops the cached account id; its keys reload it on their next lookup.
func (c *KeyCache) invalidateAccount(id string) {
	c.mu.Lock()
	c.gen++
	delete(c.accounts, id)
	c.mu.Unlock()
}
