package cdpclient

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DefaultUser is the system user Chrome runs as when the service runs as root
// (browser.user = "auto").
const DefaultUser = "shotd-chrome"

// User is a system user Chrome runs as instead of the service's own (Config.User): a service
// run as root cannot give Chrome its sandbox (Chrome refuses it to root), and a renderer exploit
// would run as root. Chrome then gets a directory of its own outside Config.Dir, owned by the
// user, for its profile, home and temporary files; the service keeps its records in Config.Dir.
type User struct {
	Name     string
	UID, GID uint32
	base     string // where its directories are made: os.TempDir(), or /tmp when the user cannot reach that
}

// LookupUser returns the system user name; when it does not exist and create is set, it is
// made first (useradd --system, with a group of its own, no home and no login shell). Only root
// can switch to it.
func LookupUser(name string, create bool) (*User, error) {
	u, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) && create {
		out, aerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment", "shotd's Chrome", name).CombinedOutput()
		if aerr != nil {
			return nil, fmt.Errorf("create the system user %s: %v: %s", name, aerr, strings.TrimSpace(string(out)))
		}
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("user %s is root", name)
	}
	for _, base := range []string{filepath.Clean(os.TempDir()), "/tmp"} {
		if reachable(base) {
			return &User{Name: name, UID: uint32(uid), GID: uint32(gid), base: base}, nil
		}
	}
	return nil, fmt.Errorf("user %s could not reach its directories: neither %s nor /tmp is open to other users", name, os.TempDir())
}

// reachable reports whether every other user may pass through dir and each of its parents
// (mode o+x): a TMPDIR private to the service (0700) would keep Chrome out of its own directory.
func reachable(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// credential is what the child process switches to: the user's uid and gid and no
// supplementary group (root's would otherwise be kept).
func (u *User) credential() *syscall.Credential {
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
}

// userDirPrefix names the directories of User in os.TempDir().
const userDirPrefix = "shotd-chrome-user-"

// userDirFile, in a Chrome's directory in Config.Dir, names its User's directory, so that
// KillOrphans removes what a killed service left there.
const userDirFile = "user-dir"

// makeDir makes the user's directory for one Chrome in its base (short: Chrome's socket paths
// under TMPDIR must stay under 108 bytes), with tmp in it, owned by the user, mode 0700, and
// names it in record (the Chrome's directory in Config.Dir).
func (u *User) makeDir(record string) (string, error) {
	dir, err := os.MkdirTemp(u.base, userDirPrefix)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, "tmp")
	err = errors.Join(os.Mkdir(tmp, 0o700), os.Chown(tmp, int(u.UID), int(u.GID)), os.Chown(dir, int(u.UID), int(u.GID)),
		os.WriteFile(filepath.Join(record, userDirFile), []byte(dir), 0o600))
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// removeUserDir removes the User directory that record names, if it is one.
func removeUserDir(record string) {
	b, err := os.ReadFile(filepath.Join(record, userDirFile))
	if err != nil {
		return
	}
	dir := string(b)
	parent := filepath.Dir(dir)
	if (parent == filepath.Clean(os.TempDir()) || parent == "/tmp") && strings.HasPrefix(filepath.Base(dir), userDirPrefix) {
		os.RemoveAll(dir)
	}
}
