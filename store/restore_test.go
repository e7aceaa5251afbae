package store

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/bbolt"
)

// TestSchemaVersionRecorded: Open records the version, and a database from before versions were
// recorded opens and gets it.
func TestSchemaVersionRecorded(t *testing.T) {
	s, dir := openStore(t)
	if v, err := s.SchemaVersion(); err != nil || v != SchemaVersion {
		t.Fatalf("SchemaVersion() = %d, %v; want %d", v, err, SchemaVersion)
	}
	raw, ok, err := s.Meta(metaSchemaVersion)
	if err != nil || !ok || raw != strconv.Itoa(SchemaVersion) {
		t.Fatalf("meta %s = %q, %v, %v", metaSchemaVersion, raw, ok, err)
	}
	_ = dir
	old := t.TempDir()
	db, err := bbolt.Open(filepath.Join(old, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucketMeta); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2, err := Open(old, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	if v, err := s2.SchemaVersion(); err != nil || v != SchemaVersion {
		t.Fatalf("an unversioned database: SchemaVersion() = %d, %v; want %d", v, err, SchemaVersion)
	}
}

// writeNewerDB makes dir's database as a future shotd would: its schema version above this one.
func writeNewerDB(t *testing.T, dir string) string {
	t.Helper()
	s, err := Open(dir, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAccount("future@example.test", "default", true); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMeta(metaSchemaVersion, strconv.Itoa(SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName)
}

// TestOpenRefusesANewerDatabase: an old binary does not open, nor change, a newer database.
func TestOpenRefusesANewerDatabase(t *testing.T) {
	dir := t.TempDir()
	path := writeNewerDB(t, dir)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, zerolog.Nop())
	if err == nil {
		s.Close(context.Background())
		t.Fatal("Open accepted a database of a newer schema")
	}
	var newer *NewerSchemaError
	if !errors.Is(err, ErrNewerSchema) || !errors.As(err, &newer) || newer.Version != SchemaVersion+1 {
		t.Fatalf("error %v, want a NewerSchemaError of version %d", err, SchemaVersion+1)
	}
	for _, want := range []string{path, "schema version " + strconv.Itoa(SchemaVersion+1), "newer shotd", "shotd admin restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the refused database was changed")
	}
}

// filledStore is a store with an account and two stored files, and what a restore must bring
// back.
func filledStore(t *testing.T) (s *Store, dir, accountID string, files map[string]string) {
	t.Helper()
	s, dir = openStore(t)
	acc, err := s.CreateAccount("restore@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	files = map[string]string{}
	for _, data := range []string{"first file", "second file"} {
		files[putFile(t, s, acc.ID, data, time.Hour).FileID] = data
	}
	return s, dir, acc.ID, files
}

// TestRestore restores a database backup and an archive backup into new data directories and
// opens them; the stored files come back from the archive.
func TestRestore(t *testing.T) {
	s, _, accountID, files := filledStore(t)
	dbBackup := filepath.Join(t.TempDir(), "backup.db")
	archive := filepath.Join(t.TempDir(), "backup.tar")
	for path, write := range map[string]func(io.Writer) error{
		dbBackup: func(w io.Writer) error { return s.Backup(w, func(int64) error { return nil }) },
		archive:  s.BackupArchive,
	} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name    string
		backup  string
		archive bool
	}{{"database", dbBackup, false}, {"archive", archive, true}} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := CheckBackup(tc.backup, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if info.Archive != tc.archive || info.SchemaVersion != SchemaVersion || (tc.archive && info.Files != len(files)) {
				t.Fatalf("CheckBackup = %+v", info)
			}
			dir := filepath.Join(t.TempDir(), "new-data")
			res, err := Restore(dir, tc.backup)
			if err != nil {
				t.Fatal(err)
			}
			if res.PreviousDB != "" || res.UID != os.Getuid() {
				t.Fatalf("Restore = %+v", res)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("a temporary %s is left in the data dir", e.Name())
				}
			}
			st, err := os.Stat(filepath.Join(dir, FileName))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("restored database: %v, %v", st, err)
			}
			r, err := Open(dir, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(context.Background())
			if _, err := r.Account(accountID); err != nil {
				t.Fatalf("the restored store lacks the account: %v", err)
			}
			for id, data := range files {
				rec, err := r.File(accountID, id)
				if err != nil {
					t.Fatal(err)
				}
				f, err := r.OpenFile(rec)
				if !tc.archive {
					if err == nil {
						f.Close()
						t.Fatalf("a database-only backup brought file %s", id)
					}
					continue
				}
				if err != nil {
					t.Fatalf("file %s not restored: %v", id, err)
				}
				got, _ := io.ReadAll(f)
				f.Close()
				if string(got) != data {
					t.Fatalf("file %s = %q, want %q", id, got, data)
				}
			}
		})
	}

	t.Run("over a stopped store", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		other, err := Open(dir, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.CreateAccount("replaced@example.test", "default", true); err != nil {
			t.Fatal(err)
		}
		if err := other.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := Restore(dir, archive)
		if err != nil {
			t.Fatal(err)
		}
		if res.PreviousDB == "" || res.PreviousDir == "" {
			t.Fatalf("the replaced database and files are not kept: %+v", res)
		}
		if _, err := os.Stat(res.PreviousDB); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		if _, err := r.Account(accountID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("owner of the data dir", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("giving files to another user needs root")
		}
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		const uid, gid = 54321, 54322 // the service's user, as systemd allocates one
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		res, err := Restore(dir, archive)
		if err != nil {
			t.Fatal(err)
		}
		if res.UID != uid || res.GID != gid {
			t.Fatalf("Restore = %+v, want owner %d:%d", res, uid, gid)
		}
		for _, p := range append([]string{FileName, FilesDir}, func() (ids []string) {
			for id := range files {
				ids = append(ids, filepath.Join(FilesDir, id))
			}
			return ids
		}()...) {
			st, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != uid || int(sys.Gid) != gid {
				t.Errorf("%s is owned by %d:%d, want %d:%d", p, sys.Uid, sys.Gid, uid, gid)
			}
		}
	})

	t.Run("refused while the service holds the database", func(t *testing.T) {
		held, dir := openStore(t)
		if _, err := held.CreateAccount("held@example.test", "default", true); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, FileName))
		_, err := Restore(dir, dbBackup)
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "stop the service") {
			t.Fatalf("error %v, want ErrLocked that says to stop the service", err)
		}
		after, _ := os.ReadFile(filepath.Join(dir, FileName))
		if !bytes.Equal(before, after) {
			t.Fatal("a refused restore changed the database")
		}
	})
}

