package httpd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/markdown"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/view"
	"github.com/valyala/fasthttp"
)

// JobQueue accepts background renders: the job actor implements it. Submit returns once the jobs
// are stored, with their batch when req.Batch; timeout bounds the wait for the write to start.
type JobQueue interface {
	Submit(req shotd.JobRequest, timeout time.Duration) ([]shotd.Job, *shotd.Batch, error)
}

// JobRecords reads jobs and batches: store.Store implements it.
type JobRecords interface {
	Job(accountID, jobID string) (shotd.Job, error)
	Batch(accountID, batchID string) (shotd.Batch, []shotd.Job, error)
}

// URLChecker refuses addresses the egress guard would refuse, before rendering or queueing.
type URLChecker interface {
	// CheckURL is the full check: a name is resolved once and its addresses checked.
	CheckURL(rawURL, field string) error
	// CheckLiteral checks only what needs no DNS (IP literals, malformed hosts); names pass.
	CheckLiteral(rawURL, field string) error
}

const submitTimeout = 5 * time.Second

// acceptJob queues one async render and answers 202 with job_id, status queued and status_url.
func (s *Server) acceptJob(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options) {
	_, limits, err := s.admit(ctx, shotd.Admission{Account: who.account, Plan: who.plan, Kind: shotd.AdmitJobs, Jobs: 1, Features: o.Features()})
	setLimitHeaders(ctx, limits, true)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	// Checked once admitted: a key past its rate or quota takes no converter slot.
	if err := s.checkTargets(o, -1); err != nil {
		s.gate.ReleaseJobs(who.account.ID, 1)
		s.fail(ctx, err)
		return
	}
	jobs, _, err := s.jobs.Submit(shotd.JobRequest{Account: who.account, Plan: who.plan, AccessKey: who.key.AccessKey, Options: []*shotd.Options{o}}, submitTimeout)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	j := jobs[0]
	logOf(ctx).Info().Str("job", j.JobID).Msg("job queued")
	statusURL := s.set.PublicURL + "/api/v1/jobs/" + j.JobID
	if isS1(ctx) {
		writeJSON(ctx, fasthttp.StatusOK, s1Async(j.JobID, statusURL))
		return
	}
	writeJSON(ctx, fasthttp.StatusAccepted, map[string]string{
		"job_id": j.JobID, "status": shotd.JobQueued, "status_url": statusURL})
}

// checkTargets refuses a url or webhook_url that the egress guard would refuse, before anything
// renders or is queued. index is the bulk item, or -1.
//
// A sync render gets the full check of its url: its answer is the render's, so an unresolvable
// name is its navigation_failed. Its webhook_url (used only on ScreenshotOne's paths, s1hook.go)
// is not checked beyond the parser's syntax: the webhook dialer checks each address it dials. A job (async or a bulk item) is checked only as far as
// needs no DNS: a job's render errors belong in its error_code, not in the 202, so a name is
// judged when the job renders (the guard refuses a private address there: host_not_allowed; a
// name that does not resolve: navigation_failed), and the webhook dialer checks every address
// it connects to.
//
// It runs once the account admitted the request (a key past its rate or quota takes no converter
// slot and no DNS lookup), and before the request takes a browser slot or is queued; a refusal
// here releases the admission. A markdown source is converted here: past
// the converter's limits, or not converted in time, it is refused (content_too_large) at once; the
// renderer's own conversion then finds the page in the converter's cache.
func (s *Server) checkTargets(o *shotd.Options, index int) error {
	if o.Markdown != "" {
		ctx, cancel := context.WithTimeout(context.Background(), markdown.ConvertTimeout)
		_, err := markdown.Convert(ctx, o.Markdown, o.DarkMode)
		cancel()
		if err != nil {
			return err
		}
	}
	if s.urls == nil {
		return nil
	}
	check := s.urls.CheckLiteral
	targets := []struct{ field, url string }{{"url", o.URL}, {"storage_endpoint", o.Storage.Endpoint}, {"webhook_url", o.WebhookURL}}
	if !o.Async {
		check, targets = s.urls.CheckURL, targets[:2]
	}
	for _, t := range targets {
		if t.url == "" {
			continue
		}
		if err := check(t.url, t.field); err != nil {
			e := shotd.AsError(err)
			if index >= 0 {
				e.Message = fmt.Sprintf("requests[%d]: %s", index, e.Message)
			}
			return e
		}
	}
	return nil
}

