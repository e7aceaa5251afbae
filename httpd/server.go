package httpd

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/router"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/metrics"
	"github.com/shotd/shotd/pressure"
	"github.com/valyala/fasthttp"
)

// KeyLookup finds an access key and its account. It returns an error wrapping shotd.ErrNotFound
// for an unknown or revoked key.
type KeyLookup interface {
	Lookup(accessKey string) (shotd.Key, shotd.Account, error)
}

// Gate is the admission and settlement of an account's requests, and its usage report: the
// account actors implement it. A refusal is a catalogue error, returned with the limits that
// explain it.
type Gate interface {
	Admit(req shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error)
	Settle(accountID string, ticket uint64, o shotd.Outcome) (shotd.LimitsSnapshot, error)
	// ReleaseJobs gives back n admitted jobs (AdmitJobs) that were not queued.
	ReleaseJobs(accountID string, n int)
	Usage(acc shotd.Account, plan shotd.Plan) (*shotd.UsageReport, error)
}

// Files keeps rendered files and the response cache: store.Store implements it.
type Files interface {
	PutFile(accountID string, out *shotd.Output, ttl time.Duration) (shotd.FileRecord, error)
	File(accountID, fileID string) (shotd.FileRecord, error)
	OpenFile(rec shotd.FileRecord) (*os.File, error)
	CacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error)
	// PutCachedFile is PutFile that also enters the file in the response cache, in one write.
	PutCachedFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error)
	// ResultOf describes a stored file as a render result, with the link to it.
	ResultOf(rec shotd.FileRecord, cache string) shotd.JobResult
}

// Uploader carries out store=true for a render answered from the response cache: it uploads the
// kept file f (rec.SizeBytes long) where o.Storage says and returns the object's location; a
// file it cannot read is internal_error wrapping shotd.ErrFileUnreadable. objstore.Uploader
// implements it.
type Uploader interface {
	UploadStored(ctx context.Context, o *shotd.Options, rec shotd.FileRecord, f io.ReaderAt) (string, error)
}

// Settings are the parts of the configuration the public API needs.
type Settings struct {
	PublicURL      string // base of links; no trailing slash
	MaxSourceBytes int
	MaxOutputBytes int // a rendered file larger than this is 413 content_too_large; 0 = unlimited
	MaxBodyBytes   int // request body limit; larger bodies get 413 content_too_large; 0: bodyLimit
	BulkMaxItems   int
	FileTTL        time.Duration
	// RenderGrace is added to an option's timeout to bound the whole request.
	RenderGrace time.Duration
	// Refused requests allowed per minute per client address and per access key before 429
	// rate_limited (refusals.go); 0: not counted.
	RefusedPerAddressPerMinute int
	RefusedPerKeyPerMinute     int
	// MaxConnsPerAddress caps the open connections of one client address (connlimit.go); 0: none.
	MaxConnsPerAddress int
	// BrowserVersion is shown by /readyz ("" omits it).
	BrowserVersion string
}

// Deps are the parts the public API talks to.
type Deps struct {
	Keys     KeyLookup
	Plans    map[string]shotd.Plan
	Renderer shotd.Renderer // the pipeline service/ composes: metered, with store=true's upload
	// Uploader uploads a cache hit of a store=true request (the pipeline's upload, without the
	// render); nil: such a request is rendered again, which uploads.
	Uploader Uploader
	Ready    func() bool // whether at least one browser can render (/readyz); nil: never
	Gate     Gate
	Files    Files
	Jobs     JobQueue
	Records  JobRecords
	URLs     URLChecker // nil: no egress check of webhook_url at acceptance
	// SyncWebhooks, when set, sends their webhook of a sync render on ScreenshotOne's paths
	// (s1hook.go); nil: a sync request's webhook_url sends none.
	SyncWebhooks SyncWebhooks
	Metrics      *metrics.Metrics // nil: none
	Renders      *RenderLog       // nil: none; the dashboard's list of recent renders
	// ReadyChecks are what /readyz checks beside the browser pool (database, disk, ffmpeg).
	ReadyChecks []ReadyCheck
	// Pressure, when set, is served at GET /pressure (pressure.go).
	Pressure func() pressure.Pressure
	Log      zerolog.Logger
}

