package actors

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/egress"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/store"
)

// WebhookSender makes one delivery attempt of an ended job's webhook (body, headers, signature,
// POST through the egress guard): webhook.Sender implements it. An error is a failed attempt.
type WebhookSender interface {
	Send(job shotd.Job) error
}

// WebhooksConfig wires the webhook actor.
type WebhooksConfig struct {
	Store       *store.Store
	Sender      WebhookSender
	RetryDelays []time.Duration // delay before attempt 2, 3, ...; then the delivery fails
	Log         zerolog.Logger
	// Attempted, when set, hears the outcome of every attempt: "delivered", "retry" (failed,
	// another attempt follows) or "failed" (the last one failed). For /metrics.
	Attempted func(outcome string)
}

// DeliverWebhook asks for the next attempt of a job's delivery.
type DeliverWebhook struct {
	JobID string
}

// webhookActor schedules deliveries. Each attempt runs in a goroutine that records the attempt
// in the store before it sends (cfg.Sender), so a crash repeats at most the attempt that was
// under way.
type webhookActor struct {
	cfg   WebhooksConfig
	owner *Webhooks
}

func (a *webhookActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*deliverBatch); ok {
		root, self := ctx.ActorSystem().Root, ctx.Self()
		a.owner.goRun(func() {
			if next, retry := a.attemptBatch(m.batchID, m.resume); retry {
				a.owner.after(next, func() { root.Send(self, &deliverBatch{batchID: m.batchID, resume: true}) })
			}
		})
		return
	}
	if m, ok := ctx.Message().(*DeliverWebhook); ok {
		root, self := ctx.ActorSystem().Root, ctx.Self()
		a.owner.goRun(func() {
			if next, retry := a.attempt(m.JobID); retry {
				a.owner.after(next, func() { root.Send(self, &DeliverWebhook{JobID: m.JobID}) })
			}
		})
	}
}

// attempt makes one delivery attempt; it returns the wait before the next one when it failed.
func (a *webhookActor) attempt(jobID string) (time.Duration, bool) {
	log := a.cfg.Log.With().Str("job", jobID).Logger()
	var n int
	job, err := a.cfg.Store.UpdateJob(jobID, func(j *shotd.Job) error {
		if j.Webhook == nil || j.Webhook.Status != shotd.WebhookPending {
			return errNothingToDeliver
		}
		j.Webhook.Attempts++
		j.Webhook.NextAttemptAt = time.Time{}
		n = j.Webhook.Attempts
		return nil
	})
	if err != nil {
		return unrecorded(log, err, errNothingToDeliver, "webhook")
	}
	sendErr := a.cfg.Sender.Send(job)
	return a.settleAttempt(log, n, sendErr, func(apply func(w *shotd.WebhookState)) error {
		_, err := a.cfg.Store.UpdateJob(jobID, func(j *shotd.Job) error {
			apply(j.Webhook)
			return nil
		})
		return err
	})
}

// unrecorded is what an attempt whose start could not be written leaves, for a job's webhook or
// a batch's: nothing more when there is nothing due (notDue) or no such record, else another try
// in 30 seconds, as the store's refusal may pass.
func unrecorded(log zerolog.Logger, err, notDue error, what string) (time.Duration, bool) {
	if errors.Is(err, notDue) || errors.Is(err, shotd.ErrNotFound) {
		return 0, false
	}
	log.Error().Err(err).Msg(what + " attempt not recorded; retrying later")
	return 30 * time.Second, true
}

// NextAttempt decides what attempt n of a delivery (of a job's or a batch's webhook), which
// ended with sendErr, leaves: delivered; failed, after the last of delays or at once when the
// egress guard refused the receiver (retrying would only knock again); or still pending, with
// the wait before the next attempt. outcome names it for metrics: delivered, failed or retry.
// Both schedulers of deliveries (this actor's and the cluster's) decide here.
func NextAttempt(n int, sendErr error, delays []time.Duration) (status string, wait time.Duration, outcome string) {
	switch {
	case sendErr == nil:
		return shotd.WebhookDelivered, 0, "delivered"
	case n > len(delays) || egress.IsRefused(sendErr):
		return shotd.WebhookFailed, 0, "failed"
	default:
		return shotd.WebhookPending, delays[n-1], "retry"
	}
}

