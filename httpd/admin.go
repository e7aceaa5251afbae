package httpd

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/pressure"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// UsageReporter gives the usage record of an account, as GET /api/v1/usage shows it; nil
// answers none.
type UsageReporter interface {
	Usage(ctx context.Context, account shotd.Account) (any, error)
}

// GateUsage reports usage through the account actors.
type GateUsage struct {
	Gate  Gate
	Plans map[string]shotd.Plan
}

// Usage returns the account's usage record.
func (g GateUsage) Usage(_ context.Context, acc shotd.Account) (any, error) {
	return g.Gate.Usage(acc, g.Plans[acc.Plan])
}

// AccountBook keeps accounts and their keys: store.Store implements it. An unknown account or
// key is an error wrapping shotd.ErrNotFound.
type AccountBook interface {
	CreateAccount(email, plan string, verified bool) (shotd.Account, error)
	Account(id string) (shotd.Account, error)
	// Accounts lists accounts in id order, at most limit, starting after the id after.
	Accounts(after string, limit int) ([]shotd.Account, error)
	UpdateAccount(id string, fn func(*shotd.Account) error) (shotd.Account, error)
	// CreateKey returns the new key with its secret, which no other answer carries.
	CreateKey(accountID, name string, requireSignature bool) (shotd.Key, error)
	Keys(accountID string) ([]shotd.Key, error)
	UpdateKey(accessKey string, fn func(*shotd.Key) error) (shotd.Key, error)
	RevokeKey(accessKey string) error
}

// UsageHistory gives an account's renders per UTC day, oldest first: store.Store implements it.
type UsageHistory interface {
	DailyUsage(accountID string, days int, now time.Time) ([]shotd.DayUsage, error)
}

// Backups writes a consistent copy of the database to w, calling size first with its length,
// or (BackupArchive) a tar of that copy and the stored files it has records of: store.Store
// implements it.
type Backups interface {
	Backup(w io.Writer, size func(n int64) error) error
	BackupArchive(w io.Writer) error
}

// AdminStore is what the admin API reads and changes.
type AdminStore interface {
	AccountBook
	UsageHistory
	Backups
	AdminRecords
}

// AdminRecords finds jobs and batches whatever their account, and deletes accounts:
// store.Store implements it.
type AdminRecords interface {
	JobByID(jobID string) (shotd.Job, error)
	BatchByID(batchID string) (shotd.Batch, []shotd.Job, error)
	// JobsOf lists an account's jobs newest first, limit at most, after the job id before;
	// next is the before= of the following page, "" on the last.
	JobsOf(accountID, before string, limit int) (jobs []shotd.Job, next string, err error)
	// DeleteAccount removes the account with its keys, jobs, batches, files and usage; an
	// account with jobs queued or rendering is refused with shotd.ErrAccountBusy.
	DeleteAccount(id string) (shotd.AccountDeletion, error)
}

// Admin is the admin API listener: accounts, keys and /metrics behind a Bearer token.
type Admin struct {
	token     string
	publicURL string
	store     AdminStore
	plans     *PlanBook
	usage     UsageReporter
	renders   *RenderLog
	pressure  func() pressure.Pressure
	log       zerolog.Logger
	srv       *fasthttp.Server
	adminGuard
}

