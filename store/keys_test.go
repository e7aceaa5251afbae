package store

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

func TestCreateKeyFormat(t *testing.T) {
	s, _ := openStore(t)
	a, err := s.CreateAccount("a@example.com", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 200 {
		k, err := s.CreateKey(a.ID, "k", i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		raw, ok := strings.CutPrefix(k.AccessKey, AccessKeyPrefix)
		if !ok {
			t.Fatalf("access key %q lacks %q", k.AccessKey, AccessKeyPrefix)
		}
		if b, err := base64.RawURLEncoding.DecodeString(raw); err != nil || len(b) < 16 {
			t.Fatalf("access key %q: want >= 128 random bits, url-safe (%v)", k.AccessKey, err)
		}
		if b, err := base64.RawURLEncoding.DecodeString(k.SecretKey); err != nil || len(b) < 32 {
			t.Fatalf("secret key %q: want >= 256 random bits, url-safe (%v)", k.SecretKey, err)
		}
		if !PlausibleAccessKey(k.AccessKey) {
			t.Fatalf("KeyCache would refuse %q", k.AccessKey)
		}
		if seen[k.AccessKey] || seen[k.SecretKey] {
			t.Fatal("a key repeats")
		}
		seen[k.AccessKey], seen[k.SecretKey] = true, true
		if k.AccountID != a.ID || k.Name != "k" || k.RequireSignature != (i%2 == 0) || k.Revoked || k.CreatedAt.IsZero() {
			t.Fatalf("key %+v", k)
		}
	}
}

func TestCreateKeyUnknownAccount(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.CreateKey("acc_nope", "k", false); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("error %v, want ErrNotFound", err)
	}
}

func TestKeyLookupIsOneGet(t *testing.T) {
	s, _ := openStore(t)
	a, _ := s.CreateAccount("a@example.com", "default", true)
	var last shotd.Key
	for range 50 {
		k, err := s.CreateKey(a.ID, "", false)
		if err != nil {
			t.Fatal(err)
		}
		last = k
	}
	// The keys bucket is keyed by the access key itself: Key is one B+tree Get, no scan.
	err := s.DB().View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketKeys).Get([]byte(last.AccessKey)) == nil {
			return errors.New("keys bucket not keyed by access key")
		}
		if tx.Bucket(bucketAccountKeys).Get(indexKey(a.ID, last.AccessKey)) == nil {
			return errors.New("account index entry missing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Key(last.AccessKey)
	if err != nil || got != last {
		t.Fatalf("Key = %+v, %v; want %+v (with secret)", got, err, last)
	}
	if _, err := s.Key("sk_unknown"); !errors.Is(err, shotd.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestKeysListing(t *testing.T) {
	s, _ := openStore(t)
	a, _ := s.CreateAccount("a@example.com", "default", true)
	b, _ := s.CreateAccount("b@example.com", "default", true)
	// Account "acc_x" must not list the keys of an account whose id starts with "acc_x".
	c, _ := s.CreateAccountWithID(a.ID+"x", "c@example.com", "default", true)
	var want []shotd.Key
	for _, name := range []string{"one", "two", "three"} {
		k, err := s.CreateKey(a.ID, name, false)
		if err != nil {
			t.Fatal(err)
		}
		k.SecretKey = ""
		want = append(want, k)
	}
	if _, err := s.CreateKey(c.ID, "other", false); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(want[1].AccessKey); err != nil {
		t.Fatal(err)
	}
	want[1].Revoked = true

	tests := []struct {
		name    string
		account string
		want    []shotd.Key
		wantErr error
	}{
		{"three keys oldest first, revoked included", a.ID, want, nil},
		{"no keys", b.ID, []shotd.Key{}, nil},
		{"unknown account", "acc_nope", nil, shotd.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Keys(tt.account)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if got == nil || len(got) != len(tt.want) {
				t.Fatalf("got %d keys (%v), want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].SecretKey != "" {
					t.Fatalf("listed key %d carries its secret", i)
				}
				if got[i] != tt.want[i] {
					t.Fatalf("key %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestUpdateKey(t *testing.T) {
	s, _ := openStore(t)
	a, _ := s.CreateAccount("a@example.com", "default", true)
	created, err := s.CreateKey(a.ID, "ci", false)
	if err != nil {
		t.Fatal(err)
	}
	ak := created.AccessKey
	fnErr := errors.New("refused by fn")
	tests := []struct {
		name    string
		key     string
		fn      func(*shotd.Key) error
		want    func(shotd.Key) shotd.Key // stored key (with secret) after the call
		wantErr error
	}{
		{"rename and require signature", ak, func(k *shotd.Key) error {
			if k.SecretKey != "" {
				return errors.New("fn sees the secret")
			}
			k.Name, k.RequireSignature = "prod", true
			return nil
		}, func(k shotd.Key) shotd.Key { k.Name, k.RequireSignature = "prod", true; return k }, nil},
		{"fn error aborts", ak, func(k *shotd.Key) error { k.Name = "lost"; return fnErr },
			func(k shotd.Key) shotd.Key { return k }, fnErr},
		{"access key cannot change", ak, func(k *shotd.Key) error { k.AccessKey = "sk_other"; return nil },
			func(k shotd.Key) shotd.Key { return k }, ErrConflict},
		{"account cannot change", ak, func(k *shotd.Key) error { k.AccountID = "acc_other"; return nil },
			func(k shotd.Key) shotd.Key { return k }, ErrConflict},
		{"secret cannot be set", ak, func(k *shotd.Key) error { k.SecretKey = "guess"; return nil },
			func(k shotd.Key) shotd.Key { return k }, ErrConflict},
		{"revoke", ak, func(k *shotd.Key) error { k.Revoked = true; return nil },
			func(k shotd.Key) shotd.Key { k.Revoked = true; return k }, nil},
		{"revoked stays revoked", ak, func(k *shotd.Key) error { k.Revoked = false; return nil },
			func(k shotd.Key) shotd.Key { return k }, ErrConflict},
		{"revoked key can be renamed", ak, func(k *shotd.Key) error { k.Name = "dead"; return nil },
			func(k shotd.Key) shotd.Key { k.Name = "dead"; return k }, nil},
		{"unknown key", "sk_nope", func(*shotd.Key) error { return nil },
			func(k shotd.Key) shotd.Key { return k }, shotd.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := s.Key(ak)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.UpdateKey(tt.key, tt.fn)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			stored, err := s.Key(ak)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(before); stored != want {
				t.Fatalf("stored %+v, want %+v", stored, want)
			}
			if stored.SecretKey != created.SecretKey {
				t.Fatal("the secret changed")
			}
			if tt.wantErr == nil {
				if got.SecretKey != "" {
					t.Fatal("UpdateKey returned the secret")
				}
				stored.SecretKey = ""
				if got != stored {
					t.Fatalf("returned %+v, stored %+v", got, stored)
				}
			}
		})
	}
}

func TestRevokeKey(t *testing.T) {
	s, _ := openStore(t)
	a, _ := s.CreateAccount("a@example.com", "default", true)
	k, _ := s.CreateKey(a.ID, "", false)
	tests := []struct {
		name    string
		key     string
		wantErr error
	}{
		{"revoke", k.AccessKey, nil},
		{"revoke twice", k.AccessKey, nil},
		{"unknown", "sk_nope", shotd.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.RevokeKey(tt.key); !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
	got, err := s.Key(k.AccessKey)
	if err != nil || !got.Revoked {
		t.Fatalf("Key after revoke = %+v, %v", got, err)
	}
}
