// Package testenv tells the test suites that launch Chrome which browser and which isolation to
// use, so that one `go test` run covers the default (chromium-headless-shell, wipe isolation)
// and another the alternatives (SHOTD_TEST_BROWSER=/usr/lib/chromium/chromium
// SHOTD_TEST_ISOLATION=context), as `make test` does.
package testenv
