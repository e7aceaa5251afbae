package cdpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
)

// navTimingJS reads the main document's Navigation Timing and the time origin (ms since the
// epoch), so that the page's own marks line up with the Go side's clock.
const navTimingJS = `JSON.stringify({to: performance.timeOrigin, n: performance.getEntriesByType('navigation')[0].toJSON()})`

// timeline is one render's marks, in ms from its start: "g." the Go side's (a step's end), "w."
// and "r." the first write and read of each CDP method on the pipe (answers as "answer.<method>",
// lifecycle events by name), "c." the page's Navigation Timing.
type timeline map[string]float64

// addNav adds the page's Navigation Timing (navTimingJS's answer) to tl.
func (tl timeline) addNav(start time.Time, raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	var nt struct {
		TO float64        `json:"to"`
		N  map[string]any `json:"n"`
	}
	if err := json.Unmarshal([]byte(s), &nt); err != nil {
		return err
	}
	base := nt.TO - float64(start.UnixNano())/1e6
	for _, k := range []string{"fetchStart", "connectStart", "connectEnd", "requestStart", "responseStart",
		"responseEnd", "domInteractive", "loadEventEnd"} {
		if v, ok := nt.N[k].(float64); ok {
			tl["c."+k] = base + v
		}
	}
	return nil
}

// pipeMarks records, during one render at a time, the first time each CDP method is written to or
// read from the pipe (testHookWrite, testHookRead).
type pipeMarks struct {
	mu    sync.Mutex
	marks timeline // nil between renders
	start time.Time
	sent  map[string]string // "session/id" -> method of the command
}

func (r *pipeMarks) begin() {
	r.mu.Lock()
	r.marks, r.start, r.sent = timeline{}, time.Now(), map[string]string{}
	r.mu.Unlock()
}

// end adds the render's pipe marks to tl and stops recording.
func (r *pipeMarks) end(tl timeline) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, v := range r.marks {
		tl[k] = v
	}
	r.marks = nil
}

func (r *pipeMarks) see(dir string, msg []byte) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marks == nil {
		return
	}
	var m struct {
		ID        uint64 `json:"id"`
		Method    string `json:"method"`
		SessionID string `json:"sessionId"`
		Params    struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if len(msg) < 4096 { // a longer one is a capture or a stream's chunk: not looked into
		_ = json.Unmarshal(msg, &m)
	}
	key := m.Method
	switch {
	case dir == "w":
		r.sent[m.SessionID+"/"+strconv.FormatUint(m.ID, 10)] = m.Method
	case m.Method == "Page.lifecycleEvent":
		key = "lifecycle." + m.Params.Name
	case m.Method == "" && m.ID != 0:
		key = "answer." + r.sent[m.SessionID+"/"+strconv.FormatUint(m.ID, 10)]
	}
	if key == "" || key == "answer." {
		return
	}
	if _, ok := r.marks[dir+"."+key]; !ok {
		r.marks[dir+"."+key] = float64(now.Sub(r.start).Microseconds()) / 1000
	}
}

