package service

import (
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/cluster"
	"github.com/shotd/shotd/store"
)

// syncWebhooks is httpd.SyncWebhooks on a single node: the ended job of a sync render goes in
// the store in one transaction (store.CreateFinishedJob), and the webhook actor delivers it as
// any job's webhook, resuming a pending delivery at the next start.
type syncWebhooks struct {
	store    *store.Store
	secrets  actors.Secrets
	webhooks *actors.Webhooks
}

func (w syncWebhooks) Record(req shotd.JobRequest, result *shotd.JobResult, renderErr error) (string, error) {
	jobs, _, err := actors.NewJobRecords(req, w.secrets, time.Now())
	if err != nil {
		return "", err
	}
	j := jobs[0]
	if renderErr != nil {
		e := shotd.AsError(renderErr)
		j.Status, j.ErrorCode, j.ErrorMessage = shotd.JobFailed, string(e.Code), e.Message
	} else {
		j.Status, j.Result = shotd.JobSucceeded, result
	}
	if err := w.store.CreateFinishedJob(&j); err != nil {
		return "", err
	}
	return j.JobID, nil
}

func (w syncWebhooks) Deliver(jobID string) { w.webhooks.Deliver(jobID) }

// clusterSyncWebhooks is httpd.SyncWebhooks in cluster mode: Record writes the ended job in
// the cluster's jobs bucket with its hook message already queued (cluster.Jobs.RecordFinished),
// so that any node delivers it even if this one dies before Deliver.
type clusterSyncWebhooks struct{ jobs *cluster.Jobs }

func (w clusterSyncWebhooks) Record(req shotd.JobRequest, result *shotd.JobResult, renderErr error) (string, error) {
	return w.jobs.RecordFinished(req, result, renderErr)
}

func (clusterSyncWebhooks) Deliver(string) {} // queued by Record
