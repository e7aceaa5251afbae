// Package packaging holds what installs shotd on a host, and tests it: the systemd unit
// (shotd.service.in, which `make install` and the Debian package fill in) and the Debian
// package's maintainer scripts (deb/), which scripts/build-deb.sh puts into the .deb that
// `make deb` builds. It has no Go code of its own; deb_test.go builds the package and installs it
// into a scratch root.
package packaging
