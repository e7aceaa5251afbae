package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lowest is the first port handed out; below it live the well-known and registered services a
// developer's machine may run.
const lowest = 20000

var (
	mu    sync.Mutex
	locks []*os.File // held until the process exits
)

// Addr returns a free 127.0.0.1:port, or fails the test.
func Addr(t testing.TB) string {
	t.Helper()
	addr, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Get returns a free 127.0.0.1:port that no other caller on the machine gets while this process
// lives.
func Get() (string, error) {
	hi := ephemeralLow()
	if hi <= lowest+100 {
		return anyPort()
	}
	dir := filepath.Join(os.TempDir(), "shotd-freeport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := lowest + rand.IntN(hi-lowest)
		if !lock(dir, port) {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use by a server; keep the lock so nobody else tries it either
		}
		_ = l.Close()
		return addr, nil
	}
	return "", errors.New("freeport: no free port found below the ephemeral range")
}

// lock takes the machine-wide lock of port and keeps it; false if another process holds it.
func lock(dir string, port int) bool {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	locks = append(locks, f)
	return true
}

// ephemeralLow is the first port the kernel hands to outgoing connections (0 if unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// anyPort falls back to a port the kernel picks, where the ephemeral range leaves no room below.
func anyPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("freeport: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
