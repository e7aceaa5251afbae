package proc

import (
	"sync"
	"testing"
)

// TestGo runs f while open, counted in the wait group, and nothing once closing.
func TestGo(t *testing.T) {
	var (
		mu      sync.Mutex
		closing bool
		wg      sync.WaitGroup
	)
	release := make(chan struct{})
	ran := make(chan struct{})
	if !Go(&mu, &closing, &wg, func() { <-release; close(ran) }) {
		t.Fatal("Go refused while open")
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("the wait group did not count the goroutine")
	default:
	}
	close(release)
	<-waited
	<-ran

	mu.Lock()
	closing = true
	mu.Unlock()
	if Go(&mu, &closing, &wg, func() { t.Error("ran while closing") }) {
		t.Fatal("Go started a goroutine while closing")
	}
	wg.Wait()
}