// settleAttempt records the outcome of attempt n through update, which applies it to the
// delivery's state in one write; it logs it and returns the wait before the next attempt, if
// one follows. Job and batch deliveries share it.
func (a *webhookActor) settleAttempt(log zerolog.Logger, n int, sendErr error, update func(apply func(w *shotd.WebhookState)) error) (time.Duration, bool) {
	status, wait, outcome := NextAttempt(n, sendErr, a.cfg.RetryDelays)
	if err := update(func(w *shotd.WebhookState) {
		w.Status, w.LastError = status, ""
		if sendErr != nil {
			w.LastError = sendErr.Error()
		}
		if status == shotd.WebhookPending {
			w.NextAttemptAt = time.Now().Add(wait).UTC()
		}
	}); err != nil {
		log.Error().Err(err).Str("outcome", outcome).Msg("webhook outcome not recorded")
	}
	if sendErr == nil {
		log.Info().Int("attempt", n).Msg("webhook delivered")
	} else {
		log.Warn().Err(sendErr).Int("attempt", n).Bool("final", status == shotd.WebhookFailed).Msg("webhook attempt failed")
	}
	a.attempted(outcome)
	return wait, status == shotd.WebhookPending
}

func (a *webhookActor) attempted(outcome string) {
	if a.cfg.Attempted != nil {
		a.cfg.Attempted(outcome)
	}
}

var errNothingToDeliver = errors.New("nothing to deliver")

// Webhooks is the front of the webhook actor.
type Webhooks struct {
	sys *actor.ActorSystem
	pid *actor.PID

	mu       sync.Mutex
	stopping bool
	timers   map[*time.Timer]bool
	running  sync.WaitGroup
}

// StartWebhooks spawns the webhook actor and resumes the deliveries a previous run left pending.
func StartWebhooks(sys *actor.ActorSystem, cfg WebhooksConfig) (*Webhooks, error) {
	if cfg.Store == nil || cfg.Sender == nil {
		return nil, errors.New("actors: webhooks need a store and a sender")
	}
	pending, err := cfg.Store.PendingWebhooks()
	if err != nil {
		return nil, err
	}
	batches, err := cfg.Store.BatchWebhooksDue()
	if err != nil {
		return nil, err
	}
	w := &Webhooks{sys: sys, timers: map[*time.Timer]bool{}}
	pid, err := sys.Root.SpawnNamed(topProps(func() actor.Actor {
		return &webhookActor{cfg: cfg, owner: w}
	}), "webhooks")
	if err != nil {
		return nil, err
	}
	w.pid = pid
	for _, j := range pending {
		wait := time.Until(j.Webhook.NextAttemptAt)
		id := j.JobID
		w.after(max(wait, 0), func() { sys.Root.Send(pid, &DeliverWebhook{JobID: id}) })
	}
	for _, b := range batches {
		// A pending delivery waits for its retry time, as a job's does.
		id := b.BatchID
		w.after(max(time.Until(b.At), 0), func() { w.resumeBatch(id) })
	}
	return w, nil
}

// Deliver starts the delivery of a finished job's webhook.
func (w *Webhooks) Deliver(jobID string) { w.sys.Root.Send(w.pid, &DeliverWebhook{JobID: jobID}) }

// goRun runs f in a tracked goroutine unless the webhooks are stopping; a delivery not started
// stays pending in the store and resumes at the next start.
func (w *Webhooks) goRun(f func()) { proc.Go(&w.mu, &w.stopping, &w.running, f) }

func (w *Webhooks) after(d time.Duration, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		w.mu.Lock()
		delete(w.timers, t)
		w.mu.Unlock()
		f()
	})
	w.timers[t] = true
}

// Close stops the timers and waits, up to ctx, for attempts under way.
func (w *Webhooks) Close(ctx context.Context) error {
	w.mu.Lock()
	w.stopping = true
	for t := range w.timers {
		t.Stop()
	}
	w.timers = nil
	w.mu.Unlock()
	if err := proc.WaitGroup(ctx, &w.running); err != nil {
		return err
	}
	return w.sys.Root.StopFuture(w.pid).Wait()
}
