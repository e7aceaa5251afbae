package cluster

import "time"

// every runs f each period until stop is closed: the renewals, reports and progress
// signals the cluster keeps up while it runs.
func every(stop <-chan struct{}, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}
