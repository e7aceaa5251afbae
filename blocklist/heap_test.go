package blocklist

import (
	"runtime"
	"testing"
)

// TestLibraryHeap: EasyList and EasyPrivacy, parsed, hold 16 MB of live heap (33 MB before their
// rules were stored compactly); the bound is a guard against going back, far above the figure.
func TestLibraryHeap(t *testing.T) {
	haveDebianLists(t)
	before := liveHeap()
	ads, err := LoadFiles(easyList)
	if err != nil {
		t.Fatal(err)
	}
	track, err := LoadFiles(easyPrivacy)
	if err != nil {
		t.Fatal(err)
	}
	held := float64(liveHeap()-before) / (1 << 20)
	runtime.KeepAlive(ads)
	runtime.KeepAlive(track)
	t.Logf("easylist + easyprivacy: %.1f MB of live heap", held)
	if held > 28 && !raceEnabled {
		t.Errorf("the two lists hold %.1f MB of live heap, want about 16", held)
	}
}

// liveHeap is the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
