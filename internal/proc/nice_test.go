package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// niceOf reads a process's nice value from /proc/<pid>/stat (its 19th field).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // from the state on: field 3
	n, err := strconv.Atoi(fields[19-3])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupLower: Lower sets the leader and what it started before, and what it starts after
// inherits the value; MaxNice bounds it.
func TestGroupLower(t *testing.T) {
	after := filepath.Join(t.TempDir(), "after")
	// cut reads its own stat: a process started once Lower has run.
	g, before := startSh(t, "sleep 30 & echo $!; sleep 0.5; cut -d' ' -f19 /proc/self/stat > "+after+"; wait")
	base := Nice()
	n, err := g.Lower(3)
	if want := min(base+3, MaxNice); err != nil || n != want {
		t.Fatalf("Lower(3) = %d, %v; want %d", n, err, want)
	}
	for _, pid := range []int{g.PID(), before} {
		if got := niceOf(t, pid); got != n {
			t.Errorf("pid %d at nice %d, want %d", pid, got, n)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var b []byte
	for ; len(b) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process started after Lower did not write its nice value")
		}
		b, _ = os.ReadFile(after)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(n) {
		t.Errorf("started after Lower: nice %s, want %d", got, n)
	}
	if n, err := g.Lower(100); err != nil || n != MaxNice {
		t.Errorf("Lower(100) = %d, %v; want %d", n, err, MaxNice)
	}
	if got := niceOf(t, before); got != MaxNice {
		t.Errorf("Lower(100): nice %d, want %d", got, MaxNice)
	}
	g.Kill()
	<-g.Exited()
	if _, err := g.Lower(1); err != nil {
		t.Errorf("Lower of a reaped group: %v", err)
	}
}
