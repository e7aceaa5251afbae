package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// InterfaceAddrs returns a function that lists the addresses of this machine's interfaces, read
// again when the last reading is older than refresh (an address a DHCP lease or a cloud agent
// adds is refused within that time). A failed reading keeps the previous list. The function is
// safe for concurrent use; Policy.WithHostAddrs takes it.
func InterfaceAddrs(refresh time.Duration) func() []netip.Addr {
	var (
		mu    sync.Mutex
		addrs []netip.Addr
		read  time.Time
	)
	return func() []netip.Addr {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); read.IsZero() || now.Sub(read) >= refresh {
			if got, err := interfaceAddrs(); err == nil {
				addrs = got
			}
			read = now
		}
		return addrs
	}
}

func interfaceAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ifas))
	for _, ifa := range ifas {
		if n, ok := ifa.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}
