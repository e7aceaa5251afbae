// Command bench measures shotd against its floors, in one run on one machine: renders of local
// pages through the real HTTP API of the service, opened as serve opens it with the default
// configuration, side by side with raw mafredri/cdp loops (raw.go; one reused tab per client:
// navigate, wait for load, capture, PNGs with optimizeForSpeed as the service's, with none of the
// service's isolation, checks or options) on a Chrome launched as the service launches its own,
// chromium-headless-shell; the same loop cleaning its tab after each capture (about:blank,
// cookies, HTTP cache, the origin's storage: the clean floor); and the raw loop on full Chromium.
// Rows: a small page as PNG by 1 client pausing 200 ms and by 1, 2 and 4 clients back to back, a
// heavy page as PNG and the small page as PDF (paused and back to back), and the heavy page as a
// full-page PNG (nothing of it reacts to the scroll, so the service's lazy-load scroll leaves it
// as it is; -rows "fullstep:1" has it scrolled a viewport at a time). It prints p50, p95,
// renders per second and Chrome CPU per render of each side, and the service's p50 and
// throughput against each loop; then the figures beyond the floor (beyond.go): warm start to
// ready, cache hit p50, the service's RSS idle and after the run's renders, and async accepts per
// second with 16 clients. -rounds splits a row's renders into blocks, the sides taking turns, so
// that a slow minute of the host does not fall on one side alone. `make bench` runs it; -rows,
// -n, -rounds, -pool, -nice, -isolation, -browser, -chromium, -renders, -accepts and -hits pick what it
// measures, -cpuprofile writes a Go CPU profile of the run.
package main
