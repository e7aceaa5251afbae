// Package tunnel joins the two connections of a CONNECT tunnel: the egress proxy's and the
// test kit's upstream proxy's.
package tunnel
