// Package httpd is the HTTP face of shotd: the public API of api-v1.md on fasthttp, the admin API
// of the operator contract, and the error documentation page. It parses and validates options once
// into shotd.Options, authenticates, verifies signatures, asks the actors, and writes answers and
// headers. It is the only package that maps an error code to an HTTP status.
package httpd
