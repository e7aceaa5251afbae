package httpd

import (
	"errors"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/view"
	"github.com/valyala/fasthttp"
)

// adminJob is a job record as the admin API shows it: the public record and its account.
type adminJob struct {
	view.JobView
	AccountID string `json:"account_id"`
}

// getJob serves GET /admin/v1/jobs/{id}: any account's job.
func (a *Admin) getJob(ctx *fasthttp.RequestCtx) {
	j, err := a.store.JobByID(ctx.UserValue("id").(string))
	if err != nil {
		a.fail(ctx, a.storeErr(err, "job"))
		return
	}
	writeJSON(ctx, 200, adminJob{JobView: view.NewJobView(j, a.publicURL), AccountID: j.AccountID})
}

// getBatch serves GET /admin/v1/batches/{id}: any account's batch, with its progress.
func (a *Admin) getBatch(ctx *fasthttp.RequestCtx) {
	b, jobs, err := a.store.BatchByID(ctx.UserValue("id").(string))
	if err != nil {
		a.fail(ctx, a.storeErr(err, "batch"))
		return
	}
	writeJSON(ctx, 200, struct {
		view.BatchRecord
		AccountID string `json:"account_id"`
	}{view.NewBatchRecord(b, jobs, a.publicURL), b.AccountID})
}

// accountJobs serves GET /admin/v1/accounts/{id}/jobs?limit=N&before=JOB_ID: the account's jobs
// newest first, 100 at most per page, and next_before while another page follows.
func (a *Admin) accountJobs(ctx *fasthttp.RequestCtx) {
	id := ctx.UserValue("id").(string)
	if _, err := a.store.Account(id); err != nil {
		a.fail(ctx, a.storeErr(err, "account"))
		return
	}
	limit := ctx.QueryArgs().GetUintOrZero("limit")
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	jobs, next, err := a.store.JobsOf(id, string(ctx.QueryArgs().Peek("before")), limit)
	if err != nil {
		a.fail(ctx, a.storeErr(err, "job"))
		return
	}
	out := make([]adminJob, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, adminJob{JobView: view.NewJobView(j, a.publicURL), AccountID: j.AccountID})
	}
	body := map[string]any{"jobs": out}
	if next != "" {
		body["next_before"] = next
	}
	writeJSON(ctx, 200, body)
}

// deleteAccount serves DELETE /admin/v1/accounts/{id}: the account goes with its keys, jobs,
// batches, stored files and usage, and the answer counts them. An account with jobs queued or
// rendering is refused: revoke its keys, let the jobs end, then delete it.
func (a *Admin) deleteAccount(ctx *fasthttp.RequestCtx) {
	d, err := a.store.DeleteAccount(ctx.UserValue("id").(string))
	switch {
	case errors.Is(err, shotd.ErrAccountBusy):
		a.fail(ctx, shotd.Errorf(shotd.CodeInvalidRequest, "the account has jobs queued or rendering; revoke its keys and delete it once they ended"))
		return
	case err != nil && errors.Is(err, shotd.ErrNotFound):
		a.fail(ctx, a.storeErr(err, "account"))
		return
	case err != nil:
		// The records are gone; some files could not be removed (the sweeper's orphan pass
		// removes them later).
		logOf(ctx).Warn().Err(err).Msg("account deleted, files left")
	}
	writeJSON(ctx, 200, map[string]any{"deleted": d})
}
