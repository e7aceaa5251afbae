package proc

import "strings"

// Env returns the variables of env that a child program (Chrome, ffmpeg) may see: an allow list,
// not a deny list, because the service's environment holds what no renderer should read from
// its /proc/self/environ, under names no list can foresee (the admin token, storage and cloud
// credentials, CREDENTIALS_DIRECTORY, NOTIFY_SOCKET ...). Kept: the search path, home and
// temporary directory, locale and time zone, and where fontconfig finds its configuration and
// the user's fonts (XDG_DATA_HOME/fonts: an operator's fonts directory, docs/operations.md).
func Env(env []string) []string {
	out := make([]string, 0, 8)
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && envAllowed(name) {
			out = append(out, kv)
		}
	}
	return out
}

// envAllowed lists the names Env keeps.
func envAllowed(name string) bool {
	switch name {
	case "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ",
		"FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT", "XDG_DATA_HOME":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}
