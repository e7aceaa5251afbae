package cdpclient

// Chrome's environment and its TMPDIR.

import (
	"path/filepath"

	"github.com/shotd/shotd/internal/proc"
)

// chromeEnv is the environment Chrome gets: the service's allow-listed variables (proc.Env), so
// that a renderer exploit finds no credential in /proc/self/environ.
func chromeEnv(env []string) []string { return proc.Env(env) }

// maxTmpDir bounds the length of Chrome's TMPDIR. Chrome puts unix sockets there
// (<TMPDIR>/org.chromium.Chromium.XXXXXX/SingletonSocket, 45 bytes more), a socket path may
// not exceed 108 bytes, and Chrome aborts when one would.
const maxTmpDir = 60

// tmpParent is where Chrome's TMPDIR is made, and its name pattern: in Config.Dir, which a
// service can empty at start after a SIGKILL left it behind, when the path is short enough for
// sockets; else in os.TempDir().
func tmpParent(dir string) (parent, pattern string) {
	if dir == "" {
		return "", "shotd-tmp-"
	}
	abs, err := filepath.Abs(dir)
	// MkdirTemp adds "/t-" and at most 10 digits.
	if err != nil || len(abs)+len("/t-")+10 > maxTmpDir {
		return "", "shotd-tmp-"
	}
	return abs, "t-"
}
