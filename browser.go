package shotd

// BrowserInfo describes one Chrome process of the render pool as its supervisor sees it.
type BrowserInfo struct {
	ID       int
	PID      int
	Gen      int // the process generation: each replacement of the browser's Chrome adds one
	Up       bool
	Inflight int
	Renders  int // renders served by the current process
	// ReadyTabs are the tabs waiting for a render in the current process, when its browser
	// reports them.
	ReadyTabs int
}
