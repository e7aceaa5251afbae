package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
)

// recordWait: a job's hook message whose record is not there yet is tried again for this long
// after it was queued (RecordFinished queues it before it writes the record, within
// recordTimeout); then it is dropped, its record never written.
const (
	recordWait    = time.Minute
	recordTimeout = 15 * time.Second
)

// errNoRecord: a hook message's job has no record.
var errNoRecord = errors.New("cluster: no record of the job")

// RecordFinished records the ended job of a sync render whose webhook_url asks for a delivery
// (ScreenshotOne's sync /take, as store.CreateFinishedJob on a single node): succeeded with
// result, or failed with renderErr, its webhook pending. It is never queued for rendering and
// holds no reservation: the gate admitted and billed the render. It returns the job's id.
//
// Its hook message is queued first, then its record created marked queued (HookQueued): once
// the record exists the delivery is the cluster's whatever node dies, and no record is left
// pending with no message (no job message would bring it back, as one does for a rendered
// job). A delivery that comes before the record waits for it (handleHook). The delivery may
// thus come before the HTTP answer, as on a single node, whose httpd asks for it before the
// answer is written.
func (j *Jobs) RecordFinished(req shotd.JobRequest, result *shotd.JobResult, renderErr error) (string, error) {
	now := time.Now().UTC()
	jobs, _, err := actors.NewJobRecords(req, j.cfg.Secrets, now)
	switch {
	case err != nil:
		return "", err
	case len(jobs) != 1 || jobs[0].Webhook == nil || req.Batch:
		return "", errors.New("cluster: record finished job: one job with a webhook, no batch")
	case renderErr == nil && result == nil:
		return "", errors.New("cluster: record finished job: succeeded without a result")
	}
	r := jobRecord{Job: jobs[0], HookQueued: true}
	if renderErr != nil {
		e := shotd.AsError(renderErr)
		r.Job.Status, r.Job.ErrorCode, r.Job.ErrorMessage = shotd.JobFailed, string(e.Code), e.Message
	} else {
		r.Job.Status, r.Job.Result = shotd.JobSucceeded, result
	}
	r.Job.Webhook.Status = shotd.WebhookPending
	ctx, cancel := context.WithTimeout(j.life, recordTimeout)
	defer cancel()
	if err := j.publish(ctx, workMsg{Kind: "hook", ID: r.Job.JobID}); err != nil {
		return "", err
	}
	if err := j.create(ctx, jobKey(r.Job.JobID), &r); err != nil {
		return "", fmt.Errorf("cluster: record finished job %s: %w", r.Job.JobID, err)
	}
	return r.Job.JobID, nil
}

// young reports whether msg was queued less than recordWait ago.
func young(msg jetstream.Msg) bool {
	md, err := msg.Metadata()
	return err == nil && time.Since(md.Timestamp) < recordWait
}
