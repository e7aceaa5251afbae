package actors

import (
	"errors"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
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
	if errors.Is(err, errBatchNotDue) || errors.Is(err, shotd.ErrNotFound) {
		return 0, false
	}
	if err != nil {
		log.Error().Err(err).Msg("batch webhook attempt not recorded; retrying later")
		return 30 * time.Second, true
	}
	n := b.Webhook.Attempts
	sendErr := sender.SendBatch(b, jobs)
	final := sendErr == nil || n > len(a.cfg.RetryDelays) || egress.IsRefused(sendErr)
	var wait time.Duration
	if !final {
		wait = a.cfg.RetryDelays[n-1]
	}
	if _, err := a.cfg.Store.UpdateBatch(batchID, func(b *shotd.Batch, _ []shotd.Job) error {
		switch {
		case sendErr == nil:
			b.Webhook.Status, b.Webhook.LastError = shotd.WebhookDelivered, ""
		case final:
			b.Webhook.Status, b.Webhook.LastError = shotd.WebhookFailed, sendErr.Error()
		default:
			b.Webhook.LastError, b.Webhook.NextAttemptAt = sendErr.Error(), time.Now().Add(wait).UTC()
		}
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("batch webhook outcome not recorded")
	}
	switch {
	case sendErr == nil:
		log.Info().Int("attempt", n).Msg("batch webhook delivered")
		a.attempted("delivered")
	case final:
		log.Warn().Err(sendErr).Int("attempt", n).Msg("batch webhook failed")
		a.attempted("failed")
	default:
		log.Warn().Err(sendErr).Int("attempt", n).Msg("batch webhook attempt failed")
		a.attempted("retry")
	}
	return wait, !final
}