// NewAdmin builds the admin API. gatherer is the Prometheus registry served at /metrics.
func NewAdmin(token, publicURL string, st AdminStore, plans map[string]shotd.Plan, usage UsageReporter, gatherer prometheus.Gatherer, log zerolog.Logger) *Admin {
	a := &Admin{token: token, publicURL: publicURL, store: st, plans: NewPlanBook(plans), usage: usage, log: log, adminGuard: newAdminGuard()}
	a.AllowHost("localhost")
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		a.AllowHost(u.Hostname())
	}
	r := router.New()
	r.RedirectTrailingSlash, r.RedirectFixedPath, r.HandleOPTIONS = false, false, false
	r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) {
		allow := strings.ReplaceAll(string(ctx.Response.Header.Peek("Allow")), ", OPTIONS", "")
		ctx.Response.Header.Set("Allow", strings.TrimPrefix(allow, "OPTIONS, "))
		a.fail(ctx, shotd.Errorf(shotd.CodeMethodNotAllowed, "method not accepted; use %s", allow))
	}
	r.NotFound = func(ctx *fasthttp.RequestCtx) {
		a.fail(ctx, shotd.Errorf(shotd.CodeNotFound, "%s is not an admin endpoint", ctx.Path()))
	}
	r.POST("/admin/v1/accounts", a.auth(a.createAccount))
	r.GET("/admin/v1/accounts", a.auth(a.listAccounts))
	r.GET("/dashboard", a.serveDashboard)
	r.GET("/", func(ctx *fasthttp.RequestCtx) { ctx.Redirect("/dashboard", fasthttp.StatusFound) })
	r.GET("/admin/v1/accounts/{id}", a.auth(a.getAccount))
	r.PATCH("/admin/v1/accounts/{id}", a.auth(a.patchAccount))
	r.DELETE("/admin/v1/accounts/{id}", a.auth(a.deleteAccount))
	r.GET("/admin/v1/accounts/{id}/jobs", a.auth(a.accountJobs))
	r.GET("/admin/v1/jobs/{id}", a.auth(a.getJob))
	r.GET("/admin/v1/batches/{id}", a.auth(a.getBatch))
	r.POST("/admin/v1/accounts/{id}/keys", a.auth(a.createKey))
	r.GET("/admin/v1/accounts/{id}/keys", a.auth(a.listKeys))
	r.PATCH("/admin/v1/keys/{access_key}", a.auth(a.patchKey))
	r.DELETE("/admin/v1/keys/{access_key}", a.auth(a.revokeKey))
	r.GET("/admin/v1/backup", a.auth(a.backup))
	r.GET("/admin/v1/accounts/{id}/usage/daily", a.auth(a.dailyUsage))
	r.GET("/admin/v1/renders", a.auth(a.recentRenders))
	r.GET("/admin/v1/info", a.auth(a.info))
	r.GET("/admin/v1/plans", a.auth(a.listPlans))
	r.GET("/admin/v1/pressure", a.auth(a.servePressure))
	if gatherer != nil {
		r.GET("/metrics", a.metricsGate(fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))))
	}
	r.GET("/healthz", func(ctx *fasthttp.RequestCtx) { writeJSON(ctx, 200, map[string]string{"status": "ok"}) })
	s := &Server{log: log, set: Settings{PublicURL: publicURL, MaxBodyBytes: adminMaxBody}}
	// Requests it cannot read are answered in the error shape with a reference id, as on the
	// public listener.
	a.srv = &fasthttp.Server{Handler: s.wrap(a.hostGuard(r.Handler)), Name: "shotd-admin", MaxRequestBodySize: adminMaxBody,
		ReadBufferSize: maxHeadBytes, ErrorHandler: s.parseError,
		ReadTimeout: 30 * time.Second, WriteTimeout: adminWriteTimeout, MaxIdleWorkerDuration: idleWorker,
		Logger: fasthttpLogger{log}}
	return a
}

// adminWriteTimeout bounds the writing of an admin answer, from its start (fasthttp's server
// write timeout); a backup's has streamStall from its last progress instead.
var adminWriteTimeout = 30 * time.Second

// adminMaxBody bounds an admin request's body: accounts and keys are a few fields each.
const adminMaxBody = 1 << 20

// Handler returns the admin request handler.
func (a *Admin) Handler() fasthttp.RequestHandler { return a.srv.Handler }

// Serve answers admin requests on ln until Shutdown.
func (a *Admin) Serve(ln net.Listener) error {
	a.resolveMetrics(ln)
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		a.AllowHost(ap.Addr().String())
	}
	return a.srv.Serve(ln)
}

// Shutdown stops the admin listener.
func (a *Admin) Shutdown(ctx context.Context) error { return a.srv.ShutdownWithContext(ctx) }

func (a *Admin) fail(ctx *fasthttp.RequestCtx, err error) { writeError(ctx, a.publicURL, err) }

