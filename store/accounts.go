package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

// AccountIDPrefix starts every generated account id.
const AccountIDPrefix = "acc_"

// accountID limits ids to characters that need no escaping in paths and cannot contain the "/"
// that separates the parts of account_keys entries.
var accountID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CreateAccount stores a new account with a random id ("acc_" and 16 hex digits). The caller
// checks that plan exists in the configuration.
func (s *Store) CreateAccount(email, plan string, verified bool) (shotd.Account, error) {
	for range 3 { // 64 random bits: a collision is a freak, but never overwrite an account
		a, err := s.CreateAccountWithID(AccountIDPrefix+randomHex(8), email, plan, verified)
		if !errors.Is(err, ErrConflict) {
			return a, err
		}
	}
	return shotd.Account{}, fmt.Errorf("store: no free account id: %w", ErrConflict)
}

// CreateAccountWithID stores a new account under id (like "default" at first start). It returns
// an error wrapping ErrConflict when id exists.
func (s *Store) CreateAccountWithID(id, email, plan string, verified bool) (shotd.Account, error) {
	if !accountID.MatchString(id) {
		return shotd.Account{}, fmt.Errorf("store: account id %q: must be 1 to 64 of A-Z a-z 0-9 _ -", id)
	}
	if plan == "" {
		return shotd.Account{}, errors.New("store: account plan must not be empty")
	}
	a := shotd.Account{ID: id, Email: email, Plan: plan, EmailVerified: verified, CreatedAt: now()}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAccounts)
		if b.Get([]byte(id)) != nil {
			return fmt.Errorf("store: account %s exists: %w", id, ErrConflict)
		}
		return putJSON(b, id, a)
	})
	if err != nil {
		return shotd.Account{}, err
	}
	s.cache.invalidateAccount(id)
	return a, nil
}

// Account returns the account id, or an error wrapping ErrNotFound.
func (s *Store) Account(id string) (shotd.Account, error) {
	return view(s, func(tx *bbolt.Tx) (shotd.Account, error) { return getAccount(tx, id) })
}

func getAccount(tx *bbolt.Tx, id string) (shotd.Account, error) {
	return getRecord[shotd.Account](tx.Bucket(bucketAccounts), id, func() error {
		return fmt.Errorf("store: account %s: %w", id, shotd.ErrNotFound)
	})
}

// UpdateAccount applies fn to the account id in one transaction and returns the result. An
// error from fn aborts the change and is returned as it is. fn may not change ID or CreatedAt
// (ErrConflict) nor empty the plan. The key cache sees the change before UpdateAccount returns.
func (s *Store) UpdateAccount(id string, fn func(*shotd.Account) error) (shotd.Account, error) {
	get := func(tx *bbolt.Tx) (shotd.Account, error) { return getAccount(tx, id) }
	a, err := update(s, get, fn, func(tx *bbolt.Tx, old, a shotd.Account) error {
		if a.ID != old.ID || !a.CreatedAt.Equal(old.CreatedAt) {
			return fmt.Errorf("store: account %s: id and created_at cannot change: %w", id, ErrConflict)
		}
		if a.Plan == "" {
			return fmt.Errorf("store: account %s: plan must not be empty", id)
		}
		return putJSON(tx.Bucket(bucketAccounts), id, a)
	})
	if err == nil {
		s.cache.invalidateAccount(id)
	}
	return a, err
}

// CountAccounts returns the number of accounts (serve creates the default account when it is 0).
func (s *Store) CountAccounts() (int, error) {
	var n int
	err := s.db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketAccounts).Stats().KeyN
		return nil
	})
	return n, err
}

// Accounts lists accounts in id order, at most limit (0 = all), starting after the id after.
func (s *Store) Accounts(after string, limit int) ([]shotd.Account, error) {
	out := []shotd.Account{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketAccounts).Cursor()
		k, v := c.First()
		if after != "" {
			k, v = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		for ; k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var a shotd.Account
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("store: account %s: %w", k, err)
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}
