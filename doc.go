// Package shotd holds the domain of the screenshot service: render options with their defaults and
// bounds, device presets, accounts, keys and plans, jobs and batches with their states, stored
// files and render results, usage counts and billing periods, the error catalogue, and the reading
// of a URL host as browsers read it (ParseHost), which the option parser and the egress guard
// share. It does no I/O; every other package depends on it and it depends on none of them.
package shotd
