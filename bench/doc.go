// Command bench measures shotd against its floor: PNG renders of a small and a heavy local page
// through the real HTTP API (sequential, and 2 and 4 at once), side by side in one run with a raw
// mafredri/cdp loop (one reused tab: navigate, wait for load, capture) on an identically
// configured Chrome. It prints p50, p95, throughput and the ratio of the service to the floor.
// `make bench` runs it.
package main
