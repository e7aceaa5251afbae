package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/proc"
)

// The work-queue stream of jobs and webhook deliveries: one message per job to render and per
// webhook to deliver, each taken by one node at a time through a durable pull consumer and
// removed when that node acknowledges it. A node that dies without acknowledging leaves its
// messages to be delivered again, to another node, once their ack wait passes.
const (
	StreamWork  = "SHOTD_WORK"
	subjectJob  = "shotd.work.job"
	subjectHook = "shotd.work.hook"
	consumerJob = "jobs"
	consumerHk  = "hooks"
)

// hookAckWait is the ack wait of webhook deliveries: one whose node died is made again after
// it (a delivery under way reports progress every third of it).
const hookAckWait = 30 * time.Second

// workMsg is a message of the work stream; its version lets a node refuse one it does not know.
type workMsg struct {
	V    int    `json:"v"`
	Kind string `json:"kind"` // "job" (render it), "hook" (a job's webhook), "batch" (a batch's)
	ID   string `json:"id"`
}

// Sender makes one attempt of a webhook delivery: webhook.Sender.
type Sender interface {
	Send(job shotd.Job) error
	SendBatch(b shotd.Batch, jobs []shotd.Job) error
}

// JobsConfig wires the cluster's job queue.
type JobsConfig struct {
	Ledger   *Ledger
	Renderer actors.JobRenderer // renders a job's page and stores its file (cluster.Files)
	// Secrets seals the credentials of a job's options in its record and opens them on the node
	// that renders it: the cluster's sealer (OpenSealer), the same on every node. nil: jobs
	// with credentials are refused.
	Secrets actors.Secrets
	Sender  Sender // nil: no deliveries
	// RetryDelays are the waits before a webhook's attempt 2, 3, ...; then it fails.
	RetryDelays []time.Duration
	// Capacity is how many jobs this node renders at once (its render slots; -1: none); Free, when set,
	// is how many render slots are free now (sync renders take them too). A node fetches jobs
	// only while it has both.
	Capacity int
	Free     func() int
	// AckWait: a job whose node neither acknowledges nor reports progress for this long is
	// delivered again (default 30 s; a rendering node reports every third of it).
	AckWait time.Duration
	// SlotRetry is how long a job's message waits in the stream, given back, after its account
	// had no concurrency slot free (1 s). A job's deliveries are not bounded (a bound would leave
	// a job never ended); its renders are, by shotd.MaxJobInterruptions starts in its record.
	SlotRetry    time.Duration
	revokeSettle time.Duration                               // tests: DeleteAccount's wait between its reads of the jobs
	Ended        func(shotd.Job)                             // hears every job whose end this node recorded
	Failed       func(accountID string)                      // hears every render of a job that failed by the page's fault (Rates.CountJobFailure)
	Attempted    func(string)                                // hears every webhook attempt: delivered, retry, failed
	onRead       func(key string)                            // tests: hears every read of a job or batch record
	preClaim     func(id string)                             // tests: runs before a job's render claims its reservation
	retry        time.Duration                               // tests: the wait before a job's message comes again after an error
	published    func(workMsg)                               // tests: hears every message this node publishes
	wrapKV       func(jetstream.KeyValue) jetstream.KeyValue // tests: the jobs bucket as this node sees it
	Log          zerolog.Logger
}

// Jobs is the job queue of cluster mode: job and batch records in the replicated jobs bucket,
// their work in the work-queue stream. It serves httpd's JobQueue and JobRecords.
type Jobs struct {
	cfg  JobsConfig
	node string
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	log  zerolog.Logger

	jobCons, hookCons jetstream.Consumer

	life    context.Context // cancelled when Close gives up waiting: the renders stop
	cut     context.CancelFunc
	stopped chan struct{} // closed by Close: no more fetching
	once    sync.Once
	loops   sync.WaitGroup
	running sync.WaitGroup

	mu                sync.Mutex
	inRun             map[string]bool // jobs this node runs now, whatever message brought them
	holding           atomic.Int64    // jobs this node holds
	succeeded, failed atomic.Uint64
	slotWaits         atomic.Uint64    // jobs given back to the stream for want of a slot
	onRead            func(key string) // tests: hears every read of a job or batch record
}

