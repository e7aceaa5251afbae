// Package httpd is the HTTP face of shotd on fasthttp: the public API under /api/v1/ (screenshot
// and its take alias, ScreenshotOne's animate endpoint and signature form, jobs, batches, bulk,
// files, usage), health, the documentation pages (the index, options, errors, and /docs/api, the
// OpenAPI document rendered as one self-contained page with the signing snippets of snippets/)
// and the OpenAPI document; and, on the admin listener, the admin API (accounts, keys, usage,
// backup), the dashboard and /metrics. It parses and validates options once into shotd.Options,
// authenticates, verifies signatures, asks for admission, checks targets with the egress guard,
// renders and records, and writes answers and headers. It is the only package that maps an error
// code to an HTTP status.
//
// It also bounds what a client can cost before any account limit applies: connections per
// address, request bodies read only after the key and within a shared budget, allowances for
// refused requests and wrong admin tokens, and the Host the admin listener answers.
//
// The JSON shapes of jobs, batches and results it writes are package view's, which webhook
// bodies share; its series are package metrics'. It renders through a shotd.Renderer, the
// pipeline service/ composes. What else it asks of the rest of the service it asks through small
// interfaces declared here in terms of the root package's types (Gate, Files, JobQueue,
// JobRecords, KeyLookup, AdminStore, ...): the actors and the store implement them, and httpd
// imports neither.
package httpd
