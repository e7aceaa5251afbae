// Package shotd holds the domain of the screenshot service: render options with their defaults and
// bounds, device presets, accounts, keys and plans, and the error catalogue. It does no I/O; every
// other package depends on it and it depends on none of them.
package shotd
