// Package cgroup bounds the memory of a process tree with a Linux memory cgroup: a child of the
// service's own cgroup per bounded tree, made by the service itself, which the kernel's OOM killer
// holds to its limit. cdpclient makes one per Chrome, so that a page cannot take more of the
// machine than its Chrome's share, however many renderers and helpers it makes Chrome start.
//
// Open finds the service's cgroup from /proc/self/cgroup and /proc/self/mountinfo: the memory
// controller's hierarchy under cgroup v1, the unified hierarchy under v2. Under v2 the memory
// controller must be delegated to the service (systemd: Delegate=yes), and the "no internal
// processes" rule holds: before the memory controller is enabled for the children, the
// processes of the service's cgroup move into a leaf child of their own (LeafName).
//
// A process enters its child from its first instruction, so every process it starts is in it
// too: under v2 the kernel clones it into the cgroup (SysProcAttr.CgroupFD); v1 has no such
// thing, so it starts as a shell that writes its own pid into the child's cgroup.procs and
// then execs the command (same pid, same open files).
//
// Children are named shotd-chrome-<service pid>-<n>; Sweep removes those of services that are
// gone, killing what is left in them.
package cgroup
