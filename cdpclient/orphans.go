package cdpclient

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/shotd/shotd/internal/proc"
)

// groupFile, in a Chrome's directory under Config.Dir, records the process group that Launch
// started there. Close removes it with the directory, so only a run that was killed leaves one.
const groupFile = "shotd.group"

// groupRecord says which process group a Launch started, and how to tell it from a later group
// that reuses the id: the boot, and the window of start times in which Chrome's main process
// began (from the leader's start to the launch deadline).
type groupRecord struct {
	PGID       int
	Boot       string
	Start, End uint64 // ticks after boot
}

// writeGroupRecord records the group of leader, just started, in dir. The record is written
// after the start, so a service killed in the microseconds between the two leaves no record;
// only a wrapper that does not exec Chrome makes that matter, and then only for that instant.
func writeGroupRecord(dir string, leader int, startTimeout time.Duration) error {
	st, ok := proc.Read(leader)
	if !ok {
		return fmt.Errorf("process %d is gone", leader)
	}
	rec := groupRecord{PGID: st.PGID, Boot: proc.BootID(), Start: st.Start, End: st.Start + proc.Ticks(startTimeout+time.Second)}
	tmp := filepath.Join(dir, groupFile+".tmp")
	line := fmt.Sprintf("%d %s %d %d\n", rec.PGID, rec.Boot, rec.Start, rec.End)
	if err := os.WriteFile(tmp, []byte(line), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, groupFile))
}

func readGroupRecord(path string) (groupRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return groupRecord{}, err
	}
	var r groupRecord
	if _, err := fmt.Sscanf(string(b), "%d %s %d %d\n", &r.PGID, &r.Boot, &r.Start, &r.End); err != nil {
		return groupRecord{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ours reports whether the live process group rec.PGID is the one rec describes: same boot,
// and a member that started within the launch window. A group id is not reused while a member
// lives; once all of ours are gone, a later group with the same id has only members started
// after them.
func (rec groupRecord) ours(boot string, procs []proc.Stat) bool {
	if rec.PGID <= 1 || rec.Boot == "" || rec.Boot != boot || rec.PGID == syscall.Getpgrp() {
		return false
	}
	for _, s := range procs {
		if s.PGID == rec.PGID && s.Start >= rec.Start && s.Start <= rec.End && s.State != 'Z' {
			return true
		}
	}
	return false
}

// KillOrphans kills the Chrome process groups that a previous run of the service left running
// under dir (the Config.Dir of that run), found by the records Launch wrote there; it kills no
// process that is not in such a group, whatever its command line. It returns how many groups
// it signalled.
//
// Chrome dies with the service that started it (Pdeathsig), and Close kills its group. Neither
// helps when browser.path is a wrapper script that runs Chrome as its child instead of exec'ing
// it (Debian's /usr/bin/chromium-headless-shell does): a killed service then takes only the
// script with it. The service calls KillOrphans at start, before its first Launch, so a
// restart never runs beside what the killed run left.
func KillOrphans(dir string) int {
	defer func() {
		// The directories of a User's Chromes are outside dir, which the caller removes.
		users, _ := filepath.Glob(filepath.Join(dir, "*", userDirFile))
		for _, path := range users {
			removeUserDir(filepath.Dir(path))
		}
	}()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", groupFile))
	if len(paths) == 0 {
		return 0
	}
	boot, procs := proc.BootID(), proc.All()
	n := 0
	for _, path := range paths {
		rec, err := readGroupRecord(path)
		if err != nil || !rec.ours(boot, procs) {
			continue
		}
		if syscall.Kill(-rec.PGID, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

var warnedWrappers sync.Map // browser paths wrapperWithoutExec has looked at

// wrapperWithoutExec reports whether path is a shell script that never execs: it then runs
// Chrome as its child, out of reach of Pdeathsig, which kills only the script when the service
// dies. Debian's /usr/bin/chromium execs; /usr/bin/chromium-headless-shell does not (use
// /usr/lib/chromium/chromium-headless-shell).
func wrapperWithoutExec(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return false
	}
	for _, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if bytes.HasPrefix(line, []byte("exec ")) || bytes.Contains(line, []byte(" exec ")) {
			return false
		}
	}
	return true
}