// OpenJobs creates (or adopts) the work stream and its consumers and starts fetching.
func OpenJobs(ctx context.Context, n *Node, cfg JobsConfig) (*Jobs, error) {
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 1 // below 0: this node takes no job
	}
	if cfg.SlotRetry <= 0 {
		cfg.SlotRetry = time.Second
	}
	j := &Jobs{cfg: cfg, node: n.NodeName(), kv: n.Jobs, js: n.js, log: cfg.Log, stopped: make(chan struct{})}
	j.life, j.cut = context.WithCancel(context.Background())
	if cfg.wrapKV != nil {
		j.kv = cfg.wrapKV(j.kv)
	}
	sc := jetstream.StreamConfig{Name: StreamWork, Description: "shotd jobs and webhooks", Subjects: []string{"shotd.work.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: n.Replicas(), Duplicates: 2 * time.Minute}
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		if _, err = n.js.CreateOrUpdateStream(actx, sc); err == nil {
			j.jobCons, err = n.js.CreateOrUpdateConsumer(actx, StreamWork, jetstream.ConsumerConfig{Durable: consumerJob,
				FilterSubject: subjectJob, AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait, MaxDeliver: -1,
				MaxAckPending: -1})
		}
		if err == nil {
			j.hookCons, err = n.js.CreateOrUpdateConsumer(actx, StreamWork, jetstream.ConsumerConfig{Durable: consumerHk,
				FilterSubject: subjectHook, AckPolicy: jetstream.AckExplicitPolicy, AckWait: hookAckWait, MaxDeliver: -1,
				MaxAckPending: -1})
		}
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cluster: work stream: %w", err)
		}
		j.log.Info().Err(err).Msg("waiting for the work stream")
		time.Sleep(500 * time.Millisecond)
	}
	j.loops.Add(2)
	go j.fetchLoop(j.jobCons, func() int { return j.room() }, j.handleJob)
	go j.fetchLoop(j.hookCons, func() int { return 4 }, j.handleHook)
	return j, nil
}

// room is how many more jobs this node takes now. A job whose account has no concurrency slot
// free is given back to the stream rather than held: held, a bulk of one account would fill
// every node's room and stop the jobs of every other account behind it.
func (j *Jobs) room() int {
	n := j.cfg.Capacity - int(j.holding.Load())
	if n > 0 && j.cfg.Free != nil {
		n = min(n, j.cfg.Free())
	}
	return n
}

