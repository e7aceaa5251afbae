package httpd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/valyala/fasthttp"
)

// checkJSON refuses a POST body that is not sent as application/json (multipart included)
// before a byte of it is read.
func checkJSON(ctx *fasthttp.RequestCtx, what string) error {
	ct := ctx.Request.Header.ContentType()
	if mt, _, _ := bytes.Cut(ct, []byte(";")); !bytes.EqualFold(bytes.TrimSpace(mt), []byte("application/json")) {
		return shotd.Errorf(shotd.CodeInvalidRequest, "send %s as a JSON object with Content-Type: application/json", what)
	}
	return nil
}

// requestParams collects a render request's options: the query string, and for POST the JSON
// object body as well, read as a stream bounded by max_source_bytes.
func (s *Server) requestParams(query option.Params, body []byte) (option.Params, error) {
	if body == nil {
		return query, nil
	}
	ps, err := option.ReadJSONParams(body, option.Limits{MaxSourceBytes: s.set.MaxSourceBytes})
	if err != nil {
		return nil, err
	}
	return append(query, ps...), nil
}

// renderBody reads the JSON body of a POST render request; nil for GET. keyed says whether the
// key was found and checked without it.
func (s *Server) renderBody(ctx *fasthttp.RequestCtx, keyed bool) ([]byte, error) {
	if !ctx.IsPost() {
		return nil, nil
	}
	if err := checkJSON(ctx, "the options"); err != nil {
		return nil, err
	}
	body, err := s.readBody(ctx, keyed)
	if body == nil && err == nil {
		body = []byte{}
	}
	return body, err
}

// setLimitHeaders writes the X-Quota-*, X-RateLimit-* and X-Concurrency-* headers that tell a
// client where its account stands.
func setLimitHeaders(ctx *fasthttp.RequestCtx, l shotd.LimitsSnapshot, withQuota bool) {
	if l.RateLimit == 0 {
		return // the limits service did not answer: there is nothing true to say
	}
	h := &ctx.Response.Header
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.RateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(l.RateRemaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSecond(l.RateReset).Unix(), 10))
	if !withQuota {
		return
	}
	h.Set("X-Quota-Limit", strconv.Itoa(l.QuotaLimit))
	h.Set("X-Quota-Remaining", strconv.Itoa(l.QuotaRemaining))
	h.Set("X-Quota-Reset", ceilSecond(l.QuotaReset).UTC().Format(time.RFC3339))
	h.Set("X-Concurrency-Limit", strconv.Itoa(l.ConcurrencyLimit))
	h.Set("X-Concurrency-Remaining", strconv.Itoa(l.ConcurrencyRemaining))
}

// ceilSecond rounds t up to a whole second: a reset time in whole seconds must not come before
// the real one (a client that waits until it would be refused again), as Retry-After rounds up.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// screenshot serves GET and POST of /api/v1/screenshot and /api/v1/take. Precedence of refusals:
// authentication, validation, plan features, rate, failures, queue, quota, concurrency. A cache
// hit stops after rate: it renders nothing, so it needs no quota and no slot.
//
// The key of the query or headers is checked before a byte of the body is read (body.go), so
// that a request without a valid key costs no body (a 21 MiB body parsed whole cost 2.1 GB of
// allocations); the signature, which covers the body's options, after. The markdown conversion
// and the egress guard's DNS come after admission (checkTargets).
func (s *Server) screenshot(ctx *fasthttp.RequestCtx) { s.render(ctx, nil) }

// render serves a render endpoint; translate, when set, turns its option names into the
// screenshot options after the signature, which covers the names as sent, was checked.
func (s *Server) render(ctx *fasthttp.RequestCtx, translate func(option.Params) (option.Params, error)) {
	who, o, err := s.renderRequest(ctx, translate)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	if o.Async {
		s.acceptJob(ctx, who, o)
		return
	}
	var cacheKey string
	if o.Cache {
		cacheKey = o.ResponseCacheKey(who.account.ID)
		if s.serveCached(ctx, who, o, cacheKey) {
			return
		}
	}
	s.renderNow(ctx, who, o, cacheKey)
}

