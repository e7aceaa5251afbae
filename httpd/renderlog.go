package httpd

import (
	"strconv"
	"sync"
	"time"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// RenderEntry is one render as the dashboard lists it: a sync request's answer, an async or bulk
// acceptance, or a job's end.
type RenderEntry struct {
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"` // "sync", "accepted" (202) or "job"
	Ref         string    `json:"ref,omitempty"`
	JobID       string    `json:"job_id,omitempty"`
	AccountID   string    `json:"account_id,omitempty"`
	Route       string    `json:"route,omitempty"`
	Status      int       `json:"status,omitempty"` // HTTP status of a request
	Outcome     string    `json:"outcome"`          // "succeeded", "failed" or "accepted"
	ErrorCode   string    `json:"error_code,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	RenderMs    int64     `json:"render_ms,omitempty"`
	Cache       string    `json:"cache,omitempty"`
}

// RenderLog keeps the last renders in memory for the dashboard; the service saves it at stop
// and loads it at start (Entries, Load), so that a restart keeps them. Safe for concurrent use.
type RenderLog struct {
	mu      sync.Mutex
	entries []RenderEntry // ring
	next    int
	full    bool
}

// NewRenderLog keeps the last size entries.
func NewRenderLog(size int) *RenderLog { return &RenderLog{entries: make([]RenderEntry, max(size, 1))} }

// Add records e.
func (l *RenderLog) Add(e RenderEntry) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[l.next] = e
	l.next = (l.next + 1) % len(l.entries)
	if l.next == 0 {
		l.full = true
	}
}

// AddJob records the end of a job.
func (l *RenderLog) AddJob(j shotd.Job) {
	e := RenderEntry{At: j.UpdatedAt, Kind: "job", JobID: j.JobID, AccountID: j.AccountID, Outcome: j.Status, ErrorCode: j.ErrorCode}
	if j.Result != nil {
		e.ContentType, e.RenderMs, e.Cache = j.Result.ContentType, j.Result.RenderMs, j.Result.Cache
	}
	l.Add(e)
}

// Entries returns every entry, oldest first: what the service saves at stop.
func (l *RenderLog) Entries() []RenderEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []RenderEntry
	if l.full {
		out = append(out, l.entries[l.next:]...)
	}
	return append(out, l.entries[:l.next]...)
}

// Load adds entries (oldest first), as saved by an earlier run: the service calls it at start,
// before anything is recorded.
func (l *RenderLog) Load(entries []RenderEntry) {
	for _, e := range entries {
		l.Add(e)
	}
}

// Recent returns up to limit entries, newest first, of accountID ("" = every account).
func (l *RenderLog) Recent(limit int, accountID string) []RenderEntry {
	out := []RenderEntry{}
	if l == nil {
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.entries)
	}
	for i := 1; i <= n && len(out) < limit; i++ {
		e := l.entries[(l.next-i+len(l.entries))%len(l.entries)]
		if accountID == "" || e.AccountID == accountID {
			out = append(out, e)
		}
	}
	return out
}

// User values that the handlers leave for the render log.
const (
	accountKey   = "shotd.account"
	errorCodeKey = "shotd.error_code"
)

// recordRender adds a render route's answer to the log; other routes are not renders.
func (s *Server) recordRender(ctx *fasthttp.RequestCtx, ref, route string) {
	if s.renders == nil {
		return
	}
	switch route {
	case "/api/v1/screenshot", "/api/v1/take", "/api/v1/animate", "/api/v1/bulk":
	default:
		return
	}
	st := ctx.Response.StatusCode()
	e := RenderEntry{At: time.Now().UTC(), Kind: "sync", Ref: ref, Route: route, Status: st, Outcome: "succeeded"}
	e.AccountID, _ = ctx.UserValue(accountKey).(string)
	switch {
	case st == fasthttp.StatusAccepted:
		e.Kind, e.Outcome = "accepted", "accepted"
	case st >= 400:
		e.Outcome = "failed"
		e.ErrorCode, _ = ctx.UserValue(errorCodeKey).(string)
	default:
		e.ContentType = string(ctx.Response.Header.ContentType())
		e.RenderMs, _ = strconv.ParseInt(string(ctx.Response.Header.Peek("X-Render-Ms")), 10, 64)
		e.Cache = string(ctx.Response.Header.Peek("X-Cache"))
	}
	s.renders.Add(e)
}
