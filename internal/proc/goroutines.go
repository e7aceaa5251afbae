package proc

import "sync"

// Go runs f on a goroutine counted in wg unless *closing is set, and reports whether it did. mu
// guards closing and every wg.Add, so that once the owner's Close has set closing under mu, no
// goroutine starts that its wait for wg would miss.
func Go(mu *sync.Mutex, closing *bool, wg *sync.WaitGroup, f func()) bool {
	mu.Lock()
	defer mu.Unlock()
	if *closing {
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
	return true
}
