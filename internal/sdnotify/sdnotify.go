package sdnotify

import (
	"fmt"
	"net"
	"strings"
)

// States of the protocol that shotd sends.
const (
	Ready     = "READY=1"
	Reloading = "RELOADING=1"
	Stopping  = "STOPPING=1"
)

// Notifier sends to one socket. The zero value (no socket) does nothing.
type Notifier struct{ socket string }

// FromEnv returns the notifier of NOTIFY_SOCKET in env (a list of "NAME=value").
func FromEnv(env []string) Notifier {
	var n Notifier
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NOTIFY_SOCKET="); ok {
			n.socket = v
		}
	}
	return n
}

// Enabled reports whether a supervisor listens.
func (n Notifier) Enabled() bool { return n.socket != "" }

// Notify sends the assignments as one datagram. A socket path starting with '@' is in the
// abstract namespace, which the net package maps for us.
func (n Notifier) Notify(state ...string) error {
	if n.socket == "" {
		return nil
	}
	if !strings.HasPrefix(n.socket, "/") && !strings.HasPrefix(n.socket, "@") {
		return fmt.Errorf("sdnotify: NOTIFY_SOCKET %q is neither a path nor an abstract name", n.socket)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(state, "\n"))); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// Status is the STATUS= line that systemctl status shows.
func Status(s string) string { return "STATUS=" + strings.ReplaceAll(s, "\n", " ") }
