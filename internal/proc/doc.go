// Package proc starts and reads processes.
//
// Group starts a command as the leader of a process group of its own, for Chrome (cdpclient)
// and ffmpeg (media) alike: the group dies with the service, one kill reaches every process in
// it, and once the leader exits the rest of its group is killed before the leader is reaped, so
// the group id cannot have been reused by then. Child is such a group run with a context, which
// kills it when it ends, keeping the tail of its stderr for error messages: ffmpeg and ffprobe
// (media) and Chrome's --version (cdpclient). Env is the allow list of the service's environment
// that those children get. Group.Lower runs a group below the service's CPU priority, for
// Chrome and the encoders: the service's own work comes first when the CPU is short.
//
// Go runs a goroutine that its owner's Close waits for, unless the owner is closing; WaitGroup
// waits for such goroutines until a deadline, and Wait for any one piece of work.
//
// Read, All and Members read what /proc says of a process: its state, parent, process group,
// start time and CPU time, and the boot it belongs to. cdpclient uses them to recognise, at
// start, the process groups of Chrome that a killed run left behind (a start time and a boot id
// tell a group of ours from a later one that reuses its id); the tests and the bench use them to
// find and measure Chrome's processes.
package proc