func (s *Server) job(ctx *fasthttp.RequestCtx) {
	who, id, ok := s.statusAuthID(ctx)
	if !ok {
		return
	}
	j, err := s.records.Job(who.account.ID, id)
	if err != nil {
		s.fail(ctx, notFound(err, shotd.CodeJobNotFound, "no job %q for this account", id))
		return
	}
	v := view.NewJobView(j, s.set.PublicURL)
	if q, ok := s.jobs.(queuePlaces); ok && j.Status == shotd.JobQueued {
		v.QueuePosition, _ = q.QueuePosition(j.JobID, time.Second)
	}
	writeJSON(ctx, fasthttp.StatusOK, v)
}

// queuePlaces tells a queued job's place in its account's queue: actors.Jobs implements it.
type queuePlaces interface {
	QueuePosition(jobID string, timeout time.Duration) (int, bool)
}

func (s *Server) batch(ctx *fasthttp.RequestCtx) {
	who, id, ok := s.statusAuthID(ctx)
	if !ok {
		return
	}
	b, jobs, err := s.records.Batch(who.account.ID, id)
	if err != nil {
		s.fail(ctx, notFound(err, shotd.CodeJobNotFound, "no batch %q for this account", id))
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, view.NewBatchRecord(b, jobs, s.set.PublicURL))
}

func notFound(err error, code shotd.Code, format string, args ...any) error {
	if errors.Is(err, shotd.ErrNotFound) {
		return shotd.Errorf(code, format, args...)
	}
	return shotd.Wrap(shotd.CodeInternalError, err, "the record could not be read")
}

// bulk serves POST /api/v1/bulk: every item is validated before anything is
// queued, then all items become jobs of one batch in one transaction.
func (s *Server) bulk(ctx *fasthttp.RequestCtx) {
	ps := queryParams(ctx.QueryArgs())
	// The key (query or headers) is checked before a byte of the body is read.
	who, err := s.identify(accessKey(ctx, ps))
	if err == nil {
		err = checkJSON(ctx, "the bulk body")
	}
	var body []byte
	if err == nil {
		body, err = s.readBody(ctx, true)
	}
	if err != nil {
		s.fail(ctx, err)
		return
	}
	// A signed bulk request covers its body through body_sha256 (docs/api.md, "Signed requests").
	if ps.Has("signature") {
		sum := sha256.Sum256(body)
		ps = append(ps, option.Param{Name: "body_sha256", Values: []string{hex.EncodeToString(sum[:])}})
	}
	if err := s.verify(ctx, who, ps); err != nil {
		s.fail(ctx, err)
		return
	}
	if err := statusParams(withoutParam(ps, "body_sha256")); err != nil {
		s.fail(ctx, err)
		return
	}
	var batchHook string
	opts, err := s.bulkItems(body, &batchHook)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	features := []string{shotd.FeatureBulk}
	for _, o := range opts {
		for _, f := range o.Features() {
			if f != shotd.FeatureAsync {
				features = append(features, f)
			}
		}
	}
	_, limits, err := s.admit(ctx, shotd.Admission{Account: who.account, Plan: who.plan, Kind: shotd.AdmitJobs, Jobs: len(opts), Features: features})
	setLimitHeaders(ctx, limits, true)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	// Checked once admitted: a key past its rate or quota takes no converter slot.
	if err := s.checkItems(opts); err != nil {
		s.gate.ReleaseJobs(who.account.ID, len(opts))
		s.fail(ctx, err)
		return
	}
	jobs, batch, err := s.jobs.Submit(shotd.JobRequest{Account: who.account, Plan: who.plan, AccessKey: who.key.AccessKey, Options: opts, Batch: true,
		BatchWebhookURL: batchHook}, submitTimeout)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	type item struct {
		Index int    `json:"index"`
		JobID string `json:"job_id"`
	}
	items := make([]item, len(jobs))
	for i, j := range jobs {
		items[i] = item{i, j.JobID}
	}
	logOf(ctx).Info().Str("batch", batch.BatchID).Int("jobs", len(items)).Msg("batch queued")
	writeJSON(ctx, fasthttp.StatusAccepted, map[string]any{
		"batch_id": batch.BatchID, "status": "queued", "total": len(items), "jobs": items,
		"status_url": s.set.PublicURL + "/api/v1/batches/" + batch.BatchID})
}

