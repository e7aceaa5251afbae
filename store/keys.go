package store

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

// AccessKeyPrefix starts every access key.
const AccessKeyPrefix = "sk_"

// Entropy of generated keys: 128 bits for the access key (it travels in URLs and alone
// authenticates unsigned requests), 256 bits for the secret.
const (
	accessKeyBytes = 16
	secretKeyBytes = 32
)

// CreateKey makes a key for the account: a random url-safe access key ("sk_" + 22 characters)
// and secret key (43 characters). The answer is the only one that carries SecretKey to the
// caller; the store keeps it to verify signatures. It returns an error wrapping ErrNotFound when
// the account does not exist.
func (s *Store) CreateKey(accountID, name string, requireSignature bool) (shotd.Key, error) {
	k := shotd.Key{
		SecretKey:        randomToken(secretKeyBytes),
		Name:             name,
		RequireSignature: requireSignature,
		AccountID:        accountID,
		CreatedAt:        now(),
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if _, err := getAccount(tx, accountID); err != nil {
			return err
		}
		keys := tx.Bucket(bucketKeys)
		for {
			k.AccessKey = AccessKeyPrefix + randomToken(accessKeyBytes)
			if keys.Get([]byte(k.AccessKey)) == nil {
				break
			}
		}
		if err := putJSON(keys, k.AccessKey, k); err != nil {
			return err
		}
		return tx.Bucket(bucketAccountKeys).Put(indexKey(accountID, k.AccessKey), nil)
	})
	if err != nil {
		return shotd.Key{}, err
	}
	s.cache.invalidateKey(k.AccessKey)
	return k, nil
}

func indexKey(accountID, accessKey string) []byte {
	return []byte(accountID + "/" + accessKey)
}

// Key returns the key with its SecretKey, revoked or not, or an error wrapping ErrNotFound.
// One bbolt Get: the bucket is keyed by access key.
func (s *Store) Key(accessKey string) (shotd.Key, error) {
	return view(s, func(tx *bbolt.Tx) (shotd.Key, error) { return getKey(tx, accessKey) })
}

func getKey(tx *bbolt.Tx, accessKey string) (shotd.Key, error) {
	return getRecord[shotd.Key](tx.Bucket(bucketKeys), accessKey, func() error {
		return fmt.Errorf("store: key %s: %w", redact(accessKey), shotd.ErrNotFound)
	})
}

// Keys lists the account's keys, revoked ones included, oldest first, with SecretKey blank. It
// returns an error wrapping ErrNotFound when the account does not exist.
func (s *Store) Keys(accountID string) ([]shotd.Key, error) {
	keys := []shotd.Key{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		if _, err := getAccount(tx, accountID); err != nil {
			return err
		}
		prefix := []byte(accountID + "/")
		c := tx.Bucket(bucketAccountKeys).Cursor()
		for ik, _ := c.Seek(prefix); ik != nil && bytes.HasPrefix(ik, prefix); ik, _ = c.Next() {
			k, err := getKey(tx, string(ik[len(prefix):]))
			if err != nil {
				return err
			}
			k.SecretKey = ""
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b shotd.Key) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.AccessKey, b.AccessKey))
	})
	return keys, nil
}

// UpdateKey applies fn to the key in one transaction and returns the result with SecretKey
// blank. fn sees SecretKey blank too and may change Name, RequireSignature and set Revoked; any
// other change, or clearing Revoked, is refused with an error wrapping ErrConflict. An error
// from fn aborts the change and is returned as it is. The key cache sees the change before
// UpdateKey returns.
func (s *Store) UpdateKey(accessKey string, fn func(*shotd.Key) error) (shotd.Key, error) {
	get := func(tx *bbolt.Tx) (shotd.Key, error) { return getKey(tx, accessKey) }
	blank := func(k *shotd.Key) error {
		k.SecretKey = ""
		return fn(k)
	}
	k, err := update(s, get, blank, func(tx *bbolt.Tx, old, k shotd.Key) error {
		switch {
		case k.AccessKey != old.AccessKey || k.AccountID != old.AccountID || !k.CreatedAt.Equal(old.CreatedAt) || k.SecretKey != "":
			return fmt.Errorf("store: key %s: only name, require_signature and revoked can change: %w", redact(accessKey), ErrConflict)
		case old.Revoked && !k.Revoked:
			return fmt.Errorf("store: key %s: a revoked key stays revoked: %w", redact(accessKey), ErrConflict)
		}
		k.SecretKey = old.SecretKey // kept to verify signatures; k itself goes back blank
		return putJSON(tx.Bucket(bucketKeys), accessKey, k)
	})
	if err == nil {
		s.cache.invalidateKey(accessKey)
	}
	return k, err
}

// RevokeKey revokes the key for good; revoking a revoked key is not an error. It returns an error
// wrapping ErrNotFound for an unknown key. The next KeyCache.Lookup fails with ErrRevoked.
func (s *Store) RevokeKey(accessKey string) error {
	_, err := s.UpdateKey(accessKey, Revoke)
	return err
}

// Revoke is the UpdateKey change that revokes a key: one definition for Store and cluster.Book.
func Revoke(k *shotd.Key) error {
	k.Revoked = true
	return nil
}

// redact keeps enough of an access key to tell keys apart in logs. The access key alone
// authenticates unsigned requests, so whole keys stay out of error messages.
func redact(accessKey string) string {
	if len(accessKey) <= 7 {
		return accessKey
	}
	return accessKey[:7] + "..."
}
