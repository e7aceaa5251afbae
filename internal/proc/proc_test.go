package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Stat
		ok   bool
	}{
		{
			name: "plain",
			line: "42 (chrome) S 7 42 42 0 -1 4194560 100 0 0 0 150 50 30 20 20 0 9 0 123456 1000 10 18446744073709551615",
			want: Stat{PID: 42, State: 'S', PPID: 7, PGID: 42, Start: 123456, CPU: 2500 * time.Millisecond},
			ok:   true,
		},
		{
			name: "a command with spaces and parentheses",
			line: "43 (a) b (c)) Z 1 40 40 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 99 0 0",
			want: Stat{PID: 43, State: 'Z', PPID: 1, PGID: 40, Start: 99, CPU: 100 * time.Millisecond},
			ok:   true,
		},
		{name: "cut short", line: "44 (x) S 1 44", ok: false},
		{name: "no command", line: "45 S 1 45", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parse(tt.want.PID, []byte(tt.line))
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("parse = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestReadChild: a child of ours, in its own group, is read with the right parent, group and a
// start time at or after ours, and is gone once reaped.
func TestReadChild(t *testing.T) {
	self, ok := Read(os.Getpid())
	if !ok || self.State == 0 || self.Start == 0 {
		t.Fatalf("Read(self) = %+v, %v", self, ok)
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	s, ok := Read(pid)
	if !ok || s.PPID != os.Getpid() || s.PGID != pid || s.Start < self.Start {
		t.Fatalf("Read(child) = %+v, %v; want parent %d, group %d, start >= %d", s, ok, os.Getpid(), pid, self.Start)
	}
	if g := Members(pid); len(g) != 1 || g[0].PID != pid {
		t.Errorf("Members(%d) = %+v, want the child alone", pid, g)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if s, ok := Read(pid); ok {
		t.Errorf("Read after reaping = %+v, want gone", s)
	}
	if BootID() == "" {
		t.Error("no boot id")
	}
}

func TestTicks(t *testing.T) {
	for d, want := range map[time.Duration]uint64{0: 0, -time.Second: 0, time.Second: 100, 15 * time.Millisecond: 2, 30 * time.Second: 3000} {
		if got := Ticks(d); got != want {
			t.Errorf("Ticks(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestMemTotal(t *testing.T) {
	if m := MemTotal(); m < 64<<20 {
		t.Errorf("MemTotal = %d bytes", m)
	}
}