// renderRequest authenticates a render request, checks its signature and parses its options,
// once; from then on the request's log line names the account.
func (s *Server) renderRequest(ctx *fasthttp.RequestCtx, translate func(option.Params) (option.Params, error)) (*principal, *shotd.Options, error) {
	query := queryParams(ctx.QueryArgs())
	// The key of the query or the headers is checked before a byte of the body is read; a key
	// sent only in the JSON body is looked for in a body read from the keyless budget.
	ak := requestKey(ctx)
	var who *principal
	var err error
	if ak != "" {
		if who, err = s.identify(ak); err != nil {
			// An unknown or revoked key of the headers may be overruled by the body's (the
			// query form wins): a POST's body is then read as a keyless request's.
			if !ctx.IsPost() || query.Has("access_key") || shotd.CodeOf(err) != shotd.CodeAccessKeyInvalid {
				return nil, nil, err
			}
			who = nil
		}
	}
	body, err := s.renderBody(ctx, who != nil)
	if err != nil {
		if who == nil && shotd.CodeOf(err) == shotd.CodeInvalidRequest {
			err = nil // no key: that comes first
		} else {
			return nil, nil, err
		}
	}
	if who == nil {
		if v, ok := option.JSONString(body, "access_key"); ok && v != "" {
			ak = v
			if wait := s.refusedKey.wait(ak); wait > 0 {
				return nil, nil, tooManyRefusals("this access key", s.refusedKey.limit, wait)
			}
		}
		if who, err = s.identify(ak); err != nil {
			return nil, nil, err
		}
	}
	ps, err := s.requestParams(query, body)
	if qk, ok := ps.Get("access_key"); err == nil && ok && qk != "" && qk != ak {
		// The query form (the query string's, else the JSON body's) wins over the headers', as
		// the spec has it; the body read differently in full than when its key was looked for
		// (an escape) lands here too: the key acted for is always the one checked.
		if wait := s.refusedKey.wait(qk); wait > 0 {
			return nil, nil, tooManyRefusals("this access key", s.refusedKey.limit, wait)
		}
		ak = qk
		who, err = s.identify(ak)
	}
	if err == nil {
		err = s.verify(ctx, who, ps)
	}
	if err != nil {
		return nil, nil, err
	}
	// Sent in the query string and in the body, the key is the query string's (which verify
	// checked): the body's is not a second access_key option.
	ps = bodyKeyDropped(ps, len(query))
	log := logOf(ctx).With().Str("account", who.account.ID).Logger()
	ctx.SetUserValue(logKey, &log)
	lim := option.Limits{MaxSourceBytes: s.set.MaxSourceBytes}
	if isS1(ctx) {
		lim = option.S1Limits(lim, s1IsAsync(ps))
	}
	if translate != nil {
		if ps, err = translate(ps); err != nil {
			return nil, nil, err
		}
	}
	o, err := option.ParseOptions(ps, lim)
	if err == nil && isS1(ctx) {
		o.Dialect = shotd.DialectS1 // set while the options are still being made
	}
	return who, o, err
}

// bodyKeyDropped drops the access_key of the JSON body (the params after the query's first
// nq) when the query string has one.
func bodyKeyDropped(ps option.Params, nq int) option.Params {
	if !ps[:nq].Has("access_key") {
		return ps
	}
	out := slices.Clone(ps[:nq])
	for _, p := range ps[nq:] {
		if p.Name != "access_key" {
			out = append(out, p)
		}
	}
	return out
}

