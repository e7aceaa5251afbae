// Package sdnotify sends service state to systemd over $NOTIFY_SOCKET (the sd_notify protocol:
// one datagram of newline-separated KEY=value assignments), so that a Type=notify unit is started
// only when shotd can render. Without the variable every call does nothing.
package sdnotify