// bulkItems reads and validates the bulk body: a JSON object with a requests list, optional
// defaults merged under each item, and an optional webhook_url of the batch, set in *webhookURL.
func (s *Server) bulkItems(body []byte, webhookURL *string) ([]*shotd.Options, error) {
	// Split as slices of the body, stopping past the item limit: decoding the list first cost a
	// copy of every item, however many there were.
	const shape = "the body must be a JSON object {\"requests\": [...], \"defaults\": {...}}"
	members, kind, more, err := option.SplitJSON(body, 3)
	if err != nil || kind != '{' || more {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, shape)
	}
	var requests, defaultsRaw []byte
	for _, m := range members {
		switch m.Name {
		case "requests":
			requests = m.Value
		case "defaults":
			defaultsRaw = m.Value
		case "webhook_url":
			u, err := s.batchWebhookURL(m.Value)
			if err != nil {
				return nil, err
			}
			*webhookURL = u
		default:
			return nil, shotd.Errorf(shotd.CodeInvalidRequest, shape)
		}
	}
	if requests == nil || string(requests) == "null" {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, "the body has no requests list")
	}
	maxItems := s.set.BulkMaxItems
	if maxItems <= 0 {
		maxItems = 1 << 30
	}
	items, kind, more, _ := option.SplitJSON(requests, maxItems)
	if kind != '[' {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, shape)
	}
	n := len(items)
	if n == 0 || more {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, "requests must hold 1 to %d items", s.set.BulkMaxItems)
	}
	lim := option.Limits{MaxSourceBytes: s.set.MaxSourceBytes}
	var defaults option.Params
	if len(defaultsRaw) > 0 && string(defaultsRaw) != "null" {
		d, err := option.ReadJSONParams(defaultsRaw, lim)
		if e := shotd.AsError(err); e != nil && e.Code == shotd.CodeInvalidRequest {
			return nil, shotd.Errorf(shotd.CodeInvalidRequest, "defaults must be a JSON object of options")
		} else if e != nil {
			return nil, e // a limit of the stream: the whole request is refused
		}
		defaults = d
	}
	var errs []shotd.FieldError
	opts := make([]*shotd.Options, 0, n)
	for i, raw := range items {
		index := i
		item, err := option.ReadJSONParams(raw.Value, lim)
		if shotd.CodeOf(err) == shotd.CodeInvalidRequest {
			errs = append(errs, shotd.FieldError{Field: "requests", Message: "each item must be a JSON object of options", Index: &index})
			continue
		}
		var o *shotd.Options
		if err == nil {
			o, err = option.ParseOptions(mergeDefaults(item, defaults), lim)
		}
		if err != nil {
			if whole := addItemError(&errs, index, err); whole != nil {
				return nil, whole
			}
			continue
		}
		opts = append(opts, o)
	}
	if err := itemsInvalid(errs); err != nil {
		return nil, err
	}
	return opts, nil
}

