// Package pressure gathers how loaded this node is: renders running in the browser pool, jobs
// queued, render slots, free tabs, Chrome's memory and OOM kills, and whether the node takes
// more work. The public listener's /pressure and the admin API serve it, /metrics reads the
// memory of each Chrome through it, and a cluster of nodes can read it to place work.
//
// Chrome's memory is that of its process tree: the memory cgroup of the Chrome when it has one
// (internal/cgroup, which also tells its OOM kills), else the resident memory of the Chrome
// process and every process under it, from /proc. A reading is served again for MemoryTTL
// (2 s), so that load balancers probing /pressure share one scan of /proc.
package pressure
