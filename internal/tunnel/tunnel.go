package tunnel

import (
	"io"
	"net"
)

// Join copies each way between client and upstream until either side ends, then closes both
// and returns once both copies have stopped. toUpstream is where the client's bytes go:
// upstream itself, or a writer in front of it that watches what passes.
func Join(client, upstream net.Conn, toUpstream io.Writer) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(toUpstream, client)
		// One side ended: end the other so that neither copy outlives the tunnel.
		_ = upstream.Close()
		_ = client.Close()
	}()
	_, _ = io.Copy(client, upstream)
	_ = client.Close()
	_ = upstream.Close()
	<-done
}