// addItemError adds the field errors of item index's err to errs, or returns err whole when it
// is not an option error (content_too_large, host_not_allowed): then the whole request is
// refused with its own code.
func addItemError(errs *[]shotd.FieldError, index int, err error) *shotd.Error {
	e := shotd.AsError(err)
	if e.Code == shotd.CodeContentTooLarge || e.Code == shotd.CodeHostNotAllowed {
		return e
	}
	fields := e.Fields
	if len(fields) == 0 {
		fields = []shotd.FieldError{{Field: "url", Message: e.Message}}
	}
	for _, f := range fields {
		f.Index = &index
		*errs = append(*errs, f)
	}
	return nil
}

// itemsInvalid is the invalid_options error of a bulk request's item errors, nil without any.
func itemsInvalid(errs []shotd.FieldError) *shotd.Error {
	if len(errs) == 0 {
		return nil
	}
	return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: fmt.Sprintf("%d invalid options in requests; see errors", len(errs)), Fields: errs}
}

// checkItems runs checkTargets on every bulk item, with the errors of bulkItems.
func (s *Server) checkItems(opts []*shotd.Options) error {
	var errs []shotd.FieldError
	for i, o := range opts {
		if err := s.checkTargets(o, i); err != nil {
			if whole := addItemError(&errs, i, err); whole != nil {
				return whole
			}
		}
	}
	if err := itemsInvalid(errs); err != nil {
		return err
	}
	return nil
}

// exclusiveGroups are options that stand in for one another: an item that gives one of a group
// takes none of the group from defaults, so that its own choice wins instead of conflicting
// (defaults with a url, an item with html; defaults with a selector, an item with a clip area).
var exclusiveGroups = [][]string{option.SourceOptions, option.AreaOptions, option.PaperOptions}

// overridden reports whether the item's own options replace the default named name: the item
// gives it, or another option of its exclusive group.
func overridden(item option.Params, name string) bool {
	if item.Has(name) {
		return true
	}
	for _, g := range exclusiveGroups {
		if slices.Contains(g, name) && slices.ContainsFunc(g, item.Has) {
			return true
		}
	}
	return false
}

// mergeDefaults puts defaults under an item's own options and makes the item a background job.
// Authentication parameters belong to the request, not to items.
func mergeDefaults(item, defaults option.Params) option.Params {
	out := make(option.Params, 0, len(item)+len(defaults)+1)
	for _, p := range item {
		switch p.Name {
		case "async":
			continue
		case "access_key", "signature", "expires":
			p.Invalid = "belongs to the bulk request's query, not to an item"
		}
		out = append(out, p)
	}
	for _, d := range defaults {
		if !overridden(item, d.Name) && d.Name != "async" {
			if d.Name == "access_key" || d.Name == "signature" || d.Name == "expires" {
				d.Invalid = "belongs to the bulk request's query, not to defaults"
			}
			out = append(out, d)
		}
	}
	return append(out, option.Param{Name: "async", Values: []string{"true"}})
}

func withoutParam(ps option.Params, name string) option.Params {
	out := make(option.Params, 0, len(ps))
	for _, p := range ps {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

// batchWebhookURL reads the webhook_url of a bulk body: an http or https address that receives
// one batch.done delivery once every job of the batch ended. It is checked as a job's
// webhook_url is at acceptance: syntax and IP literals; names when they are dialed.
func (s *Server) batchWebhookURL(raw []byte) (string, error) {
	bad := func(msg string) error {
		return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "webhook_url " + msg,
			Fields: []shotd.FieldError{{Field: "webhook_url", Message: msg}}}
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", bad("must be a string")
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.TrimSpace(v) != v {
		return "", bad("must be a full http:// or https:// address")
	}
	if s.urls != nil {
		if err := s.urls.CheckLiteral(v, "webhook_url"); err != nil {
			return "", err
		}
	}
	return v, nil
}
