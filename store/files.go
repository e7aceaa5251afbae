package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/shotd/shotd"
)

// FilesDir is the directory inside the data directory that holds rendered files, one per
// file id.
const FilesDir = "files"

// FileIDPrefix starts every file id.
const FileIDPrefix = "f_"

// fileIDBytes: 128 random bits. The id alone names a file in a URL; ownership is checked too,
// but the id must not be guessable either.
const fileIDBytes = 16

// tempPrefix names files being written. The sweeper removes old ones, which a crash between
// create and rename leaves behind; they can never be mistaken for a file id.
const tempPrefix = "tmp-"

var bucketFiles = []byte("files") // file id -> shotd.FileRecord

// PutFile stores out for the account and returns its record, expiring ttl from now. The data is
// written to a temporary file, synced and renamed to the new id before the record is committed,
// so a committed record always has its file; on any failure nothing is left behind.
func (s *Store) PutFile(accountID string, out *shotd.Output, ttl time.Duration) (shotd.FileRecord, error) {
	return s.putFile(accountID, out, ttl, "", 0)
}

// PutCachedFile is PutFile, and enters the file in the response cache under cacheKey for
// cacheTTL in the same transaction as its record (one write for a cached render). The file is
// kept at least as long as the entry, so that it is never swept before the entry; the record
// returned tells its real expiry.
func (s *Store) PutCachedFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error) {
	if err := checkCacheKey(cacheKey); err != nil {
		return shotd.FileRecord{}, err
	}
	if cacheTTL <= 0 {
		return shotd.FileRecord{}, fmt.Errorf("store: cache put: ttl %v must be positive", cacheTTL)
	}
	return s.putFile(accountID, out, ttl, cacheKey, cacheTTL)
}

func (s *Store) putFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error) {
	switch {
	case accountID == "":
		return shotd.FileRecord{}, errors.New("store: put file: account id must not be empty")
	case out == nil:
		return shotd.FileRecord{}, errors.New("store: put file: no output")
	case out.ContentType == "":
		return shotd.FileRecord{}, errors.New("store: put file: content type must not be empty")
	case ttl <= 0:
		return shotd.FileRecord{}, fmt.Errorf("store: put file: ttl %v must be positive", ttl)
	}
	created := now()
	expires := created.Add(max(ttl, cacheTTL))
	// The extras (content, slices) are files of their own that expire with this one. All the
	// files are written first, the directory synced once, and every record committed in one
	// transaction: a render of many slices holds the one writer once, and a failure leaves
	// nothing behind.
	extras := make([]shotd.FileRecord, len(out.Extras))
	for i, x := range out.Extras {
		if x.ContentType == "" {
			return shotd.FileRecord{}, errors.New("store: put file: content type must not be empty")
		}
		extras[i] = s.newRecord(accountID, &shotd.Output{Data: x.Data, Format: x.Format, ContentType: x.ContentType}, created, expires)
	}
	meta, slices, err := linkExtras(out, extras)
	if err != nil {
		return shotd.FileRecord{}, err
	}
	rec := s.newRecord(accountID, out, created, expires)
	// The location is always kept; answers show it only when storage_return_location asked.
	rec.StorageLocation, rec.Metadata, rec.Slices = out.StorageLocation, meta, slices
	all := append(extras, rec)
	written := 0
	undo := func() {
		for _, r := range all[:written] {
			if r.Remote {
				s.removeRemote(r)
			} else {
				_ = os.Remove(s.filePath(r.FileID))
			}
		}
	}
	for i, r := range all {
		data := out.Data
		if i < len(extras) {
			data = out.Extras[i].Data
		}
		if r.Remote {
			err = s.putRemote(r, data)
		} else {
			err = s.writeFile(s.filePath(r.FileID), data)
		}
		if err != nil {
			undo()
			return shotd.FileRecord{}, err
		}
		written++
	}
	if !rec.Remote {
		// The renames are durable before the records that point to them are committed.
		if err := syncDir(s.filesDir); err != nil {
			undo()
			return shotd.FileRecord{}, fmt.Errorf("store: put file: %w", err)
		}
	}
	// A render's records share the commit of the writes made meanwhile (group.go): a render
	// made beside async accepts costs them no commit of its own.
	err = s.group.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketFiles)
		for _, r := range all {
			if b.Get([]byte(r.FileID)) != nil { // 128 random bits: never, but never overwrite
				return fmt.Errorf("store: file %s exists: %w", r.FileID, ErrConflict)
			}
			if err := putJSON(b, r.FileID, r); err != nil {
				return err
			}
		}
		if cacheKey == "" {
			return nil
		}
		e := cacheEntry{FileID: rec.FileID, AccountID: accountID, ExpiresAt: created.Add(cacheTTL)}
		return putJSON(tx.Bucket(bucketCache), cacheKey, e)
	})
	if err != nil {
		undo()
		return shotd.FileRecord{}, fmt.Errorf("store: put file: %w", err)
	}
	return rec, nil
}