// ReadyCheck is one thing the service needs to serve. Check says what is wrong ("" when
// nothing): a Required one makes /readyz answer 503, another is listed but leaves it 200 (ffmpeg
// serves video formats only).
type ReadyCheck struct {
	Name     string
	Required bool
	Check    func() string
}

// Server is the public API listener.
type Server struct {
	set       Settings
	keys      KeyLookup
	plans     *PlanBook
	renderer  shotd.Renderer
	ready     func() bool
	gate      Gate
	files     Files
	jobs      JobQueue
	records   JobRecords
	urls      URLChecker
	syncHooks SyncWebhooks
	uploader  Uploader
	metrics   *metrics.Metrics
	renders   *RenderLog
	checks    []ReadyCheck
	pressure  func() pressure.Pressure
	log       zerolog.Logger
	now       func() time.Time
	srv       *fasthttp.Server

	refusedAddr, refusedKey *allowance // nil: not counted
	bodies, keyless         *budget    // body bytes in flight (body.go)
	openapiOnce             sync.Once  // serveOpenAPI
	openapi                 []byte
	apiDocsOnce             sync.Once // serveAPIDocs
	apiDocs                 []byte
}

// New builds the public API server.
func New(set Settings, d Deps) *Server {
	if set.MaxBodyBytes <= 0 {
		set.MaxBodyBytes = bodyLimit(set.MaxSourceBytes)
	}
	if set.RenderGrace <= 0 {
		set.RenderGrace = 10 * time.Second
	}
	if set.FileTTL <= 0 {
		set.FileTTL = 24 * time.Hour
	}
	s := &Server{set: set, keys: d.Keys, plans: NewPlanBook(d.Plans), renderer: d.Renderer, ready: d.Ready, gate: d.Gate, files: d.Files,
		jobs: d.Jobs, records: d.Records, urls: d.URLs, syncHooks: d.SyncWebhooks, uploader: d.Uploader, metrics: d.Metrics, renders: d.Renders, checks: d.ReadyChecks, pressure: d.Pressure, log: d.Log, now: time.Now}
	s.refusedAddr = newAllowance(set.RefusedPerAddressPerMinute, time.Now)
	s.refusedKey = newAllowance(set.RefusedPerKeyPerMinute, time.Now)
	s.bodies = &budget{max: int64(bodyBudgetBodies) * int64(set.MaxBodyBytes+bodyChunk)}
	s.keyless = &budget{max: int64(set.MaxBodyBytes + bodyChunk)}
	s.srv = &fasthttp.Server{
		Handler:            s.Handler(),
		Name:               "shotd",
		MaxRequestBodySize: set.MaxBodyBytes,
		// Bodies are read by the handlers, after the key (body.go); multipart is refused unread.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		ReadBufferSize:               maxHeadBytes,
		ReadTimeout:                  60 * time.Second,
		WriteTimeout:                 120 * time.Second,
		IdleTimeout:                  120 * time.Second,
		MaxIdleWorkerDuration:        idleWorker,
		ErrorHandler:                 s.parseError,
		Logger:                       fasthttpLogger{d.Log},
	}
	return s
}

// idleWorker is how long fasthttp keeps an idle worker goroutine, and how long after Shutdown its
// pool's cleaner, which holds the Server and through its handler the whole service, next wakes
// to see the stop (10 s unless set). A second is far above the gap between two requests of a
// busy listener.
const idleWorker = time.Second

