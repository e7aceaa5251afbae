package store

import (
	"io"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the database to w, as of one read transaction: writers go
// on meanwhile (bbolt readers do not block them), and the copy is a database file that Open
// reads as it is. size is called first with the copy's length, so that an HTTP answer can carry
// it; it may stop the backup by returning an error. The rendered files (dataDir/files) are not in
// the copy.
func (s *Store) Backup(w io.Writer, size func(n int64) error) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		if err := size(tx.Size()); err != nil {
			return err
		}
		_, err := tx.WriteTo(w)
		return err
	})
}
