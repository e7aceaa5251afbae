// Package metrics owns shotd's Prometheus registry and every series in it: the public API's
// answers, render times and errors, webhook attempts, Chrome replacements, egress refusals,
// cache lookups, and the job and browser gauges read at scrape time. Meter wraps a
// shotd.Renderer so that each render is recorded; service/ composes it into the render
// pipeline. The admin listener serves Registry on /metrics.
package metrics