// TestRestoreRefusesBadBackups: a newer database, a damaged file, a database that is not
// shotd's and a cut archive are refused, and the data dir keeps its database.
func TestRestoreRefusesBadBackups(t *testing.T) {
	s, _, _, _ := filledStore(t)
	var buf bytes.Buffer
	if err := s.BackupArchive(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newer := writeNewerDB(t, t.TempDir())
	foreign := filepath.Join(dir, "foreign.db")
	db, err := bbolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// An archive cut after its database and first stored file: the manifest is missing.
	var cut bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(buf.Bytes())), tar.NewWriter(&cut)
	for range 2 {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	tw.Flush() // no Close: a transfer cut at an entry boundary

	for _, tc := range []struct {
		name, path, want string
	}{
		{"newer schema", newer, "newer shotd"},
		{"not a database", write("text.db", []byte(strings.Repeat("not bbolt ", 1000))), "not a bbolt database"},
		{"not shotd's", foreign, "not a shotd database"},
		{"cut archive", write("cut.tar", cut.Bytes()), "cut short"},
		{"truncated archive", write("trunc.tar", buf.Bytes()[:buf.Len()/2]), "not a usable backup"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CheckBackup(tc.path, t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckBackup: %v, want an error with %q", err, tc.want)
			}
			data := filepath.Join(t.TempDir(), "data")
			kept, err := Open(data, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			if err := kept.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(data, FileName))
			if _, err := Restore(data, tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore: %v, want an error with %q", err, tc.want)
			}
			after, _ := os.ReadFile(filepath.Join(data, FileName))
			if !bytes.Equal(before, after) {
				t.Fatal("a refused restore changed the database")
			}
			entries, _ := os.ReadDir(data)
			for _, e := range entries {
				if e.Name() != FileName && e.Name() != FilesDir {
					t.Errorf("a refused restore left %s", e.Name())
				}
			}
		})
	}
}
