// Command bench measures shotd against its floor: PNG renders of a small and a heavy local page
// through the real HTTP API (back to back by 1, 2 and 4 clients, and by one client pausing between
// requests), side by side in one run with a raw mafredri/cdp loop (one reused tab per client:
// navigate, wait for load, capture) on an identically configured Chrome. It prints p50, p95,
// throughput, the Chrome CPU and the bench process's own CPU per render of each side, and the
// ratio of the service's p50 to the floor's. `make bench` runs it; -conc, -gap, -pool, -pages, -n
// and -browser pick what it measures, -cpuprofile writes a Go CPU profile of the run.
package main