// fetchLoop pulls at most room() messages at a time and handles each in its own goroutine.
func (j *Jobs) fetchLoop(c jetstream.Consumer, room func() int, handle func(jetstream.Msg)) {
	defer j.loops.Done()
	var sem atomic.Int64 // handlers of this loop
	for {
		select {
		case <-j.stopped:
			return
		default:
		}
		n := room()
		if c == j.hookCons {
			n -= int(sem.Load())
		}
		if n <= 0 {
			select {
			case <-j.stopped:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		batch, err := c.Fetch(n, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			select {
			case <-j.stopped:
				return
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for msg := range batch.Messages() {
			sem.Add(1)
			if c == j.jobCons {
				j.holding.Add(1)
			}
			j.running.Add(1)
			go func() {
				defer j.running.Done()
				defer sem.Add(-1)
				if c == j.jobCons {
					defer j.holding.Add(-1)
				}
				handle(msg)
			}()
		}
	}
}

// readMsg reads a work message; one of a version this node does not know is left to another.
func (j *Jobs) readMsg(msg jetstream.Msg) (workMsg, bool) {
	var m workMsg
	if err := decode(j.log, "work message", msg.Subject(), msg.Data(), &m); err != nil {
		_ = msg.NakWithDelay(j.retryAfter(10 * time.Second))
		return m, false
	}
	return m, true
}

// slotWait is how long a job without a slot waits in the stream: SlotRetry times its
// deliveries so far, up to ten. The stream gives messages due again before new ones, so a fixed
// wait shorter than a pass over one account's backlog would starve every job queued behind it;
// a growing one lets them through once the wait exceeds the pass (a backlog of thousands).
func (j *Jobs) slotWait(msg jetstream.Msg) time.Duration {
	n := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		n = min(max(md.NumDelivered, 1), 10)
	}
	return j.cfg.SlotRetry * time.Duration(n)
}

// retryAfter is the wait before a message that could not be handled comes again: d, or the
// tests' own. However many times it comes, it is not dropped: a bound on deliveries would leave
// a job that met errors on its last one (or a message of a newer node, in a rolling restart)
// never ended.
func (j *Jobs) retryAfter(d time.Duration) time.Duration {
	if j.cfg.retry > 0 {
		return j.cfg.retry
	}
	return d
}

// keepAlive reports progress on msg every third of wait until the returned func is called.
func keepAlive(msg jetstream.Msg, wait time.Duration) func() {
	done := make(chan struct{})
	go every(done, wait/3, func() { _ = msg.InProgress() })
	return func() { close(done) }
}

// errStopping: the node stops before the job's render started.
var errStopping = errors.New("cluster: the node is stopping")

// errNoSlot: every concurrency slot of the job's account is taken; the job waits in the stream.
var errNoSlot = errors.New("cluster: no concurrency slot of the account is free")

// errNotOwner: another node took the job over (this one was taken for dead); its outcome wins.
var errNotOwner = errors.New("cluster: the job is another node's now")

func (j *Jobs) handleJob(msg jetstream.Msg) {
	m, ok := j.readMsg(msg)
	if !ok {
		return
	}
	stop := keepAlive(msg, j.cfg.AckWait)
	err := j.runJob(m.ID)
	stop()
	switch {
	case err == nil:
		if aerr := msg.DoubleAck(context.Background()); aerr != nil {
			j.log.Warn().Err(aerr).Str("job", m.ID).Msg("job message not acknowledged; it comes again, and finds the job ended")
		}
	case errors.Is(err, errNotOwner):
		// The message is the other node's delivery now: leave it.
	case errors.Is(err, errNoSlot):
		_ = msg.NakWithDelay(j.slotWait(msg)) // back to the stream: the jobs behind it go on
	case j.life.Err() != nil, errors.Is(err, errStopping):
		_ = msg.Nak() // shutting down: another node takes it at once
	default:
		j.log.Warn().Err(err).Str("job", m.ID).Msg("job not done; delivered again later")
		_ = msg.NakWithDelay(j.retryAfter(2 * time.Second))
	}
}

// runJob takes a job through its render to its end. nil: the message is done with (the job
// ended, or was gone); an error leaves it to a later delivery.
func (j *Jobs) runJob(id string) error {
	ctx := j.life
	if !j.enter(id) {
		// This node runs the job already (a second message of it): this one waits.
		return errNoSlot
	}
	defer j.leave(id)
	r, _, err := j.getJob(ctx, id)
	switch {
	case errors.Is(err, shotd.ErrNotFound):
		return nil
	case err != nil:
		return err
	case r.Job.Final():
		return j.afterEnd(ctx, r) // its node died before it passed the end on
	case r.Billing:
		return j.bill(ctx, r, r.Node, r.Starts)
	case r.Starts >= shotd.MaxJobInterruptions:
		e := shotd.Errorf(shotd.CodeInternalError, "the nodes rendering this job stopped %d times; it is not tried again", r.Starts)
		return j.fail(ctx, r, "", r.Starts, e)
	}
	// A concurrency slot of the account, across the cluster: without one the job goes back to
	// the stream for a while (errNoSlot).
	if j.cfg.preClaim != nil {
		j.cfg.preClaim(id)
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := j.cfg.Ledger.Claim(cctx, r.Hold, r.Concurrency)
		cancel()
		if err == nil {
			break
		}
		switch shotd.CodeOf(err) {
		case shotd.CodeConcurrencyLimit:
			j.slotWaits.Add(1)
			return errNoSlot
		}
		if errors.Is(err, errClaimed) {
			j.slotWaits.Add(1)
			return errNoSlot // another node renders it: this message comes back, and finds it ended
		}
		switch shotd.CodeOf(err) {
		case shotd.CodeQuotaExceeded:
			// Its reservation lapsed (the node that held it died) and the quota filled since.
			e := shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots was used up before the job could render", r.Hold.Quota)
			return j.fail(ctx, r, "", r.Starts, e)
		}
		if errors.Is(err, ErrBilled) {
			// Billed since it was read: if its record says so, the success is recorded, not lost.
			if cur, _, gerr := j.getJob(ctx, id); gerr != nil {
				return gerr
			} else if cur.Billing {
				return j.bill(ctx, cur, cur.Node, cur.Starts)
			}
			return j.fail(ctx, r, "", r.Starts, shotd.Errorf(shotd.CodeInternalError, "the job's render was billed and its result lost"))
		}
		return err
	}
	hold, starts := r.Hold, r.Starts+1
	r, err = j.updateJob(ctx, id, func(r *jobRecord) error {
		if r.Node == j.node && r.Starts == starts && r.Job.Status == shotd.JobRendering && !r.Job.Final() && !r.Billing {
			return errUnchanged // this write landed, its answer lost (enter: no other run here)
		}
		if r.Job.Final() || r.Billing || r.Starts >= starts {
			return errNotOwner // another delivery got here first
		}
		r.Job.Status, r.Job.StartedAt, r.Node, r.Starts = shotd.JobRendering, time.Now().UTC(), j.node, starts
		return nil
	})
	if err != nil {
		j.unclaim(hold, r, err)
		return err
	}
	var o shotd.Options
	var result *shotd.JobResult
	outcome := shotd.OutcomeFailed
	err = json.Unmarshal(r.Job.Options, &o)
	if err != nil {
		err = shotd.Wrap(shotd.CodeInternalError, err, "the job's options could not be read")
	} else if o.HasSecrets() {
		if j.cfg.Secrets == nil {
			err = shotd.Errorf(shotd.CodeInternalError, "this node cannot open the job's credentials")
		} else {
			// Sealed with the cluster's key, whichever node queued the job.
			err = j.cfg.Secrets.OpenOptions(&o)
		}
	}
	if err == nil {
		result, outcome, err = j.cfg.Renderer.Run(ctx, &o, r.Job.AccountID)
	}
	if ctx.Err() != nil {
		// Cut by the shutdown: the job is queued again for another node; its reservation
		// stays, without its slot, which that node claims.
		bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		queued := false
		_, uerr := j.updateJob(bctx, id, func(r *jobRecord) error {
			if queued = r.Node == j.node && r.Starts == starts && !r.Job.Final() && !r.Billing; !queued {
				return errUnchanged
			}
			r.Job.Status, r.Starts = shotd.JobQueued, starts-1
			return nil
		})
		if uerr == nil && queued {
			_ = j.cfg.Ledger.Yield(bctx, hold)
		}
		return ctx.Err()
	}
	if err != nil {
		if outcome == shotd.OutcomeFailed && j.cfg.Failed != nil {
			j.cfg.Failed(r.Job.AccountID) // against the account's failure limits, as on a single node
		}
		return j.fail(ctx, r, j.node, starts, err)
	}
	if outcome == shotd.OutcomeCacheHit { // served from the cache: not billed, as a sync hit
		return j.end(ctx, r, j.node, starts, result, nil)
	}
	r, err = j.updateJob(ctx, id, func(r *jobRecord) error {
		if r.Node != j.node || r.Starts != starts || r.Job.Final() {
			return errNotOwner
		}
		if r.Billing {
			return errUnchanged // this write landed, its answer lost
		}
		r.Billing, r.Result = true, result
		return nil
	})
	if err != nil {
		j.unclaim(hold, r, err)
		return err
	}
	return j.bill(ctx, r, j.node, starts)
}

// enter marks job id as run by this node, unless it is already: false then.
func (j *Jobs) enter(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.inRun[id] {
		return false
	}
	if j.inRun == nil {
		j.inRun = map[string]bool{}
	}
	j.inRun[id] = true
	return true
}

func (j *Jobs) leave(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.inRun, id)
}

// unclaim gives back h, the reservation that this node claimed for a job it does not bill, err
// being why (from updateJob, r the record as it read it): dropped when the job ended or is gone
// (a duplicate delivery ended it), the renderer's again when another node renders or bills it.
// Kept, it would be renewed for ever, a unit of quota and a slot of the account lost. Any other
// error leaves it to the job's next delivery, which claims it again.
func (j *Jobs) unclaim(h Hold, r jobRecord, err error) {
	owner := ""
	switch {
	case errors.Is(err, shotd.ErrNotFound), errors.Is(err, errNotOwner) && r.Job.Final():
	case errors.Is(err, errNotOwner) && r.Node != "" && r.Node != j.node:
		owner = r.Node
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if uerr := j.cfg.Ledger.Unclaim(ctx, h, owner); uerr != nil {
		j.log.Warn().Err(uerr).Str("reservation", h.ID).Msg("reservation of a job not given back; its lease ends it")
	}
}

// bill bills a rendered job and records its success; a reservation lost past the quota ends it
// failed instead (the quota holds). Settle is idempotent, so a job whose node died between the
// bill and the record of its success is not billed again.
func (j *Jobs) bill(ctx context.Context, r jobRecord, node string, starts int) error {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err := j.cfg.Ledger.Settle(sctx, r.Hold, true)
	cancel()
	if errors.Is(err, errGone) {
		// The job ended meanwhile (its end forgets its bill after it is recorded), or its
		// reservation expired while this node was cut off: claimed again, and billed.
		cur, _, gerr := j.getJob(ctx, r.Job.JobID)
		switch {
		case gerr != nil:
			return gerr
		case cur.Job.Final():
			return j.afterEnd(ctx, cur)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = j.cfg.Ledger.Claim(cctx, r.Hold, r.Concurrency)
		cancel()
		if err == nil {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err = j.cfg.Ledger.Settle(sctx, r.Hold, true)
			cancel()
		}
		if shotd.CodeOf(err) == shotd.CodeQuotaExceeded {
			err = errLost
		}
	}
	if errors.Is(err, errLost) {
		e := shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots was used up while the job's reservation was lost", r.Hold.Quota)
		return j.finish(ctx, r, node, starts, nil, e)
	}
	if err != nil {
		return err
	}
	return j.finish(ctx, r, node, starts, r.Result, nil)
}

// fail ends a job failed with err and drops its reservation unbilled.
func (j *Jobs) fail(ctx context.Context, r jobRecord, node string, starts int, err error) error {
	return j.end(ctx, r, node, starts, nil, err)
}

// end records a job's end that needs no bill and drops its reservation.
func (j *Jobs) end(ctx context.Context, r jobRecord, node string, starts int, result *shotd.JobResult, err error) error {
	return j.finish(ctx, r, node, starts, result, err)
}

// finish records the end of a job whose render (if any) was node's starts-th: succeeded with
// result, or failed with err; once the end is recorded its reservation (if any) is dropped
// unbilled and its bill forgotten. Then the end is passed on (afterEnd).
func (j *Jobs) finish(ctx context.Context, r jobRecord, node string, starts int, result *shotd.JobResult, err error) error {
	final, uerr := j.updateJob(ctx, r.Job.JobID, func(r *jobRecord) error {
		if r.Job.Final() {
			return errNotOwner
		}
		if node != "" && (r.Node != node || r.Starts != starts) {
			return errNotOwner
		}
		if err != nil {
			e := shotd.AsError(err)
			r.Job.Status, r.Job.ErrorCode, r.Job.ErrorMessage, r.Job.Result = shotd.JobFailed, string(e.Code), e.Message, nil
		} else {
			r.Job.Status, r.Job.Result, r.Job.ErrorCode, r.Job.ErrorMessage = shotd.JobSucceeded, result, "", ""
		}
		r.Billing, r.Result = false, nil
		return nil
	})
	if errors.Is(uerr, errNotOwner) && final.Job.Final() {
		return j.afterEnd(ctx, final)
	}
	if uerr != nil {
		return uerr
	}
	// Its reservation dropped, its bill forgotten: the record keeps no job's bill longer
	// than the job lasts. Failed, the sweeper does it.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if serr := j.cfg.Ledger.End(sctx, r.Hold); serr != nil {
		j.log.Warn().Err(serr).Str("job", r.Job.JobID).Msg("reservation or bill of an ended job left; the sweeper drops it")
	}
	cancel()
	if final.Job.Status == shotd.JobSucceeded {
		j.succeeded.Add(1)
	} else {
		j.failed.Add(1)
		j.log.Info().Str("job", r.Job.JobID).Str("code", final.Job.ErrorCode).Msg("job failed")
	}
	if j.cfg.Ended != nil {
		j.cfg.Ended(final.Job)
	}
	return j.afterEnd(ctx, final)
}

// afterEnd queues the deliveries an ended job calls for: its webhook, and its batch's once
// every job of the batch ended. Each is queued once: its record says when its message is in the
// stream (HookQueued), and a delivery already made is not made again. Run again after a node
// died between the message and the record, it queues it again, which the stream drops as a
// duplicate within two minutes.
func (j *Jobs) afterEnd(ctx context.Context, r jobRecord) error {
	if j.cfg.Sender == nil {
		return nil
	}
	if w := r.Job.Webhook; w != nil && w.Status == shotd.WebhookPending && !r.HookQueued {
		if err := j.publish(ctx, workMsg{Kind: "hook", ID: r.Job.JobID}); err != nil {
			return err
		}
		if _, err := j.updateJob(ctx, r.Job.JobID, func(r *jobRecord) error {
			if r.HookQueued {
				return errUnchanged
			}
			r.HookQueued = true
			return nil
		}); err != nil {
			return err
		}
	}
	if r.Job.BatchID == "" {
		return nil
	}
	b, _, err := j.getBatch(ctx, r.Job.BatchID)
	if err != nil || b.Batch.Webhook == nil || b.Batch.Webhook.Status == shotd.WebhookDelivered || b.Batch.Webhook.Status == shotd.WebhookFailed {
		return err
	}
	if b.Batch.Webhook.Status == "" {
		ended := b.Ended
		for ended < len(b.Batch.JobIDs) {
			bj, _, err := j.getJob(ctx, b.Batch.JobIDs[ended])
			if err != nil {
				return err
			}
			if !bj.Job.Final() {
				break // its end moves the count on
			}
			ended++
		}
		if ended == b.Ended {
			return nil
		}
		// Two last jobs ending at once on two nodes both get here: one delivery.
		all := ended == len(b.Batch.JobIDs)
		if _, err := j.updateBatch(ctx, b.Batch.BatchID, func(b *batchRecord) error {
			if b.Batch.Webhook.Status != "" || b.Ended >= ended {
				return errUnchanged
			}
			b.Ended = ended
			if all {
				b.Batch.Webhook.Status = shotd.WebhookPending
			}
			return nil
		}); err != nil {
			return err
		}
		if !all {
			return nil // the job its count stopped at queues it
		}
	} else if b.HookQueued {
		return nil
	}
	if err := j.publish(ctx, workMsg{Kind: "batch", ID: b.Batch.BatchID}); err != nil {
		return err
	}
	_, err = j.updateBatch(ctx, b.Batch.BatchID, func(b *batchRecord) error {
		if b.HookQueued {
			return errUnchanged
		}
		b.HookQueued = true
		return nil
	})
	return err
}

// publish puts a message on the work stream, retried until ctx ends; its id makes a retry (or
// a second node's publish of it) a duplicate that the stream drops.
func (j *Jobs) publish(ctx context.Context, m workMsg) error {
	m.V = recordVersion
	data, _ := json.Marshal(m)
	subject := subjectJob
	if m.Kind != "job" {
		subject = subjectHook
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := j.js.Publish(actx, subject, data, jetstream.WithMsgID(m.Kind+"-"+m.ID))
		cancel()
		if err == nil {
			if j.cfg.published != nil {
				j.cfg.published(m)
			}
			return nil
		}
		if attempt >= 10 || !j.pause(ctx, attempt) {
			return fmt.Errorf("cluster: queue %s %s: %w", m.Kind, m.ID, err)
		}
	}
}

// handleHook makes one attempt of a webhook delivery; a failed one comes back after the retry
// delay (a negative acknowledgement with that delay), and the attempts are counted in the
// record, so that the schedule survives any node's death.
func (j *Jobs) handleHook(msg jetstream.Msg) {
	m, ok := j.readMsg(msg)
	if !ok {
		return
	}
	if j.cfg.Sender == nil { // a node without deliveries leaves them to the others
		_ = msg.NakWithDelay(hookAckWait)
		return
	}
	stop := keepAlive(msg, hookAckWait)
	var wait time.Duration
	var err error
	if m.Kind == "batch" {
		wait, err = j.attemptBatch(m.ID)
	} else {
		wait, err = j.attemptJob(m.ID)
	}
	stop()
	switch {
	case errors.Is(err, errNoRecord) && young(msg): // RecordFinished writes it now
		_ = msg.NakWithDelay(time.Second)
	case errors.Is(err, errNoRecord): // a job deleted, or a record never written
		_ = msg.Ack()
	case err != nil:
		j.log.Warn().Err(err).Str("id", m.ID).Msg("webhook attempt not recorded; tried again later")
		_ = msg.NakWithDelay(5 * time.Second)
	case wait > 0:
		_ = msg.NakWithDelay(wait)
	default:
		_ = msg.Ack()
	}
}

var errNothingToDeliver = errors.New("cluster: nothing to deliver")

// beginAttempt counts the next attempt of a pending delivery, in the write before it is made.
func beginAttempt(w *shotd.WebhookState) error {
	if w == nil || w.Status != shotd.WebhookPending {
		return errNothingToDeliver
	}
	w.Attempts++
	w.NextAttemptAt = time.Time{}
	return nil
}

// attemptStarted reads the outcome of beginAttempt's write: stop when there is nothing to
// deliver (done: err nil) or the write failed (err).
func attemptStarted(err error) (stop bool, _ error) {
	if errors.Is(err, errNothingToDeliver) || errors.Is(err, shotd.ErrNotFound) {
		return true, nil
	}
	return err != nil, err
}

// attemptJob makes one attempt of a job's webhook: the attempt is recorded before it is sent,
// so a node dying mid-way repeats at most that attempt (at least once, never lost).
func (j *Jobs) attemptJob(id string) (time.Duration, error) {
	ctx := context.Background()
	r, err := j.updateJob(ctx, id, func(r *jobRecord) error { return beginAttempt(r.Job.Webhook) })
	if errors.Is(err, shotd.ErrNotFound) {
		return 0, errNoRecord
	}
	if stop, err := attemptStarted(err); stop {
		return 0, err
	}
	job := r.Job
	sendErr := j.cfg.Sender.Send(job)
	n := job.Webhook.Attempts
	return j.outcome(n, sendErr, func(status, lastErr string, next time.Time) error {
		_, err := j.updateJob(ctx, id, func(r *jobRecord) error {
			return setOutcome(r.Job.Webhook, n, status, lastErr, next)
		})
		return err
	}, j.log.With().Str("job", id).Logger())
}

// setOutcome records attempt n's outcome in w, unless a later attempt began meanwhile (two
// deliveries of one message overlapped: a redelivery after the ack wait while a slow send went
// on), whose outcome is the one to keep; a delivery counts whichever attempt made it. A
// delivery that ended already is left as it is.
func setOutcome(w *shotd.WebhookState, n int, status, lastErr string, next time.Time) error {
	if w == nil || w.Status != shotd.WebhookPending || (w.Attempts != n && status != shotd.WebhookDelivered) {
		return errUnchanged
	}
	w.Status, w.LastError, w.NextAttemptAt = status, lastErr, next
	return nil
}

// attemptBatch makes one attempt of a batch's webhook, as attemptJob.
func (j *Jobs) attemptBatch(id string) (time.Duration, error) {
	ctx := context.Background()
	// Its jobs are read before the attempt is counted: a failed read uses up no attempt.
	b, _, err := j.getBatch(ctx, id)
	if stop, err := attemptStarted(err); stop {
		return 0, err
	}
	if w := b.Batch.Webhook; w == nil || w.Status != shotd.WebhookPending {
		return 0, nil
	}
	jobs, err := j.batchJobs(ctx, b.Batch)
	if err != nil {
		return 0, err
	}
	b, err = j.updateBatch(ctx, id, func(r *batchRecord) error { return beginAttempt(r.Batch.Webhook) })
	if stop, err := attemptStarted(err); stop {
		return 0, err
	}
	sendErr := j.cfg.Sender.SendBatch(b.Batch, jobs)
	n := b.Batch.Webhook.Attempts
	return j.outcome(n, sendErr, func(status, lastErr string, next time.Time) error {
		_, err := j.updateBatch(ctx, id, func(r *batchRecord) error {
			return setOutcome(r.Batch.Webhook, n, status, lastErr, next)
		})
		return err
	}, j.log.With().Str("batch", id).Logger())
}

// outcome records attempt n's result through set (the schedule is actors.NextAttempt's, as on
// a single node) and returns the wait before the next attempt (0: none).
func (j *Jobs) outcome(n int, sendErr error, set func(status, lastErr string, next time.Time) error, log zerolog.Logger) (time.Duration, error) {
	status, wait, outcome := actors.NextAttempt(n, sendErr, j.cfg.RetryDelays)
	lastErr, next := "", time.Time{}
	if sendErr != nil {
		lastErr = sendErr.Error()
	}
	if status == shotd.WebhookPending {
		next = time.Now().Add(wait).UTC()
	}
	setErr := set(status, lastErr, next)
	if setErr != nil {
		log.Error().Err(setErr).Msg("webhook outcome not recorded")
	}
	if sendErr != nil {
		log.Warn().Err(sendErr).Int("attempt", n).Str("outcome", outcome).Msg("webhook attempt failed")
	} else {
		log.Info().Int("attempt", n).Msg("webhook delivered")
	}
	if j.cfg.Attempted != nil {
		j.cfg.Attempted(outcome)
	}
	if setErr != nil && status != shotd.WebhookPending {
		// Acknowledged, the message would leave the record pending for ever: it comes back
		// instead, and the delivery is made once more (at least once).
		return 0, setErr
	}
	return wait, nil
}

// Submit queues the jobs of req: their quota is reserved in the ledger (all or none:
// quota_exceeded), their records written, their messages queued; then they are the cluster's,
// and each ends succeeded or failed whatever node dies. timeout bounds the whole.
func (j *Jobs) Submit(req shotd.JobRequest, timeout time.Duration) ([]shotd.Job, *shotd.Batch, error) {
	for _, o := range req.Options {
		if o.HasSecrets() && j.cfg.Secrets == nil {
			return nil, nil, shotd.Errorf(shotd.CodeInvalidRequest, "async jobs with store=true or a proxy are not available on this node; render synchronously")
		}
	}
	now := time.Now().UTC()
	jobs, batch, err := actors.NewJobRecords(req, j.cfg.Secrets, now)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	start, end := shotd.BillingPeriod(req.Account.CreatedAt, now)
	key := LedgerKey(req.Account.ID, start)
	ids := make([]string, len(jobs))
	for i, jb := range jobs {
		ids[i] = jb.JobID
	}
	rctx, rcancel := context.WithTimeout(ctx, timeout)
	holds, _, err := j.cfg.Ledger.ReserveJobs(rctx, key, req.Plan.MonthlyQuota, req.Plan.QueueLimit, ids)
	rcancel()
	if shotd.CodeOf(err) == shotd.CodeQueueLimit {
		return nil, nil, err // refused as read: nothing written
	}
	if shotd.CodeOf(err) == shotd.CodeQuotaExceeded {
		return nil, nil, shotd.Errorf(shotd.CodeQuotaExceeded, "the monthly quota of %d screenshots is used up until %s",
			req.Plan.MonthlyQuota, end.Format(time.RFC3339))
	}
	if err != nil {
		// The reservations' write may have landed with its answer lost (the ledger's leader
		// died): they would hold the quota for JobLease with no job. Dropped.
		j.undoSubmit(key, ids, nil, err)
		return nil, nil, err
	}
	// No record is written past submitRecordsWithin from the start: a deletion of the account
	// that revoked its keys meanwhile reads its jobs again after that (DeleteAccount).
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	defer wcancel()
	wctx, wcancel2 := context.WithDeadline(wctx, now.Add(submitRecordsWithin))
	defer wcancel2()
	records := make([]string, 0, len(jobs)+1)
	for _, jb := range jobs {
		records = append(records, jobKey(jb.JobID))
	}
	if batch != nil {
		records = append(records, batchKey(batch.BatchID))
		err = j.create(wctx, batchKey(batch.BatchID), &batchRecord{Batch: *batch})
	}
	if err == nil {
		err = parallel(len(jobs), func(i int) error {
			return j.create(wctx, jobKey(jobs[i].JobID), &jobRecord{Job: jobs[i], Hold: holds[i], Concurrency: req.Plan.Concurrency})
		})
	}
	if err != nil {
		// Records without a message would stay queued in the bucket, never run: deleted,
		// with their reservations.
		j.undoSubmit(key, ids, records, err)
		return nil, nil, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the cluster could not queue the jobs; try again")
	}
	// A job whose message could not be queued (the work stream without a leader) stays
	// queued with its reservation, as after a node's death between its record and its
	// message: the ledger sweep queues it again once it has waited past reservationGrace.
	// Failed here instead, it would need the same stream for its webhook's message.
	_ = parallel(len(jobs), func(i int) error {
		if err := j.publish(ctx, workMsg{Kind: "job", ID: jobs[i].JobID}); err != nil {
			j.log.Warn().Err(err).Str("job", jobs[i].JobID).Msg("job's message not queued: the sweep queues it again")
		}
		return nil
	})
	return jobs, batch, nil
}

// submitRecordsWithin bounds the time from a Submit's start within which it writes its records.
const submitRecordsWithin = 10 * time.Second

// undoTimeout bounds the undoing of a Submit that failed. What it leaves (no quorum for that
// long) the ledger sweep finds: reservations of jobs that have no record.
const undoTimeout = 15 * time.Second

// undoSubmit undoes what a failed Submit may have written, cause being why it failed: the
// records of its jobs and batch (the keys records, its jobs' first: a record without a message
// would stay queued for ever, never run), then the reservations of its jobs (ids) in the ledger
// record key, in one compare-and-swap. Only the reservations of jobs whose record is surely gone
// are dropped; a record that could not be removed is ended failed instead (an ended record is
// harmless), and one that could be neither keeps its reservation, marked undone, so that the
// sweeper ends its job rather than queue it. Each write is retried, as any try's answer may be
// lost.
func (j *Jobs) undoSubmit(key string, ids, records []string, cause error) {
	j.log.Error().Err(cause).Int("jobs", len(ids)).Msg("jobs not queued; what was written is undone")
	ctx, cancel := context.WithTimeout(j.life, undoTimeout)
	defer cancel()
	removed := make([]bool, len(records))
	if err := parallel(len(records), func(i int) error {
		err := j.remove(ctx, records[i])
		removed[i] = err == nil
		return err
	}); err != nil {
		j.log.Error().Err(err).Msg("records of jobs not queued left in the bucket; ended failed")
	}
	// A time of its own: the removals may have used up ctx.
	fctx, fcancel := context.WithTimeout(j.life, 5*time.Second)
	defer fcancel()
	var drop, undone []string
	for i, id := range ids {
		gone := i >= len(records) || removed[i]
		if !gone {
			_, err := j.updateJob(fctx, id, func(r *jobRecord) error { return undoneJob(r) })
			gone = err == nil || errors.Is(err, shotd.ErrNotFound)
		}
		if gone {
			drop = append(drop, JobHoldID(id))
		} else {
			undone = append(undone, JobHoldID(id))
		}
	}
	lctx, lcancel := context.WithTimeout(j.life, 5*time.Second) // the same: its own time
	defer lcancel()
	if _, err := j.cfg.Ledger.undo(lctx, key, drop, undone); err != nil {
		j.log.Error().Err(err).Msg("reservations of jobs not queued left; the ledger sweep drops them")
	}
}

// undoneJob ends the record of a job whose request failed (answered 503): failed, no webhook.
func undoneJob(r *jobRecord) error {
	if r.Job.Final() || r.Job.Status != shotd.JobQueued || r.Starts > 0 {
		return errUnchanged
	}
	r.Job.Status, r.Job.ErrorCode, r.Job.ErrorMessage = shotd.JobFailed, string(shotd.CodeServiceUnavailable), "the request that queued this job failed"
	r.Job.Webhook, r.Hook = nil, nil
	return nil
}

// Stats counts this node's jobs. It queues none: the cluster's queue is the work stream, where
// a job waiting for a concurrency slot of its account waits too.
func (j *Jobs) Stats() shotd.JobStats {
	return shotd.JobStats{Rendering: j.holding.Load(), Succeeded: j.succeeded.Load(), Failed: j.failed.Load()}
}

// Close stops fetching and waits, up to ctx, for the jobs and deliveries under way; then it
// cancels the renders, whose jobs go back to the stream at once for another node.
func (j *Jobs) Close(ctx context.Context) error {
	j.once.Do(func() { close(j.stopped) })
	j.loops.Wait()
	_, err := proc.WaitOrCut(ctx, &j.running, j.cut, 5*time.Second)
	j.cut()
	return err
}
