// Package storetest opens a store for a test, as store's own tests do with their openStore: the
// tests of the packages above store (actors, httpd, service, webhook, cmd/shotd) open theirs
// with Open instead of writing out store.Open, its error check and its Close. store's tests
// cannot import it (it imports store).
package storetest
