// Package urlhost reads the host of a URL as browsers do (the WHATWG URL host parser): Parse
// tells an IP literal in any spelling from a name and from a host no browser would load, and
// CheckHTTPURL says what is wrong with an http(s) address. The option parser and the egress
// guard both use it, so that they never disagree on a host or on where a bad scheme ends and a
// bad address begins.
package urlhost
