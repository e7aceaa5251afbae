package store

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/shotd/shotd"
)

// A backup is either the database file alone (Backup) or a tar archive (BackupArchive) of the
// database as archiveDB, then the stored files as archiveFiles+id, then archiveEnd, whose count
// of files tells a whole archive from one cut at an entry boundary.
const (
	archiveDB    = FileName
	archiveFiles = FilesDir + "/"
	archiveEnd   = "shotd-backup.json"
)

// archiveManifest is archiveEnd's content.
type archiveManifest struct {
	SchemaVersion int       `json:"schema_version"`
	Files         int       `json:"files"`
	CreatedAt     time.Time `json:"created_at"`
}

// requiredBuckets must be in a database that Restore installs: without them it is not shotd's.
var requiredBuckets = [][]byte{bucketMeta, bucketAccounts, bucketKeys, bucketAccountKeys, bucketFiles}

// BackupArchive writes a tar archive of the database and the stored files that its copy has
// records of (files kept in the S3 bucket are not local and stay where they are), as of one read
// transaction: a file deleted meanwhile by the sweeper is left out, one written meanwhile has no
// record in the copy and is left out too. Files are streamed, never held in memory.
func (s *Store) BackupArchive(w io.Writer) error {
	tw := tar.NewWriter(w)
	err := s.db.View(func(tx *bbolt.Tx) error {
		when := time.Now().UTC()
		if err := tw.WriteHeader(&tar.Header{Name: archiveDB, Mode: 0o600, Size: tx.Size(), ModTime: when, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tx.WriteTo(tw); err != nil {
			return err
		}
		version, err := schemaVersion(tx)
		if err != nil {
			return err
		}
		n := 0
		err = tx.Bucket(bucketFiles).ForEach(func(k, v []byte) error {
			var rec shotd.FileRecord
			if err := json.Unmarshal(v, &rec); err != nil || rec.Remote || !validFileName(string(k)) {
				return nil // not a local file of ours: nothing to copy
			}
			ok, err := copyFileInto(tw, s.filePath(string(k)), archiveFiles+string(k))
			if ok {
				n++
			}
			return err
		})
		if err != nil {
			return err
		}
		end, _ := json.Marshal(archiveManifest{SchemaVersion: version, Files: n, CreatedAt: when})
		if err := tw.WriteHeader(&tar.Header{Name: archiveEnd, Mode: 0o600, Size: int64(len(end)), ModTime: when, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(end)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// copyFileInto adds the file at path as name; ok is false when it is gone (the sweeper).
func copyFileInto(tw *tar.Writer, path, name string) (ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat() // the open file: a removal from now on does not change it
	if err != nil {
		return false, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg}); err != nil {
		return false, err
	}
	if _, err := io.Copy(tw, io.LimitReader(f, st.Size())); err != nil {
		return false, err
	}
	return true, nil
}

// validFileName: a stored file's name, which can be joined to the files directory as it is.
func validFileName(name string) bool {
	return strings.HasPrefix(name, FileIDPrefix) && !strings.ContainsAny(name, `/\`) && name != "." && name != ".."
}

// BackupInfo describes a checked backup.
type BackupInfo struct {
	Archive       bool // a tar archive with the stored files, not the database alone
	SchemaVersion int
	Files         int // stored files in an archive
}

// ErrBadBackup: the file is not a backup that Restore can install. Returned wrapped with why.
var ErrBadBackup = errors.New("store: not a usable backup")

// CheckBackup checks the backup at path as Restore does, without installing it: the database
// opens, passes bbolt's consistency check, has shotd's buckets and a schema version this binary
// knows; an archive is whole. An archive's database is unpacked into a temporary file in tmpDir
// ("" = the system's) for the check.
func CheckBackup(path, tmpDir string) (BackupInfo, error) {
	var info BackupInfo
	err := readBackup(path, tmpDir, func(dbPath string) error {
		v, err := checkDB(dbPath)
		info.SchemaVersion = v
		return err
	}, func(string, io.Reader) error { info.Files++; return nil }, &info)
	return info, err
}

// readBackup reads the backup at path: onDB gets the path of its database (the file itself, or
// one unpacked into tmpDir and removed afterwards), then onFile each stored file of an archive.
func readBackup(path, tmpDir string, onDB func(dbPath string) error, onFile func(name string, r io.Reader) error, info *BackupInfo) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != archiveDB {
		// Not an archive of ours: the database alone.
		if err := onDB(path); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadBackup, path, err)
		}
		return nil
	}
	info.Archive = true
	tmp, err := os.CreateTemp(tmpDir, ".shotd-restore-*.db")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, tr); err != nil {
		tmp.Close()
		return fmt.Errorf("%w: %s: the database in it: %w", ErrBadBackup, path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := onDB(tmp.Name()); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadBackup, path, err)
	}
	files := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("%w: %s ends before its last entry (%s): the archive was cut short", ErrBadBackup, path, archiveEnd)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadBackup, path, err)
		}
		if hdr.Name == archiveEnd {
			var m archiveManifest
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
				return fmt.Errorf("%w: %s: %s: %w", ErrBadBackup, path, archiveEnd, err)
			}
			if m.Files != files {
				return fmt.Errorf("%w: %s has %d stored files, its manifest says %d", ErrBadBackup, path, files, m.Files)
			}
			return nil
		}
		name, ok := strings.CutPrefix(hdr.Name, archiveFiles)
		if !ok || !validFileName(name) || hdr.Typeflag != tar.TypeReg {
			return fmt.Errorf("%w: %s: unexpected entry %q", ErrBadBackup, path, hdr.Name)
		}
		if err := onFile(name, tr); err != nil {
			return err
		}
		files++
	}
}

// checkDB opens the database at dbPath read-only and checks it: every page (bbolt's check),
// shotd's buckets, and a schema version this binary can run. It returns the version.
func checkDB(dbPath string) (int, error) {
	db, err := bbolt.Open(dbPath, 0o600, &bbolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return 0, fmt.Errorf("not a bbolt database: %w", err)
	}
	defer db.Close()
	var version int
	err = db.View(func(tx *bbolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained: the checker stops only at its end
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return fmt.Errorf("damaged: %w", first)
		}
		for _, b := range requiredBuckets {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("no bucket %q: not a shotd database", b)
			}
		}
		v, err := schemaVersion(tx)
		if err != nil {
			return err
		}
		if v > SchemaVersion {
			return &NewerSchemaError{Path: dbPath, Version: v}
		}
		version = v
		return nil
	})
	return version, err
}

// RestoreResult says what Restore did.
type RestoreResult struct {
	BackupInfo
	UID, GID    int    // owner given to what was installed: the data directory's
	PreviousDB  string // where the database it replaced is kept; "" when there was none
	PreviousDir string // where the files directory it replaced is kept (archives only)
}

// Restore installs the backup at path as dataDir's database (and, from an archive, its files
// directory). It refuses while another process (the service) holds the database, checks the
// backup as CheckBackup does, writes it beside the database and renames it into place, so that
// the database is either the old one or the whole backup; the old one is kept as
// shotd.db.pre-restore-TIME. What it installs gets the owner of dataDir, which it creates (0700)
// when missing, so a restore run as root suits the service's user.
func Restore(dataDir, path string) (RestoreResult, error) {
	var res RestoreResult
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return res, fmt.Errorf("store: restore: %w", err)
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		return res, fmt.Errorf("store: restore: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		res.UID, res.GID = int(sys.Uid), int(sys.Gid)
	} else {
		res.UID, res.GID = os.Getuid(), os.Getgid()
	}
	dbPath := filepath.Join(dataDir, FileName)

	// bbolt's lock on the current database, held until the new one is in place: a running
	// service holds it (refuse), and one that starts before the rename waits for it and fails.
	if _, err := os.Stat(dbPath); err == nil {
		held, err := bbolt.Open(dbPath, 0o600, &bbolt.Options{Timeout: openTimeout})
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return res, fmt.Errorf("%w: %s: stop the service first (systemctl stop shotd)", ErrLocked, dbPath)
		case err == nil:
			defer held.Close()
		}
		// Any other error: a database that does not open is nobody's to hold; it is replaced.
	}

	stamp := time.Now().UTC().Format("20060102T150405Z")
	newDB := filepath.Join(dataDir, "."+FileName+".restore-"+stamp)
	newFiles := filepath.Join(dataDir, "."+FilesDir+".restore-"+stamp)
	defer os.Remove(newDB) // gone after the rename
	defer os.RemoveAll(newFiles)
	err = readBackup(path, dataDir, func(src string) error {
		v, err := checkDB(src)
		if err != nil {
			return err
		}
		res.SchemaVersion = v
		return copyOwned(newDB, src, res.UID, res.GID)
	}, func(name string, r io.Reader) error {
		if res.Files == 0 {
			if err := mkdirOwned(newFiles, res.UID, res.GID); err != nil {
				return err
			}
		}
		res.Files++
		return writeOwned(filepath.Join(newFiles, name), r, res.UID, res.GID)
	}, &res.BackupInfo)
	if err != nil {
		return res, err
	}
	if res.Archive && res.Files == 0 {
		if err := mkdirOwned(newFiles, res.UID, res.GID); err != nil {
			return res, err
		}
	}

	if res.PreviousDB, err = install(newDB, dbPath, stamp, "database"); err != nil {
		return res, err
	}
	if res.Archive {
		if res.PreviousDir, err = install(newFiles, filepath.Join(dataDir, FilesDir), stamp, "files"); err != nil {
			return res, err
		}
	}
	return res, syncDir(dataDir)
}

// install renames next to cur, having first moved an existing cur aside to
// cur.pre-restore-<stamp>, which it returns ("" when there was none); what names cur in errors.
func install(next, cur, stamp, what string) (prev string, err error) {
	if _, err := os.Stat(cur); err == nil {
		prev = cur + ".pre-restore-" + stamp
		if err := os.Rename(cur, prev); err != nil {
			return prev, fmt.Errorf("store: restore: keep the current %s: %w", what, err)
		}
	}
	if err := os.Rename(next, cur); err != nil {
		return prev, fmt.Errorf("store: restore: %w", err)
	}
	return prev, nil
}

// mkdirOwned makes dir (0700) and gives it uid:gid.
func mkdirOwned(dir string, uid, gid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// copyOwned copies src to dst (created 0600, synced) and gives it uid:gid.
func copyOwned(dst, src string, uid, gid int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeOwned(dst, in, uid, gid)
}

// writeOwned writes r to a new file at path (0600, synced) owned by uid:gid.
func writeOwned(path string, r io.Reader, uid, gid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