// auth lets through a request that carries the admin token as Authorization: Bearer. The 401
// uses the public API's codes: access_key_required when no Bearer token is sent,
// access_key_invalid when a wrong one is.
func (a *Admin) auth(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		h := string(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))
		tok, ok := strings.CutPrefix(h, "Bearer ")
		tok = strings.TrimSpace(tok)
		right := ok && tok != "" && a.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.token)) == 1
		// The right token always passes: behind a reverse proxy every client has the proxy's
		// address, and counting failures must not let a stranger lock the admins out.
		if !right && a.tokenThrottled(ctx, a.publicURL) {
			return
		}
		switch {
		case right:
		case !ok || tok == "":
			a.tokenFailed(ctx)
			a.fail(ctx, shotd.Errorf(shotd.CodeAccessKeyRequired, "send the admin token as Authorization: Bearer <admin_token>"))
			return
		default:
			a.tokenFailed(ctx)
			a.fail(ctx, shotd.Errorf(shotd.CodeAccessKeyInvalid, "the admin token is wrong"))
			return
		}
		next(ctx)
	}
}

// decode reads a JSON object body into v, refusing unknown fields.
func decode(ctx *fasthttp.RequestCtx, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(ctx.PostBody())))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return shotd.Errorf(shotd.CodeInvalidRequest, "the body must be a JSON object with known fields: %v", err)
	}
	return nil
}

func (a *Admin) storeErr(err error, what string) error {
	switch {
	case errors.Is(err, shotd.ErrNotFound):
		return shotd.Errorf(shotd.CodeNotFound, "no such %s", what)
	default:
		var e *shotd.Error
		if errors.As(err, &e) {
			return e
		}
		return shotd.Wrap(shotd.CodeInternalError, err, "the store failed")
	}
}

// answer writes v with status, or, when the store failed, what err means for the record what.
func (a *Admin) answer(ctx *fasthttp.RequestCtx, status int, v any, err error, what string) {
	if err != nil {
		a.fail(ctx, a.storeErr(err, what))
		return
	}
	writeJSON(ctx, status, v)
}

// setIf sets *field to *v when the PATCH body sent v: a field it leaves out keeps its value.
func setIf[T any](field *T, v *T) {
	if v != nil {
		*field = *v
	}
}

func (a *Admin) checkPlan(plan string) error {
	if _, ok := a.plans.Get(plan); !ok {
		return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "unknown plan " + plan,
			Fields: []shotd.FieldError{{Field: "plan", Message: "not a configured plan"}}}
	}
	return nil
}

func (a *Admin) createAccount(ctx *fasthttp.RequestCtx) {
	var in struct {
		Email         string `json:"email"`
		Plan          string `json:"plan"`
		EmailVerified bool   `json:"email_verified"`
	}
	if err := decode(ctx, &in); err != nil {
		a.fail(ctx, err)
		return
	}
	if in.Plan == "" {
		in.Plan = "default"
	}
	if err := a.checkPlan(in.Plan); err != nil {
		a.fail(ctx, err)
		return
	}
	acc, err := a.store.CreateAccount(in.Email, in.Plan, in.EmailVerified)
	a.answer(ctx, 201, acc, err, "account")
}

// listAccounts serves GET /admin/v1/accounts?after=<id>&limit=<n> (beside the documented
// admin API, for the dashboard and the CLI): accounts in id order, 100 at most per page, and
// next_after, the cursor of the next page, when there is one.
func (a *Admin) listAccounts(ctx *fasthttp.RequestCtx) {
	limit := ctx.QueryArgs().GetUintOrZero("limit")
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	// One more than the page tells whether another page follows.
	accs, err := a.store.Accounts(string(ctx.QueryArgs().Peek("after")), limit+1)
	if err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	if accs == nil {
		accs = []shotd.Account{}
	}
	out := map[string]any{"accounts": accs}
	if len(accs) > limit {
		accs = accs[:limit]
		out["accounts"] = accs
		// next_after is the after= of the next page; absent on the last page.
		out["next_after"] = accs[limit-1].ID
	}
	writeJSON(ctx, 200, out)
}

