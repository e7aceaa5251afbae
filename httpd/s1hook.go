package httpd

import (
	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// SyncWebhooks sends ScreenshotOne's webhook of a sync render on their paths, as their service
// does for a request with webhook_url that is not async: the render is recorded as a job that
// has already ended (never queued, so never rendered again), and it is delivered with the
// retries of any job's: by the webhook actor on a single node, by any node in cluster mode.
type SyncWebhooks interface {
	// Record stores the ended job of o's sync render, made with req's key: succeeded with
	// result, or failed with renderErr (result nil). It returns the job's id.
	Record(req shotd.JobRequest, result *shotd.JobResult, renderErr error) (string, error)
	// Deliver starts the delivery of the job's webhook; it does not wait for it.
	Deliver(jobID string)
}

// wantsSyncWebhook reports whether the sync render of o on ctx sends their webhook.
func (s *Server) wantsSyncWebhook(ctx *fasthttp.RequestCtx, o *shotd.Options) bool {
	return s.syncHooks != nil && o.WebhookURL != "" && !o.Async && isS1(ctx)
}

// sendSyncWebhook records the end of o's sync render (rec, or renderErr) and asks for its
// delivery. The record is one commit before the answer, so that a crash after the answer still
// delivers; the delivery itself runs in the webhook actor and does not hold the answer.
func (s *Server) sendSyncWebhook(ctx *fasthttp.RequestCtx, who *principal, o *shotd.Options, rec shotd.FileRecord, renderErr error) {
	if renderErr != nil && o.NoWebhookErrors {
		return // webhook_errors=false: a failed render sends none, as theirs
	}
	var result *shotd.JobResult
	if renderErr == nil {
		r := s.files.ResultOf(rec, "MISS")
		result = &r
	}
	req := shotd.JobRequest{Account: who.account, Plan: who.plan, AccessKey: who.key.AccessKey, Options: []*shotd.Options{o}}
	id, err := s.syncHooks.Record(req, result, renderErr)
	log := logOf(ctx)
	if err != nil {
		log.Error().Err(err).Msg("sync webhook not recorded; none is sent")
		return
	}
	log.Info().Str("job", id).Msg("sync webhook recorded")
	s.syncHooks.Deliver(id)
}
