package store

import (
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/bbolt"
)

// SchemaVersion is the layout of the database this binary writes: its buckets and the records in
// them. Open records it in the meta bucket; raise it with any change that an older binary would
// misread (a bucket renamed or re-keyed, a record whose meaning changed), so that the older
// binary refuses the database instead of corrupting it. Adding a bucket or a JSON field that old
// binaries ignore does not need a new version. 1: the first recorded version; a database without
// a record is of that layout.
const SchemaVersion = 1

// metaSchemaVersion is the meta key of the schema version, a decimal string.
const metaSchemaVersion = "schema_version"

// ErrNewerSchema: the database was written by a newer shotd than this binary. Returned as a
// *NewerSchemaError.
var ErrNewerSchema = errors.New("store: database written by a newer shotd")

// NewerSchemaError says which database is newer than this binary, and what to do.
type NewerSchemaError struct {
	Path    string
	Version int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("store: %s has schema version %d, newer than the %d this shotd knows: it was written by a newer shotd. "+
		"Run that version again, or restore a backup taken before the upgrade (shotd admin restore FILE); the database is left untouched",
		e.Path, e.Version, SchemaVersion)
}

// Is makes errors.Is(err, ErrNewerSchema) true.
func (e *NewerSchemaError) Is(target error) bool { return target == ErrNewerSchema }

// schemaVersion reads the recorded version: 0 for a new database, SchemaVersion's first value
// for one made before versions were recorded.
func schemaVersion(tx *bbolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	raw := meta.Get([]byte(metaSchemaVersion))
	if raw == nil {
		return 1, nil
	}
	v, err := strconv.Atoi(string(raw))
	if err != nil || v < 1 {
		return 0, fmt.Errorf("store: unreadable schema version %q", raw)
	}
	return v, nil
}

// SchemaVersion returns the schema version recorded in the database.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	err := s.db.View(func(tx *bbolt.Tx) (err error) {
		v, err = schemaVersion(tx)
		return err
	})
	return v, err
}