// renderNow renders o while the client waits and answers it (renderKept).
func (s *Server) renderNow(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options, cacheKey string) {
	rec, out, err := s.renderKept(ctx, who, o, cacheKey)
	// A refusal before admission (refusals.go) sends nothing; from then on a failure is the
	// render's, which their webhook_errors=true reports.
	if admitted, _ := ctx.UserValue(admittedKey).(bool); admitted && s.wantsSyncWebhook(ctx, o) {
		s.sendSyncWebhook(ctx, who, o, rec, err)
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	ctx.Response.Header.Set("X-Render-Ms", strconv.FormatInt(out.RenderMs, 10))
	ctx.Response.Header.Set("X-Cache", "MISS")
	if isS1(ctx) {
		s1AnswerHeaders(&ctx.Response.Header, o, out.StorageLocation, out.Metadata)
	}
	switch o.ResponseType {
	case "json":
		s.writeResult(ctx, o, s.files.ResultOf(rec, "MISS"))
		return
	case "empty":
		ctx.SetStatusCode(fasthttp.StatusOK) // rendered (and stored, when asked); no body
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(out.ContentType)
	ctx.SetBody(out.Data)
	setAttachment(ctx, o)
	if !inlineType(out.ContentType) {
		fileHeaders(&ctx.Response.Header, out.ContentType) // format=html is the page's own document
	}
}

// renderKept renders o while the client waits: admitted by the account first, settled whatever
// happens (a panic or an early return still frees the slot and the reservation), the file kept
// when the answer links to it or the cache keeps it. The limit headers are set on ctx.
func (s *Server) renderKept(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options, cacheKey string) (shotd.FileRecord, *shotd.Output, error) {
	adm, limits, err := s.admit(ctx, shotd.Admission{Account: who.account, Plan: who.plan, Kind: shotd.AdmitRender, Features: o.Features()})
	if err != nil {
		setLimitHeaders(ctx, limits, true)
		return shotd.FileRecord{}, nil, err
	}
	outcome := shotd.OutcomeReleased
	settled := false
	settle := func() error {
		if settled {
			return nil
		}
		settled = true
		l, err := s.gate.Settle(who.account.ID, adm.Ticket, outcome)
		if err != nil {
			logOf(ctx).Error().Err(err).Msg("settle")
			l = limits
		}
		setLimitHeaders(ctx, l, true)
		return err
	}
	defer func() { _ = settle() }()

	// Converted and resolved once admitted: a key past its rate or quota takes no converter slot.
	if err := s.checkTargets(o, -1); err != nil {
		return shotd.FileRecord{}, nil, err
	}
	out, err := s.renderBounded(o)
	if err != nil {
		outcome = shotd.OutcomeOf(err)
		settle()
		return shotd.FileRecord{}, nil, err
	}
	rec, err := s.keepFile(o, who.account.ID, cacheKey, out, s.wantsSyncWebhook(ctx, o))
	if err != nil {
		settle() // released: the file is rendered, keeping it is what failed
		return shotd.FileRecord{}, nil, shotd.StoredError(err)
	}
	outcome = shotd.OutcomeSucceeded
	// A success that could not be billed (cluster mode: the quota ledger lost its reservation)
	// is not answered as one, or the account would get more than its quota.
	var nb interface{ NotBilled() bool }
	if err := settle(); errors.As(err, &nb) && nb.NotBilled() {
		return shotd.FileRecord{}, nil, err
	}
	return rec, out, nil
}

// renderBounded renders o within its budget and the server's output limit.
func (s *Server) renderBounded(o *shotd.Options) (*shotd.Output, error) {
	rctx, cancel := context.WithTimeout(context.Background(), o.RenderBudget()+s.set.RenderGrace)
	defer cancel()
	out, err := s.renderer.Render(rctx, o)
	if err == nil && s.set.MaxOutputBytes > 0 && out.Size() > s.set.MaxOutputBytes {
		err = shotd.Errorf(shotd.CodeContentTooLarge, "the rendered %s is %d bytes; the limit is %d", out.Format, out.Size(), s.set.MaxOutputBytes)
	}
	return out, err
}

// keepFile stores the file when the cache, a JSON answer or a webhook (linked) needs it; otherwise it keeps
// nothing. A cached file is kept as long as its entry, which may be longer than the file TTL:
// the answer tells the expiry the file really has.
func (s *Server) keepFile(o *shotd.Options, accountID, cacheKey string, out *shotd.Output, linked bool) (shotd.FileRecord, error) {
	switch {
	case o.Cache:
		return s.files.PutCachedFile(accountID, out, s.set.FileTTL, cacheKey, o.CacheTTL)
	case o.ResponseType == "json" || linked:
		return s.files.PutFile(accountID, out, s.set.FileTTL)
	}
	return shotd.FileRecord{}, nil
}

// serveCached answers from the response cache and reports whether it answered (a hit, or its
// refusal). The lookup comes before admission because a hit renders nothing: it is admitted by
// plan features and rate alone (shotd.AdmitCacheHit), so an account at its quota or at its
// concurrency limit still gets it, unbilled (a store=true hit, which uploads, takes a
// concurrency slot: admitHit). The file is opened before admission too: when the
// sweeper removed it after the lookup (at the instant of expiry), the request is a miss and the
// caller renders, rather than answering file_not_found for a file the client never asked for.
// A copy older than the request's own cache_ttl is a miss too, whatever the cache_ttl it was
// stored with: the caller renders and its result replaces the entry.
//
// A hit of a store=true request uploads the cached file where this request says (admitHit):
// the answer's storage headers and store.location are this request's upload, and a hit of a
// request without store has none, whatever stored the entry.
func (s *Server) serveCached(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options, key string) bool {
	if o.Store && s.uploader == nil {
		return false // rendered, and uploaded by the pipeline
	}
	log := logOf(ctx)
	rec, ok, err := s.files.CacheGet(key, o.CacheTTL)
	if err != nil {
		log.Warn().Err(err).Msg("cache lookup")
		return false
	}
	if !ok {
		return false
	}
	f, err := s.files.OpenFile(rec)
	if err != nil {
		log.Info().Err(err).Str("file", rec.FileID).Msg("cached file gone; rendering again")
		return false
	}
	// The entry's location is where the request that filled it stored its file: not this one's.
	loc, limits, err := s.admitHit(ctx, who, o, rec, f)
	if errors.Is(err, shotd.ErrFileUnreadable) {
		// The service's trouble, not the client's: the hit gave its slot back unbilled, and the
		// request renders as a miss, whose file replaces the entry (as a job does).
		f.Close()
		log.Warn().Err(err).Str("file", rec.FileID).Msg("cached file unreadable; rendering again")
		return false
	}
	setLimitHeaders(ctx, limits, true)
	rec.StorageLocation = loc
	if err != nil {
		f.Close()
		s.fail(ctx, err)
		return true
	}
	ctx.Response.Header.Set("X-Render-Ms", strconv.FormatInt(rec.RenderMs, 10))
	ctx.Response.Header.Set("X-Cache", "HIT")
	if isS1(ctx) {
		s1AnswerHeaders(&ctx.Response.Header, o, rec.StorageLocation, rec.Metadata)
	}
	if o.ResponseType == "json" || o.ResponseType == "empty" {
		f.Close() // opened only to know that the file is there (and to upload it)
		if o.ResponseType == "json" {
			s.writeResult(ctx, o, s.files.ResultOf(rec, "HIT"))
		} else {
			ctx.SetStatusCode(fasthttp.StatusOK)
		}
		return true
	}
	setAttachment(ctx, o)
	sendFile(ctx, rec, f)
	return true
}

// admitHit admits a cache hit and carries out store=true for it: the cached file is uploaded to
// this request's storage_* destination, as a fresh render's would be, and its location returned
// ("" for a request without store). The cache key leaves the storage options out (shotd.Options.
// ResponseCacheKey): the cache saves the render, not the delivery, so a client who asks for a
// file in its bucket gets it there, at the path it asked for ({{uuid}} a new one each time),
// from the cache or not; with the storage options in the key a repeated request would still be
// a hit that uploads nothing, and a new path or rotated credentials would render again for the
// same bytes.
//
// The upload is not a render, so it is unbilled, like any hit; but it holds the file and a
// connection for up to the uploader's timeout and may fail, so a store=true hit is admitted as
// shotd.AdmitStoredHit (a concurrency slot and the failure window, no quota) and settled as a
// hit, or a failure when the client's storage refuses it; a cached file that cannot be read is
// the service's trouble, released (shotd.OutcomeOfHit) and answered shotd.ErrFileUnreadable, so
// that the request renders instead. f is left at its start for the answer.
func (s *Server) admitHit(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options, rec shotd.FileRecord, f *os.File) (loc string, limits shotd.LimitsSnapshot, err error) {
	adm := shotd.Admission{Account: who.account, Plan: who.plan, Kind: shotd.AdmitCacheHit, Features: o.Features()}
	if !o.Store {
		_, limits, err = s.admit(ctx, adm)
		return "", limits, err
	}
	adm.Kind = shotd.AdmitStoredHit
	res, limits, err := s.admit(ctx, adm)
	if err != nil {
		return "", limits, err
	}
	outcome := shotd.OutcomeReleased
	defer func() { // a panic frees the slot too
		l, serr := s.gate.Settle(who.account.ID, res.Ticket, outcome)
		if serr != nil {
			logOf(ctx).Error().Err(serr).Msg("settle")
			return
		}
		limits = l
	}()
	// Not ctx: fasthttp closes a RequestCtx's Done at the start of a graceful shutdown, which
	// would abort the upload that the shutdown waits for, and the pooled RequestCtx must not
	// outlive the request in the storage client's dials. A miss's upload runs under
	// renderBounded's context, from context.Background too; UploadStored bounds it by the
	// uploader's own timeout.
	loc, err = s.uploader.UploadStored(context.Background(), o, rec, f)
	if err == nil {
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			err = shotd.Wrap(shotd.CodeInternalError, fmt.Errorf("%w: %w", shotd.ErrFileUnreadable, serr), "the cached file could not be read")
		}
	}
	outcome = shotd.OutcomeOfHit(err)
	if err != nil {
		return "", limits, err
	}
	return loc, limits, nil
}

// streamFile sends a stored file with its Content-Type.
func (s *Server) streamFile(ctx *fasthttp.RequestCtx, rec shotd.FileRecord) {
	f, err := s.files.OpenFile(rec)
	if err != nil && !errors.Is(err, shotd.ErrNotFound) {
		s.fail(ctx, shotd.StoredError(err)) // the service's bucket did not answer: retry, not gone
		return
	}
	if err != nil {
		s.fail(ctx, shotd.Wrap(shotd.CodeFileNotFound, err, "the file is gone"))
		return
	}
	sendFile(ctx, rec, f)
}

// sendFile answers 200 with the opened file f of rec; fasthttp closes f once sent.
//
// Stored files include what tenants' pages put there (metadata_content is a page's DOM as
// text/html), served from the API's origin: no file may be sniffed into another type or run
// scripts there, and anything a browser would display as a document is downloaded instead.
func sendFile(ctx *fasthttp.RequestCtx, rec shotd.FileRecord, f *os.File) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(rec.ContentType)
	fileHeaders(&ctx.Response.Header, rec.ContentType)
	ctx.SetBodyStream(f, int(rec.SizeBytes))
}

