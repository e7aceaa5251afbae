package httpd

import "time"

// SetAdminTimeouts sets the admin listener's write timeout and the stall bound of a streamed
// answer (a backup) for the Admins made from now on; restore puts the defaults back.
func SetAdminTimeouts(write, stall time.Duration) (restore func()) {
	oldWrite, oldStall := adminWriteTimeout, streamStall
	adminWriteTimeout, streamStall = write, stall
	return func() { adminWriteTimeout, streamStall = oldWrite, oldStall }
}