// BenchmarkPDFTimeline says where a small PDF render paused 200 ms before it (the bench's
// pdf:1+200ms row) spends its time, the Render of the pool against raw loops on reused targets
// of the same guarded Chrome, each raw loop with part of the wipe between its renders: nothing;
// the route's block (new connections); the leave and the block; those with the guard's Fetch
// patterns on; the whole wipe (which turns the guard's Fetch patterns on). The ways take turns
// render by render; for each, the medians of its marks (timeline) in ms from the render's start,
// and of the spans between them (the "d" rows).
//
//	chrome-slot go test ./cdpclient -run '^$' -bench PDFTimeline -benchtime 1x -v
//
// TIMELINE_N sets the renders per way (40).
func BenchmarkPDFTimeline(b *testing.B) {
	srv := benchServer(b)
	p := launchIsolatedGuarded(b, 2, IsolationWipe)
	p.cfg.TabReuse = 1 << 20 // no tab replaced within the benchmark
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	url := srv.URL + "/small"
	var rec pipeMarks
	readHook := func(m []byte) { rec.see("r", m) }
	writeHook := func(m []byte) { rec.see("w", m) }
	testHookRead.Store(&readHook)
	testHookWrite.Store(&writeHook)
	defer testHookRead.Store(nil)
	defer testHookWrite.Store(nil)

	// raw opens a target for a raw loop (navigate, load, print, read, as the bench's); between
	// runs after each render, off its clock.
	raw := func(fetch bool, between func(*Target) error) func(timeline) error {
		rt := benchTarget(ctx, b, p, fetch)
		return func(tl timeline) error {
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			rec.begin()
			mark := func(n string) { tl[n] = float64(time.Since(start).Microseconds()) / 1000 }
			nav, err := rt.Client.Page.Navigate(ctx, page.NewNavigateArgs(url))
			if err != nil {
				return err
			}
			if err := rt.AwaitLoad(ctx, *nav.LoaderID); err != nil {
				return err
			}
			mark("g.wait")
			pdf, err := rt.Client.Page.PrintToPDF(ctx, page.NewPrintToPDFArgs().SetPaperWidth(8.27).SetPaperHeight(11.69).
				SetTransferMode("ReturnAsStream"))
			if err != nil {
				return err
			}
			if _, err = ReadStream(ctx, rt.Client, *pdf.Stream, 0); err != nil {
				return err
			}
			mark("g.capture")
			rec.end(tl)
			res, err := rt.Client.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(navTimingJS).SetReturnByValue(true))
			if err != nil {
				return err
			}
			if err := tl.addNav(start, res.Result.Value); err != nil {
				return err
			}
			rt.t.origins.add(url, true)
			if between != nil {
				return between(rt)
			}
			return nil
		}
	}
	block := func(rt *Target) error { rt.t.route.Block(); rt.t.route.Unblock(); return nil }
	leaveBlock := func(rt *Target) error {
		rt.t.route.Block()
		defer rt.t.route.Unblock()
		if err := rt.t.leave(ctx); err != nil {
			return err
		}
		return drainLifecycle(rt.t)
	}
	wipe := func(rt *Target) error { return p.wipe(rt.t) }

	o := opts(url)
	o.Format = "pdf"
	o.ViewportWidth, o.ViewportHeight = defaultWidth, defaultHeight // the tab's own: no override
	var cur timeline
	var curStart time.Time
	testHookAfterStep = func(step string, t *tab) {
		if cur == nil {
			return
		}
		cur["g."+step] = float64(time.Since(curStart).Microseconds()) / 1000
		if step == "capture" {
			rec.end(cur)
			if res, err := t.c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(navTimingJS).SetReturnByValue(true)); err == nil {
				_ = cur.addNav(curStart, res.Result.Value)
			}
		}
	}
	defer func() { testHookAfterStep = nil }()
	render := func(tl timeline) error {
		for len(p.ready) < cap(p.ready) { // the last wipe done
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cur, curStart = tl, time.Now()
		rec.begin()
		_, err := p.Render(ctx, o)
		cur = nil
		return err
	}

	n := 40
	if s := os.Getenv("TIMELINE_N"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	ways := []struct {
		name string
		f    func(timeline) error
	}{
		{"raw", raw(false, nil)}, {"+block", raw(false, block)}, {"+leave+block", raw(false, leaveBlock)},
		{"+fetch", raw(true, leaveBlock)}, {"+wipe", raw(false, wipe)}, {"Render", render},
	}
	all := make([][]timeline, len(ways))
	for b.Loop() {
		for i := range n + 3 { // the first three of each way warm up
			for j, w := range ways {
				tl := timeline{}
				if err := w.f(tl); err != nil {
					b.Fatalf("%s: %v", w.name, err)
				}
				if i >= 3 {
					all[j] = append(all[j], tl)
				}
			}
		}
	}
	spans := [][3]string{
		{"d navigate: sent to answer", "w.Page.navigate", "r.answer.Page.navigate"},
		{"d document: fetchStart to responseEnd", "c.fetchStart", "c.responseEnd"},
		{"d answer to init", "r.answer.Page.navigate", "r.lifecycle.init"},
		{"d init to load", "r.lifecycle.init", "r.lifecycle.load"},
		{"d print", "w.Page.printToPDF", "r.answer.Page.printToPDF"},
		{"d stream read and close", "r.answer.Page.printToPDF", "g.capture"},
	}
	for _, tls := range all {
		for _, tl := range tls {
			for _, s := range spans {
				if x, ok := tl[s[1]]; ok {
					if y, ok := tl[s[2]]; ok {
						tl[s[0]] = y - x
					}
				}
			}
		}
	}
	med := func(j int, k string) float64 {
		var v []float64
		for _, tl := range all[j] {
			if x, ok := tl[k]; ok {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return -1
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rows := []string{"w.Page.navigate", "c.fetchStart", "c.connectStart", "c.connectEnd", "c.requestStart",
		"c.responseStart", "c.responseEnd", "r.answer.Page.navigate", "r.lifecycle.init", "c.domInteractive",
		"c.loadEventEnd", "r.lifecycle.load", "g.wait", "r.answer.Page.printToPDF", "g.capture"}
	for _, s := range spans {
		rows = append(rows, s[0])
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%-40s", "median ms from the render's start")
	for _, w := range ways {
		fmt.Fprintf(&out, " %12s", w.name)
	}
	out.WriteString("\n")
	for _, k := range rows {
		fmt.Fprintf(&out, "%-40s", k)
		for j := range ways {
			fmt.Fprintf(&out, " %12.2f", med(j, k))
		}
		out.WriteString("\n")
	}
	for j, w := range ways {
		b.ReportMetric(med(j, "g.capture"), "p50-ms/"+strings.TrimPrefix(w.name, "+"))
	}
	b.Logf("%d renders per way\n%s", n, out.String())
}
