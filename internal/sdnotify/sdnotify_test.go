package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
)

func TestNotify(t *testing.T) {
	tests := []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify.sock") }},
		{"abstract", func(t *testing.T) string { return "@shotd-sdnotify-test-" + filepath.Base(t.TempDir()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.addr(t)
			ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			n := FromEnv([]string{"PATH=/bin", "NOTIFY_SOCKET=" + addr})
			if !n.Enabled() {
				t.Fatal("NOTIFY_SOCKET not read")
			}
			if err := n.Notify(Ready, Status("serving")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 256)
			k, err := ln.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(buf[:k]), "READY=1\nSTATUS=serving"; got != want {
				t.Errorf("datagram %q, want %q", got, want)
			}
		})
	}
}

func TestNotifyDisabled(t *testing.T) {
	n := FromEnv([]string{"PATH=/bin"})
	if n.Enabled() {
		t.Fatal("enabled without NOTIFY_SOCKET")
	}
	if err := n.Notify(Ready); err != nil {
		t.Fatalf("Notify without a socket: %v", err)
	}
	if err := FromEnv([]string{"NOTIFY_SOCKET=relative"}).Notify(Ready); err == nil {
		t.Fatal("a relative socket name was accepted")
	}
}
