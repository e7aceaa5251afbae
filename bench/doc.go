// Command bench measures shotd against its floor, in one run on one machine: renders of local
// pages through the real HTTP API of the service, opened as serve opens it with the default
// configuration, side by side with a raw mafredri/cdp loop (raw.go; one reused tab per client:
// navigate, wait for load, capture, with none of the service's isolation or checks) on a Chrome
// launched as the service launches its own, chromium-headless-shell, and another on full
// Chromium. Rows: a small page as PNG by 1, 2 and 4 clients back to back, a heavy page as PNG, the
// small page as PDF, and the heavy page as a full-page PNG (the service scrolls it for lazy
// content first). It prints p50, p95, renders per second and Chrome CPU per render of each side,
// and the service's p50 and throughput against each raw loop. `make bench` runs it; -rows, -n,
// -pool, -isolation, -browser and -chromium pick what it measures, -cpuprofile writes a Go
// CPU profile of the run.
package main
