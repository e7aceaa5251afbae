package cdpclient

// Whether Chrome keeps its shared memory in /dev/shm.

import (
	"golang.org/x/sys/unix"
)

// devShm is where Chrome keeps its shared memory unless told --disable-dev-shm-usage; a
// variable for the tests alone.
var devShm = "/dev/shm"

// minDevShm is the free room in /dev/shm below which Chrome is told to keep its shared memory in
// its TMPDIR instead: a container's /dev/shm (64 MiB by default) fills up under a few large
// captures, and Chrome then crashes. Where there is room, tmpfs it is: on a disk filesystem
// every new buffer of the compositor is a file whose pages fault in through the filesystem and
// are written back to disk, which the capture of every frame pays for.
const minDevShm = 1 << 30

// shmRoomy reports whether dir is a tmpfs with at least minDevShm bytes free.
func shmRoomy(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC && st.Bavail*uint64(st.Bsize) >= minDevShm
}
