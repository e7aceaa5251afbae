// Package httpd is the HTTP face of shotd: the public API of api-v1.md on fasthttp, the admin API
// of the operator contract, and the error documentation page. It parses and validates options once
// into shotd.Options, authenticates, verifies signatures, asks for admission, renders and records,
// and writes answers and headers. It is the only package that maps an error code to an HTTP status.
//
// It owns the JSON shapes of its answers (JobView, BatchView, ResultView), which webhook bodies
// share. What it asks of the rest of the service it asks through small interfaces declared here
// in terms of the root package's types (Gate, Renderer, Files, JobQueue, JobRecords, KeyLookup,
// AdminStore, ...): the actors and the store implement them, and httpd imports neither.
package httpd
