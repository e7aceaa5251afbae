package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/shotd/shotd/store"
)

// backupTimeout bounds one backup download; a database is copied at disk speed.
const backupTimeout = 30 * time.Minute

// backup saves GET /admin/v1/backup to path: into a temp file beside it, synced, checked as a
// backup that restore would install, then renamed, so that path is either a whole, valid backup
// or untouched. files asks for the archive with the stored files.
func (c *adminClient) backup(ctx context.Context, path string, files bool) error {
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	u := c.base + "/admin/v1/backup"
	if files {
		u += "?files=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		c.print(out)
		return fmt.Errorf("admin API answered %s", resp.Status)
	}
	if path == "-" {
		_, err := io.Copy(c.out, resp.Body)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	n, err := io.Copy(tmp, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("backup cut short: %d of %d bytes", n, resp.ContentLength)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	info, err := store.CheckBackup(tmp.Name(), filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("backup: the copy is not sound: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if info.Archive {
		fmt.Fprintf(c.out, "backup: %d bytes in %s (the database and %d stored files)\n", n, path, info.Files)
	} else {
		fmt.Fprintf(c.out, "backup: %d bytes in %s\n", n, path)
	}
	return nil
}

// restore installs the backup at path in dataDir (store.Restore) and says what it did.
func restore(out io.Writer, dataDir, path string) error {
	res, err := store.Restore(dataDir, path)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	what := "the database"
	if res.Archive {
		what = fmt.Sprintf("the database and %d stored files", res.Files)
	}
	fmt.Fprintf(out, "restore: %s from %s (schema version %d) installed in %s, owned by %d:%d\n",
		what, path, res.SchemaVersion, dataDir, res.UID, res.GID)
	if res.PreviousDB != "" {
		fmt.Fprintf(out, "restore: the replaced database is kept as %s\n", res.PreviousDB)
	}
	if res.PreviousDir != "" {
		fmt.Fprintf(out, "restore: the replaced files are kept in %s\n", res.PreviousDir)
	}
	fmt.Fprintln(out, "restore: start the service (systemctl start shotd)")
	return nil
}