// Handler returns the request handler with its middleware.
func (s *Server) Handler() fasthttp.RequestHandler {
	r := router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.HandleMethodNotAllowed = true
	notFound := func(ctx *fasthttp.RequestCtx) {
		s.fail(ctx, shotd.Errorf(shotd.CodeNotFound, "%s is not an API endpoint", ctx.Path()))
	}
	r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) {
		// The router lists OPTIONS too, which no endpoint accepts.
		allow := strings.ReplaceAll(string(ctx.Response.Header.Peek("Allow")), ", OPTIONS", "")
		allow = strings.TrimPrefix(allow, "OPTIONS, ")
		if slices.Contains(strings.Split(allow, ", "), string(ctx.Method())) {
			// The methods of the whole server, which the router gives for "*" and "/*": no
			// endpoint there.
			ctx.Response.Header.Del("Allow")
			notFound(ctx)
			return
		}
		ctx.Response.Header.Set("Allow", allow)
		s.fail(ctx, shotd.Errorf(shotd.CodeMethodNotAllowed, "%s is not accepted here; use %s", ctx.Method(), allow))
	}
	r.NotFound = notFound

	// The render endpoints, GET and POST: the spec's, then ScreenshotOne's at the root (s1.go).
	for path, h := range map[string]fasthttp.RequestHandler{"/api/v1/screenshot": s.screenshot, "/api/v1/take": s.screenshot,
		"/api/v1/animate": s.animate, "/take": s.s1Take, "/animate": s.s1Animate} {
		r.GET(path, h)
		r.POST(path, h)
	}
	r.GET("/api/v1/usage", s.usage)
	r.GET("/api/v1/jobs/{id}", s.job)
	r.GET("/api/v1/batches/{id}", s.batch)
	r.GET("/api/v1/files/{id}", s.file)
	r.POST("/api/v1/bulk", s.bulk)
	r.POST("/bulk", s.s1Bulk)
	r.GET("/usage", s.s1UsageHandler)

	r.GET("/healthz", func(ctx *fasthttp.RequestCtx) { writeJSON(ctx, 200, map[string]string{"status": "ok"}) })
	r.GET("/readyz", s.readyz)
	if s.pressure != nil {
		r.GET("/pressure", s.servePressure)
	}
	r.GET("/docs", serveDocsIndex)
	r.GET("/docs/errors", serveErrorDocs)
	r.GET("/docs/options", serveOptionDocs)
	r.GET("/docs/api", s.serveAPIDocs)
	r.GET("/openapi.json", s.serveOpenAPI)
	return s.wrap(r.Handler)
}

// wrap adds the reference id, the request log line and panic recovery to every request.
func (s *Server) wrap(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		ref := newRef()
		ctx.Response.Header.Set("X-Reference-Id", ref)
		log := s.log.With().Str("ref", ref).Logger()
		ctx.SetUserValue(logKey, &log)
		defer func() {
			if p := recover(); p != nil {
				log.Error().Interface("panic", p).Bytes("path", ctx.Path()).Msg("handler panicked")
				s.fail(ctx, shotd.Wrap(shotd.CodeInternalError, fmt.Errorf("panic: %v", p), "internal error"))
			}
			// The handler may have added the account to the request's logger.
			l := logOf(ctx)
			ev := l.Info()
			if ctx.Response.StatusCode() >= 500 {
				ev = l.Warn()
			}
			ev.Bytes("method", ctx.Method()).Bytes("path", ctx.Path()).Int("status", ctx.Response.StatusCode()).
				Dur("took", time.Since(start)).Msg("request")
			s.metrics.Request(routeOf(ctx), ctx.Response.StatusCode())
			if code, ok := ctx.UserValue(codeKey).(shotd.Code); ok {
				s.metrics.Refused(string(code))
			}
			s.recordRender(ctx, ref, routeOf(ctx))
		}()
		// Runs before the log line: a body refused unread is drained and its budget given back.
		defer s.endBody(ctx)
		if s.throttled(ctx) {
			return
		}
		defer s.countRefusal(ctx)
		if err := s.checkBodySize(ctx); err != nil {
			s.fail(ctx, err)
			return
		}
		next(ctx)
	}
}

const logKey = "shotd.log"

// logOf returns the request's logger, carrying its ref.
func logOf(ctx *fasthttp.RequestCtx) *zerolog.Logger {
	if l, ok := ctx.UserValue(logKey).(*zerolog.Logger); ok {
		return l
	}
	l := zerolog.Nop()
	return &l
}

// fail answers err with the error shape.
func (s *Server) fail(ctx *fasthttp.RequestCtx, err error) {
	if e := s.addressRefusal(ctx); e != nil {
		err = e
	}
	writeError(ctx, s.set.PublicURL, err)
}

// maxHeadBytes is each connection's read buffer, which bounds its request line plus headers.
// fasthttp's 4 KiB default refuses ordinary signed GET links with html or styles in the query;
// 64 KiB holds any URL that common proxies and CDNs pass on (they stop at 8 to 32 KiB), and POST
// carries options of any size. Every open connection, idle ones included, holds it: 1000 hold
// 64 MiB.
const maxHeadBytes = 64 << 10

