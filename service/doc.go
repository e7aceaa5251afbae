// Package service wires shotd: Open starts everything that serving takes from a configuration
// (the store and its first-start bootstrap, the sweep of what a killed run left, metrics, the
// egress guard and its proxy, storage, block lists, the browser pool, the account, job and
// webhook actors, the public and admin HTTP servers) and Close stops it in order, each stage on
// a deadline of its own. `shotd serve`, the HTTP tests and the bench open the same Service, so
// that what they run and measure is what production runs.
package service
