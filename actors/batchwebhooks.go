package actors

import (
	"errors"
	"time"

	"github.com/shotd/shotd"
)

// BatchSender makes one delivery attempt of a batch's webhook: webhook.Sender implements it.
type BatchSender interface {
	SendBatch(b shotd.Batch, jobs []shotd.Job) error
}

// deliverBatch asks for the next attempt of a batch's delivery, once its jobs all ended. Without
// resume it is a job's end, which starts the delivery only from waiting: several jobs ending at
// once start one. With resume it is the retry of a pending delivery (or the start's catch-up).
type deliverBatch struct {
	batchID string
	resume  bool
}

// BatchJobEnded tells the webhook actor that a job of batchID ended: when it was the last, and
// the batch has a webhook, its delivery starts.
func (w *Webhooks) BatchJobEnded(batchID string) {
	w.sys.Root.Send(w.pid, &deliverBatch{batchID: batchID})
}

// resumeBatch makes the next attempt of a batch delivery that is pending, or due.
func (w *Webhooks) resumeBatch(batchID string) {
	w.sys.Root.Send(w.pid, &deliverBatch{batchID: batchID, resume: true})
}

var errBatchNotDue = errors.New("the batch webhook is not due")

// attemptBatch makes one attempt of a batch's delivery; it returns the wait before the next one
// when it failed. The batch's webhook goes from "" to pending in the transaction that sees every
// job ended, so that two jobs ending at once start one delivery.
func (a *webhookActor) attemptBatch(batchID string, resume bool) (time.Duration, bool) {
	sender, ok := a.cfg.Sender.(BatchSender)
	if !ok {
		return 0, false
	}
	log := a.cfg.Log.With().Str("batch", batchID).Logger()
	var jobs []shotd.Job
	b, err := a.cfg.Store.UpdateBatch(batchID, func(b *shotd.Batch, js []shotd.Job) error {
		w := b.Webhook
		if w == nil || w.Status == shotd.WebhookDelivered || w.Status == shotd.WebhookFailed ||
			(w.Status == shotd.WebhookPending && !resume) {
			return errBatchNotDue
		}
		for _, j := range js {
			if !j.Final() {
				return errBatchNotDue
			}
		}
		w.Status = shotd.WebhookPending
		w.Attempts++
		w.NextAttemptAt = time.Time{}
		jobs = js
		return nil
	})
	if err != nil {
		return unrecorded(log, err, errBatchNotDue, "batch webhook")
	}
	sendErr := sender.SendBatch(b, jobs)
	return a.settleAttempt(log, b.Webhook.Attempts, sendErr, func(apply func(w *shotd.WebhookState)) error {
		_, err := a.cfg.Store.UpdateBatch(batchID, func(b *shotd.Batch, _ []shotd.Job) error {
			apply(b.Webhook)
			return nil
		})
		return err
	})
}