// parseError answers requests fasthttp could not read, such as a body over the limit, in the
// error shape instead of a reset connection.
func (s *Server) parseError(ctx *fasthttp.RequestCtx, err error) {
	ref := newRef()
	ctx.Response.Header.Set("X-Reference-Id", ref)
	// Such a request never reaches wrap: its log line and its count are written here.
	defer func() {
		s.log.Info().Str("ref", ref).Err(err).Int("status", ctx.Response.StatusCode()).Msg("request not read")
		s.metrics.Request("unread", ctx.Response.StatusCode())
	}()
	if small := (*fasthttp.ErrSmallBuffer)(nil); errors.As(err, &small) {
		// The head did not fit in the read buffer. The client is likely still sending it;
		// drain a bounded amount so that the answer is not lost to a connection reset.
		drain(ctx.Conn(), 1<<20, time.Second)
		writeError(ctx, s.set.PublicURL, shotd.Errorf(shotd.CodeContentTooLarge,
			"the request line and headers exceed %d bytes; send long options in a POST JSON body", maxHeadBytes))
		ctx.SetConnectionClose()
		return
	}
	if strings.Contains(err.Error(), "body size exceeds") || err == fasthttp.ErrBodyTooLarge {
		// fasthttp stops reading at the limit; closing with the rest unread makes the kernel
		// reset the connection and the client never sees the answer. Drain a bounded amount
		// first so the 413 arrives.
		drain(ctx.Conn(), 64<<20, 5*time.Second)
		writeError(ctx, s.set.PublicURL, shotd.Errorf(shotd.CodeContentTooLarge, "the request body is larger than %d bytes", s.set.MaxBodyBytes))
		ctx.SetConnectionClose()
		return
	}
	writeError(ctx, s.set.PublicURL, shotd.Errorf(shotd.CodeInvalidRequest, "the request could not be read"))
}

// readyz answers 200 once a browser can render and every required check passes, 503 before;
// "missing" names what is not there, each with why (absent when nothing is).
func (s *Server) readyz(ctx *fasthttp.RequestCtx) {
	out := map[string]any{"status": "starting"}
	if s.set.BrowserVersion != "" {
		out["browser"] = s.set.BrowserVersion
	}
	missing := map[string]string{}
	up := s.ready != nil && s.ready()
	if !up {
		missing["browser"] = "no browser is up yet"
	}
	failed := false
	for _, c := range s.checks {
		if why := c.Check(); why != "" {
			missing[c.Name] = why
			failed = failed || c.Required
		}
	}
	if len(missing) > 0 {
		out["missing"] = missing
	}
	switch {
	case !up:
		writeJSON(ctx, 503, out)
	case failed:
		out["status"] = "unavailable"
		writeJSON(ctx, 503, out)
	default:
		out["status"] = "ready"
		writeJSON(ctx, 200, out)
	}
}

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.set.MaxConnsPerAddress > 0 {
		ln = s.capConns(ln, s.set.MaxConnsPerAddress)
	}
	return s.srv.Serve(ln)
}

// Shutdown stops accepting and waits for open requests, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.ShutdownWithContext(ctx) }

// newRef returns a request reference id: 16 random hex digits.
func newRef() string {
	var b [8]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return hex.EncodeToString(b[:])
}

type fasthttpLogger struct{ l zerolog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) { f.l.Debug().Msgf(format, args...) }

// drain reads and discards what the client is still sending, up to max bytes or total time,
// waiting at most 100 ms for each read.
func drain(c net.Conn, max int64, total time.Duration) {
	buf := make([]byte, 32<<10)
	end := time.Now().Add(total)
	var n int64
	for n < max && time.Now().Before(end) {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		m, err := c.Read(buf)
		n += int64(m)
		if err != nil {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
}

// routeOf names a request's route for metrics without ids, so the label set stays small.
func routeOf(ctx *fasthttp.RequestCtx) string {
	p := string(ctx.Path())
	for _, prefix := range []string{"/api/v1/jobs/", "/api/v1/batches/", "/api/v1/files/"} {
		if strings.HasPrefix(p, prefix) {
			return prefix + "{id}"
		}
	}
	switch p {
	case "/api/v1/screenshot", "/api/v1/take", "/api/v1/animate", "/api/v1/usage", "/api/v1/bulk", "/healthz",
		"/take", "/animate", "/bulk", "/usage", "/readyz", "/pressure", "/docs", "/docs/errors", "/docs/options", "/docs/api", "/openapi.json":
		return p
	}
	return "other"
}