// newRecord is the record of a new file of out, its id fresh.
func (s *Store) newRecord(accountID string, out *shotd.Output, created, expires time.Time) shotd.FileRecord {
	return shotd.FileRecord{
		FileID:      FileIDPrefix + randomToken(fileIDBytes),
		AccountID:   accountID,
		Format:      out.Format,
		ContentType: out.ContentType,
		SizeBytes:   int64(len(out.Data)),
		Width:       out.Width,
		Height:      out.Height,
		RenderMs:    out.RenderMs,
		CreatedAt:   created,
		ExpiresAt:   expires,
		Remote:      s.bucket() != nil,
	}
}

// linkExtras returns the metadata and slices of out, their references naming the files of
// extras.
func linkExtras(out *shotd.Output, ids []shotd.FileRecord) (*shotd.Metadata, []shotd.Slice, error) {
	ref := func(r shotd.FileRef) (shotd.FileRef, error) {
		if r.Extra < 0 || r.Extra >= len(ids) {
			return r, fmt.Errorf("store: put file: extra %d of %d", r.Extra, len(ids))
		}
		x := ids[r.Extra]
		r.FileID, r.Expires = x.FileID, x.ExpiresAt
		return r, nil
	}
	var meta *shotd.Metadata
	if out.Metadata != nil {
		m := *out.Metadata
		if m.Content != nil {
			c, err := ref(*m.Content)
			if err != nil {
				return nil, nil, err
			}
			m.Content = &c
		}
		meta = &m
	}
	var slices []shotd.Slice
	for _, sl := range out.Slices {
		r, err := ref(sl.FileRef)
		if err != nil {
			return nil, nil, err
		}
		sl.FileRef = r
		slices = append(slices, sl)
	}
	return meta, slices, nil
}

// writeFile writes data to path through a synced temporary file and a rename; the caller syncs
// the directory before it commits a record that points to it.
func (s *Store) writeFile(path string, data []byte) (err error) {
	f, err := os.CreateTemp(s.filesDir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: put file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("store: put file: %w", err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// File returns the record of fileID when accountID owns it and it has not expired. Otherwise it
// returns an error wrapping ErrNotFound, the same for an unknown, expired or foreign file, so
// that a caller cannot learn that someone else's id exists.
func (s *Store) File(accountID, fileID string) (shotd.FileRecord, error) {
	notFound := fmt.Errorf("store: file %s: %w", fileID, shotd.ErrNotFound)
	if !plausibleFileID(fileID) {
		return shotd.FileRecord{}, notFound
	}
	var rec shotd.FileRecord
	var ok bool
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		ok, err = getJSON(tx.Bucket(bucketFiles), fileID, &rec)
		return err
	})
	if err != nil {
		return shotd.FileRecord{}, err
	}
	if !ok || rec.AccountID != accountID || rec.Expired(time.Now()) {
		return shotd.FileRecord{}, notFound
	}
	return rec, nil
}

// OpenFile opens the stored data of rec for reading; the caller closes it. A file the sweeper
// removed in the meantime gives an error wrapping ErrNotFound. Once open, the data stays
// readable to the end even if the sweeper removes the file.
func (s *Store) OpenFile(rec shotd.FileRecord) (*os.File, error) {
	if !plausibleFileID(rec.FileID) {
		return nil, fmt.Errorf("store: file %s: %w", rec.FileID, shotd.ErrNotFound)
	}
	if rec.Remote {
		return s.openRemote(rec)
	}
	f, err := os.Open(s.filePath(rec.FileID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: file %s: %w", rec.FileID, shotd.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open file %s: %w", rec.FileID, err)
	}
	return f, nil
}

func (s *Store) filePath(fileID string) string { return filepath.Join(s.filesDir, fileID) }

// plausibleFileID accepts what PutFile makes, give or take the length: the prefix and url-safe
// characters only, so that an id from a URL can never name a path outside the files directory.
func plausibleFileID(id string) bool {
	if len(id) < len(FileIDPrefix)+16 || len(id) > 64 || id[:len(FileIDPrefix)] != FileIDPrefix {
		return false
	}
	for i := len(FileIDPrefix); i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}
