// Package proc reads what Linux's /proc says of a process: its state, parent, process group,
// start time and CPU time, and the boot it belongs to.
//
// cdpclient uses it to recognise, at start, the process groups of Chrome that a killed run left
// behind (a start time and a boot id tell a group of ours from a later one that reuses its id);
// the tests and the bench use it to find and measure Chrome's processes.
package proc
