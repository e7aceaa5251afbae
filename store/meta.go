package store

import (
	"errors"

	"go.etcd.io/bbolt"
)

// Meta returns the value stored under name; ok is false when there is none.
func (s *Store) Meta(name string) (value string, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte(name)); v != nil {
			value, ok = string(v), true
		}
		return nil
	})
	return value, ok, err
}

// SetMeta stores value under name, replacing what was there.
func (s *Store) SetMeta(name, value string) error {
	if name == "" {
		return errors.New("store: meta name must not be empty")
	}
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte(name), []byte(value))
	})
}
