package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

// backupTimeout bounds one backup download; a database is copied at disk speed.
const backupTimeout = 30 * time.Minute

// backup saves GET /admin/v1/backup to path: into a temp file beside it, synced, checked as a
// bbolt database, then renamed, so that path is either a whole, valid backup or untouched.
func (c *adminClient) backup(ctx context.Context, path string) error {
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/admin/v1/backup", nil)
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
	if err := checkDatabase(tmp.Name()); err != nil {
		return fmt.Errorf("backup: the copy is not a sound database: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "backup: %d bytes in %s\n", n, path)
	return nil
}

// checkDatabase opens path read-only and runs bbolt's consistency check over every page.
func checkDatabase(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var first error
		for err := range tx.Check() { // drained: the checker stops only at its end
			if first == nil {
				first = err
			}
		}
		return first
	})
}
