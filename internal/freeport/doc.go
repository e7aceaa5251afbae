// Package freeport hands tests loopback addresses to listen on later, for servers that must
// know each other's addresses before they start (a cluster's routes, a child process's
// listeners). Ports come from below the kernel's ephemeral range, so an outgoing connection of
// any process cannot take one between the choice and the listen, and each is locked machine-wide
// for the life of the process that chose it, so two test processes never get the same one.
package freeport
