package store

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd"
)

// newKey makes an account and one key for a cache test.
func newKey(t *testing.T, s *Store) (shotd.Key, shotd.Account) {
	t.Helper()
	a, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.CreateKey(a.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	return k, a
}

func TestLookupHitsMemory(t *testing.T) {
	s, _ := openStore(t)
	c := s.KeyCache()
	k, a := newKey(t, s)
	for i := range 5 {
		gotK, gotA, err := c.Lookup(k.AccessKey)
		if err != nil {
			t.Fatal(err)
		}
		if gotK != k || gotA != a {
			t.Fatalf("lookup %d = %+v %+v; want %+v (with secret) %+v", i, gotK, gotA, k, a)
		}
	}
	if n := c.loads.Load(); n != 1 {
		t.Fatalf("%d bbolt reads for 5 lookups, want 1", n)
	}
}

func TestLookupSeesMutationsAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Store, k shotd.Key, a shotd.Account) error
		check  func(k shotd.Key, a shotd.Account, err error) string // "" = as expected
	}{
		{"revoke", func(s *Store, k shotd.Key, _ shotd.Account) error { return s.RevokeKey(k.AccessKey) },
			func(_ shotd.Key, _ shotd.Account, err error) string {
				if !errors.Is(err, ErrRevoked) || !errors.Is(err, shotd.ErrNotFound) {
					return "want ErrRevoked (which is ErrNotFound too), got " + errString(err)
				}
				return ""
			}},
		{"revoke through UpdateKey", func(s *Store, k shotd.Key, _ shotd.Account) error {
			_, err := s.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.Revoked = true; return nil })
			return err
		}, func(_ shotd.Key, _ shotd.Account, err error) string {
			if !errors.Is(err, ErrRevoked) {
				return "want ErrRevoked, got " + errString(err)
			}
			return ""
		}},
		{"require signature", func(s *Store, k shotd.Key, _ shotd.Account) error {
			_, err := s.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.RequireSignature = true; return nil })
			return err
		}, func(k shotd.Key, _ shotd.Account, err error) string {
			if err != nil || !k.RequireSignature || k.SecretKey == "" {
				return "want require_signature with the secret, got " + errString(err)
			}
			return ""
		}},
		{"email unverified", func(s *Store, _ shotd.Key, a shotd.Account) error {
			_, err := s.UpdateAccount(a.ID, func(a *shotd.Account) error { a.EmailVerified = false; return nil })
			return err
		}, func(_ shotd.Key, a shotd.Account, err error) string {
			if err != nil || a.EmailVerified {
				return "want email_verified false, got " + errString(err)
			}
			return ""
		}},
		{"plan changed", func(s *Store, _ shotd.Key, a shotd.Account) error {
			_, err := s.UpdateAccount(a.ID, func(a *shotd.Account) error { a.Plan = "pro"; return nil })
			return err
		}, func(_ shotd.Key, a shotd.Account, err error) string {
			if err != nil || a.Plan != "pro" {
				return "want plan pro, got " + a.Plan + " " + errString(err)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openStore(t)
			c := s.KeyCache()
			k, a := newKey(t, s)
			if _, _, err := c.Lookup(k.AccessKey); err != nil { // now cached
				t.Fatal(err)
			}
			if err := tt.change(s, k, a); err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(c.Lookup(k.AccessKey)); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestLookupSharedAccount(t *testing.T) {
	// Two keys of one account: an account change reaches both, though only one was looked up since.
	s, _ := openStore(t)
	c := s.KeyCache()
	k1, a := newKey(t, s)
	k2, err := s.CreateKey(a.ID, "second", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []shotd.Key{k1, k2} {
		if _, _, err := c.Lookup(k.AccessKey); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.UpdateAccount(a.ID, func(a *shotd.Account) error { a.BonusScreenshots = 9; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []shotd.Key{k1, k2} {
		if _, got, err := c.Lookup(k.AccessKey); err != nil || got.BonusScreenshots != 9 {
			t.Fatalf("key %s sees bonus %d, %v; want 9", k.Name, got.BonusScreenshots, err)
		}
	}
}

func TestLookupNegative(t *testing.T) {
	s, _ := openStore(t)
	c := s.KeyCache()
	clock := time.Unix(1000, 0)
	c.now = func() time.Time { return clock }
	c.negMax = 3

	tests := []struct {
		name      string
		key       string
		advance   time.Duration
		wantLoads int64 // bbolt reads so far
	}{
		{"unknown key reads bbolt", "sk_unknown1", 0, 1},
		{"again: answered from memory", "sk_unknown1", 0, 1},
		{"still within the ttl", "sk_unknown1", negativeTTL - time.Second, 1},
		{"after the ttl: read again", "sk_unknown1", 2 * time.Second, 2},
		{"too long: no read", "sk_" + strings.Repeat("a", maxAccessKeyLen), 0, 2},
		{"not url-safe: no read", "sk_a b", 0, 2},
		{"empty: no read", "", 0, 2},
		{"another unknown key", "sk_unknown2", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock = clock.Add(tt.advance)
			if _, _, err := c.Lookup(tt.key); !errors.Is(err, shotd.ErrNotFound) {
				t.Fatalf("error %v, want ErrNotFound", err)
			}
			if n := c.loads.Load(); n != tt.wantLoads {
				t.Fatalf("%d bbolt reads, want %d", n, tt.wantLoads)
			}
		})
	}

	// Bounded: a flood of distinct unknown keys never holds more than negMax entries.
	for i := range 20 {
		_, _, _ = c.Lookup("sk_flood" + strings.Repeat("x", i))
		c.mu.RLock()
		n := len(c.negative)
		c.mu.RUnlock()
		if n > c.negMax {
			t.Fatalf("%d negative entries, bound is %d", n, c.negMax)
		}
	}
}

func TestLookupAfterCreateIsNotNegative(t *testing.T) {
	// A key created after its access key was cached as unknown must work at once. Access keys are
	// random, so plant the negative entry for the new key by hand, as a lookup would have.
	s, _ := openStore(t)
	c := s.KeyCache()
	k, _ := newKey(t, s)
	c.mu.Lock()
	c.negative[k.AccessKey] = time.Now().Add(time.Hour)
	c.mu.Unlock()
	if _, err := s.UpdateKey(k.AccessKey, func(k *shotd.Key) error { k.Name = "renamed"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.Lookup(k.AccessKey); err != nil || got.Name != "renamed" {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
}

func TestLookupRacingAMutationIsNotCached(t *testing.T) {
	// The lookup reads the key, then a revocation commits and invalidates before the lookup
	// stores what it read. The stale read must not be cached, or the key would work for good.
	s, _ := openStore(t)
	c := s.KeyCache()
	k, _ := newKey(t, s)
	var once sync.Once
	c.testAfterLoad = func() {
		once.Do(func() {
			if err := s.RevokeKey(k.AccessKey); err != nil {
				t.Error(err)
			}
		})
	}
	if _, _, err := c.Lookup(k.AccessKey); err != nil {
		t.Fatalf("racing lookup: %v (it read before the revocation)", err)
	}
	c.testAfterLoad = nil
	if _, _, err := c.Lookup(k.AccessKey); !errors.Is(err, ErrRevoked) {
		t.Fatalf("lookup after the revocation: %v, want ErrRevoked", err)
	}
}

func TestLookupConcurrent(t *testing.T) {
	s, _ := openStore(t)
	c := s.KeyCache()
	k, a := newKey(t, s)
	other, err := s.CreateKey(a.ID, "other", false)
	if err != nil {
		t.Fatal(err)
	}

	var revoking, revoked atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Read the flag first: when it is set, the revocation has returned, so this
				// lookup started after it and must fail.
				// A lookup that starts after the revocation returned must fail; one that ends
				// before the revocation started must succeed; in between, either is right.
				was := revoked.Load()
				_, _, err := c.Lookup(k.AccessKey)
				before := !revoking.Load()
				if was && err == nil {
					t.Errorf("lookup after the revocation returned: ok")
				}
				if before && err != nil {
					t.Errorf("lookup before the revocation: %v", err)
				}
				if _, _, err := c.Lookup(other.AccessKey); err != nil {
					t.Errorf("other key: %v", err)
				}
				if (g+i)%50 == 0 {
					_, _, _ = c.Lookup("sk_unknown")
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	for i := range 20 { // churn: account updates invalidate while lookups run
		if _, err := s.UpdateAccount(a.ID, func(a *shotd.Account) error { a.BonusScreenshots = i; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	revoking.Store(true)
	if err := s.RevokeKey(k.AccessKey); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if _, got, err := c.Lookup(other.AccessKey); err != nil || got.BonusScreenshots != 19 {
		t.Fatalf("other key after churn: %+v, %v", got, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
