// Package egresstest holds test servers for the egress guard's users: an HTTP forward proxy on
// loopback that records what it is asked for and requires credentials, standing in for a user's
// upstream proxy (the proxy option).
package egresstest