// fileHeaders keeps a file of content type ct from being sniffed into another type or running
// scripts on the API's origin, and has a browser download what it would display as a document
// (under the attachment_name a header already set, if any).
func fileHeaders(h *fasthttp.ResponseHeader, ct string) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	if !inlineType(ct) && len(h.Peek("Content-Disposition")) == 0 {
		h.Set("Content-Disposition", "attachment")
	}
}

// inlineType reports whether a stored file of content type ct may be shown inline: images, PDF
// and video, which browsers do not run as documents of the origin. SVG is a document.
func inlineType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "image/svg+xml":
		return false
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "video/"), mt == "application/pdf":
		return true
	}
	return false
}

// statusAuthID is statusAuth for a status request about one record, named by the {id} of its
// path (a job, a batch, a file).
func (s *Server) statusAuthID(ctx *fasthttp.RequestCtx) (*principal, string, bool) {
	who, ok := s.statusAuth(ctx)
	id, _ := ctx.UserValue("id").(string)
	return who, id, ok
}

// statusAuth authenticates and admits a status endpoint request (usage, jobs, batches, files),
// which has its own, larger rate allowance.
func (s *Server) statusAuth(ctx *fasthttp.RequestCtx) (*principal, bool) {
	ps := queryParams(ctx.QueryArgs())
	who, err := s.authenticate(ctx, ps)
	if err == nil {
		err = statusParams(ps)
	}
	if err == nil {
		var limits shotd.LimitsSnapshot
		_, limits, err = s.admit(ctx, shotd.Admission{Account: who.account, Plan: who.plan, Kind: shotd.AdmitStatus})
		setLimitHeaders(ctx, limits, false)
	}
	if err != nil {
		s.fail(ctx, err)
		return nil, false
	}
	log := logOf(ctx).With().Str("account", who.account.ID).Logger()
	ctx.SetUserValue(logKey, &log)
	return who, true
}

func (s *Server) usage(ctx *fasthttp.RequestCtx) {
	if u, ok := s.usageReport(ctx); ok {
		writeJSON(ctx, fasthttp.StatusOK, u)
	}
}

// usageReport authenticates a usage request and reports the account's usage; on a refusal it
// has answered.
func (s *Server) usageReport(ctx *fasthttp.RequestCtx) (*shotd.UsageReport, bool) {
	who, ok := s.statusAuth(ctx)
	if !ok {
		return nil, false
	}
	u, err := s.gate.Usage(who.account, who.plan)
	if err != nil {
		s.fail(ctx, err)
		return nil, false
	}
	return u, true
}

func (s *Server) file(ctx *fasthttp.RequestCtx) {
	who, id, ok := s.statusAuthID(ctx)
	if !ok {
		return
	}
	rec, err := s.files.File(who.account.ID, id)
	if errors.Is(err, shotd.ErrNotFound) {
		s.fail(ctx, shotd.Errorf(shotd.CodeFileNotFound, "no file %q for this account; it may have expired", id))
		return
	}
	if err != nil {
		s.fail(ctx, shotd.Wrap(shotd.CodeInternalError, err, "the file could not be read"))
		return
	}
	s.streamFile(ctx, rec)
}