func (a *Admin) getAccount(ctx *fasthttp.RequestCtx) {
	acc, err := a.store.Account(ctx.UserValue("id").(string))
	if err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	out := map[string]any{"id": acc.ID, "email": acc.Email, "plan": acc.Plan, "email_verified": acc.EmailVerified,
		"bonus_screenshots": acc.BonusScreenshots, "created_at": acc.CreatedAt}
	if a.usage != nil {
		u, err := a.usage.Usage(ctx, acc)
		if err != nil {
			a.fail(ctx, err)
			return
		}
		out["usage"] = u
	}
	writeJSON(ctx, 200, out)
}

func (a *Admin) patchAccount(ctx *fasthttp.RequestCtx) {
	var in struct {
		Plan             *string `json:"plan"`
		EmailVerified    *bool   `json:"email_verified"`
		BonusScreenshots *int    `json:"bonus_screenshots"`
	}
	if err := decode(ctx, &in); err != nil {
		a.fail(ctx, err)
		return
	}
	if in.Plan != nil {
		if err := a.checkPlan(*in.Plan); err != nil {
			a.fail(ctx, err)
			return
		}
	}
	if in.BonusScreenshots != nil && *in.BonusScreenshots < 0 {
		a.fail(ctx, &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "bonus_screenshots must be at least 0",
			Fields: []shotd.FieldError{{Field: "bonus_screenshots", Message: "must be at least 0"}}})
		return
	}
	acc, err := a.store.UpdateAccount(ctx.UserValue("id").(string), func(acc *shotd.Account) error {
		setIf(&acc.Plan, in.Plan)
		setIf(&acc.EmailVerified, in.EmailVerified)
		setIf(&acc.BonusScreenshots, in.BonusScreenshots)
		return nil
	})
	a.answer(ctx, 200, acc, err, "account")
}

func (a *Admin) createKey(ctx *fasthttp.RequestCtx) {
	var in struct {
		Name             string `json:"name"`
		RequireSignature bool   `json:"require_signature"`
	}
	if err := decode(ctx, &in); err != nil {
		a.fail(ctx, err)
		return
	}
	id := ctx.UserValue("id").(string)
	if _, err := a.store.Account(id); err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	k, err := a.store.CreateKey(id, in.Name, in.RequireSignature)
	a.answer(ctx, 201, k, err, "account")
}

func (a *Admin) listKeys(ctx *fasthttp.RequestCtx) {
	id := ctx.UserValue("id").(string)
	if _, err := a.store.Account(id); err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	keys, err := a.store.Keys(id)
	if err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	if keys == nil {
		keys = []shotd.Key{}
	}
	writeJSON(ctx, 200, map[string]any{"keys": keys})
}

func (a *Admin) patchKey(ctx *fasthttp.RequestCtx) {
	var in struct {
		Name             *string `json:"name"`
		RequireSignature *bool   `json:"require_signature"`
	}
	if err := decode(ctx, &in); err != nil {
		a.fail(ctx, err)
		return
	}
	k, err := a.store.UpdateKey(ctx.UserValue("access_key").(string), func(k *shotd.Key) error {
		setIf(&k.Name, in.Name)
		setIf(&k.RequireSignature, in.RequireSignature)
		return nil
	})
	k.SecretKey = ""
	a.answer(ctx, 200, k, err, "key")
}

func (a *Admin) revokeKey(ctx *fasthttp.RequestCtx) {
	if err := a.store.RevokeKey(ctx.UserValue("access_key").(string)); err != nil {
		a.fail(ctx, a.storeErr(err, "key"))
		return
	}
	ctx.SetStatusCode(204)
}

// listPlans serves GET /admin/v1/plans: the configured plans, by name, as serve reads them now
// (a SIGHUP reload shows at once).
func (a *Admin) listPlans(ctx *fasthttp.RequestCtx) {
	writeJSON(ctx, 200, map[string]any{"plans": a.plans.List()})
}
