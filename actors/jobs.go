package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/proc"
	"github.com/shotd/shotd/store"
)

// JobsConfig wires the job actor.
type JobsConfig struct {
	Store          *store.Store
	Accounts       *Accounts
	Render         shotd.Renderer // the pipeline service/ composes around *Renderer
	Webhooks       *Webhooks      // nil: no deliveries
	Plans          map[string]shotd.Plan
	FileTTL        time.Duration
	MaxOutputBytes int
	RenderGrace    time.Duration
	// BusyRetry bounds how long a job keeps retrying while the browser pool is busy or down.
	BusyRetry time.Duration
	// Uploader uploads the cached file of a store=true job answered from the response cache;
	// nil: such a job renders again, and the pipeline uploads.
	Uploader StoredUploader
	// Secrets seals the credentials of store=true and of a proxy in the job record
	// (objstore.Sealer). nil: such jobs are refused, since their credentials could not be kept.
	Secrets Secrets
	// Ended, when set, hears every job whose end was recorded (the dashboard's recent renders).
	Ended func(shotd.Job)
	// QueueWaited, when set, hears how long each job waited in the queue of this run for a slot
	// of its account, before its render started. For /metrics; it must not block.
	QueueWaited func(time.Duration)
	Log         zerolog.Logger
}

// SubmitJobs queues the background renders of a request, which the caller has admitted
// (AdmitJobs). The reply is a *SubmitJobsResult.
type SubmitJobs struct {
	shotd.JobRequest
	// StoreBy: the jobs are written only when the write starts before it; later they are refused
	// with service_unavailable and their admission is given back. A caller that stopped waiting
	// (and told its client so) thus never leaves a job behind. Zero: no bound.
	StoreBy time.Time
}

// SubmitJobsResult answers SubmitJobs once the jobs are durable.
type SubmitJobsResult struct {
	Jobs  []shotd.Job
	Batch *shotd.Batch
	Err   error
}

// maxBrowserLosses is how many renders of one job may lose their browser (ErrBrowserLost)
// before the job fails rather than retry.
const maxBrowserLosses = 3

// storeWait bounds the wait for a job write that started before SubmitJobs.StoreBy.
const storeWait = 30 * time.Second

type jobsCreated struct {
	jobs    []shotd.Job
	account shotd.Account
	plan    shotd.Plan
}

type jobDone struct {
	jobID     string
	accountID string
	outcome   shotd.Outcome
	webhook   bool
	batchID   string // the job's batch, whose webhook may be due now
}

// pendingJob is what the job actor keeps of a job between its creation and its slot.
type pendingJob struct {
	job     shotd.Job
	account shotd.Account
	plan    shotd.Plan
	since   time.Time // when it entered the queue of this run
	seq     uint64    // its order of arrival: the account's slots go to its jobs in this order
}

// jobActor owns the job queue: it asks the account actors for a slot per job (jobs wait for a
// free slot; they never fail with concurrency_limit), runs each job in a goroutine, and hands
// finished jobs to the webhook actor. Every state change is one store transaction, made by the
// goroutines, never in the mailbox.
type jobActor struct {
	cfg   JobsConfig
	owner *Jobs
	*jobQueue
	restore []shotd.Job // the first start's alone: a restart after a panic restores nothing again
}

// jobQueue is the job actor's queue. It outlives a restart of the actor after a panic, so that
// the slots granted to its jobs meanwhile still find them.
type jobQueue struct {
	pending map[string]*pendingJob
	seq     uint64
}

func (a *jobActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if len(a.restore) > 0 {
			a.restoreJobs(ctx)
		}
	case *SubmitJobs:
		a.submit(ctx, m)
	case *jobsCreated:
		a.owner.queued.Add(int64(len(m.jobs)))
		for _, j := range m.jobs {
			a.seq++
			a.pending[j.JobID] = &pendingJob{job: j, account: m.account, plan: m.plan, since: time.Now(), seq: a.seq}
			ctx.Request(a.cfg.Accounts.PID(), &AcquireJobSlot{Account: m.account, Plan: m.plan, JobID: j.JobID})
		}
	case *JobSlotGranted:
		p, ok := a.pending[m.JobID]
		if !ok {
			return
		}
		delete(a.pending, m.JobID)
		if a.cfg.QueueWaited != nil {
			a.cfg.QueueWaited(time.Since(p.since))
		}
		a.owner.queued.Add(-1)
		a.owner.rendering.Add(1)
		if !a.owner.goRun(func() { defer a.owner.rendering.Add(-1); a.run(ctx.ActorSystem().Root, ctx.Self(), p) }) {
			a.owner.rendering.Add(-1)
			// Stopping: the job stays queued in the store and runs after the restart. Give the
			// slot back without billing.
			ctx.Send(a.cfg.Accounts.PID(), &SettleJob{AccountID: p.account.ID, JobID: p.job.JobID, Outcome: shotd.OutcomeReleased, Started: true})
		}
	case *queuePosition:
		ctx.Respond(a.position(m.jobID))
	case *jobDone:
		ctx.Send(a.cfg.Accounts.PID(), &SettleJob{AccountID: m.accountID, JobID: m.jobID, Outcome: m.outcome, Started: true})
		if m.webhook && a.cfg.Webhooks != nil {
			a.cfg.Webhooks.Deliver(m.jobID)
		}
		if m.batchID != "" && a.cfg.Webhooks != nil {
			a.cfg.Webhooks.BatchJobEnded(m.batchID)
		}
	}
}

// restoreJobs re-registers the jobs found unfinished at start with their accounts.
func (a *jobActor) restoreJobs(ctx actor.Context) {
	byAccount := map[string][]shotd.Job{}
	for _, j := range a.restore {
		byAccount[j.AccountID] = append(byAccount[j.AccountID], j)
	}
	for id, jobs := range byAccount {
		acc, err := a.cfg.Store.Account(id)
		if err != nil {
			a.cfg.Log.Error().Err(err).Str("account", id).Msg("restore jobs: account")
			continue
		}
		plan, ok := a.cfg.Plans[acc.Plan]
		if !ok {
			// The plan was removed from the config: no slot would ever be granted, and every
			// request of the account is refused alike.
			a.cfg.Log.Error().Str("account", id).Str("plan", acc.Plan).Int("jobs", len(jobs)).Msg("restore jobs: plan not configured; the jobs fail")
			a.failRestored(jobs, shotd.Errorf(shotd.CodeInternalError, "the account's plan is not configured"))
			continue
		}
		ctx.Send(a.cfg.Accounts.PID(), &RestoreJobs{Account: acc, Plan: plan, Count: len(jobs)})
		ctx.Send(ctx.Self(), &jobsCreated{jobs: jobs, account: acc, plan: plan})
	}
	a.cfg.Log.Info().Int("jobs", len(a.restore)).Msg("jobs restored")
	a.restore = nil
}

func (a *jobActor) submit(ctx actor.Context, m *SubmitJobs) {
	jobs, batch, err := NewJobRecords(m.JobRequest, a.cfg.Secrets, time.Now().UTC())
	if err != nil {
		ctx.Respond(&SubmitJobsResult{Err: err})
		return
	}
	sender, self, root, st, acc, plan := ctx.Sender(), ctx.Self(), ctx.ActorSystem().Root, a.cfg.Store, m.Account, m.Plan
	accounts := a.cfg.Accounts.PID()
	if !a.owner.goRun(func() {
		if !m.StoreBy.IsZero() && time.Now().After(m.StoreBy) {
			for _, j := range jobs {
				root.Send(accounts, &SettleJob{AccountID: acc.ID, JobID: j.JobID, Outcome: shotd.OutcomeReleased})
			}
			root.Send(sender, &SubmitJobsResult{Err: shotd.Errorf(shotd.CodeServiceUnavailable, "the job queue is too busy to take jobs now")})
			return
		}
		if err := st.CreateJobs(jobs, batch); err != nil {
			for _, j := range jobs { // give the admitted places and reservations back
				root.Send(accounts, &SettleJob{AccountID: acc.ID, JobID: j.JobID, Outcome: shotd.OutcomeReleased})
			}
			root.Send(sender, &SubmitJobsResult{Err: shotd.Wrap(shotd.CodeInternalError, err, "the job could not be stored")})
			return
		}
		root.Send(self, &jobsCreated{jobs: jobs, account: acc, plan: plan})
		root.Send(sender, &SubmitJobsResult{Jobs: jobs, Batch: batch})
	}) {
		for _, j := range jobs {
			ctx.Send(accounts, &SettleJob{AccountID: acc.ID, JobID: j.JobID, Outcome: shotd.OutcomeReleased})
		}
		ctx.Respond(&SubmitJobsResult{Err: shotd.Errorf(shotd.CodeServiceUnavailable, "the service is stopping")})
	}
}

// NewJobRecords makes the queued records of req's jobs, and their batch when req.Batch, each
// job's options as JSON with their credentials sealed by secrets. Both job queues (this actor's
// and the cluster's) make them here.
func NewJobRecords(req shotd.JobRequest, secrets Secrets, now time.Time) ([]shotd.Job, *shotd.Batch, error) {
	jobs := make([]shotd.Job, 0, len(req.Options))
	var batch *shotd.Batch
	if req.Batch {
		batch = &shotd.Batch{BatchID: store.NewBatchID(), AccountID: req.Account.ID, CreatedAt: now}
		if req.BatchWebhookURL != "" {
			batch.Webhook = &shotd.WebhookState{URL: req.BatchWebhookURL} // always signed
		}
	}
	for i, o := range req.Options {
		raw, err := marshalOptions(secrets, o)
		if err != nil {
			return nil, nil, shotd.Wrap(shotd.CodeInternalError, err, "the job could not be stored")
		}
		j := shotd.Job{JobID: store.NewJobID(), AccountID: req.Account.ID, AccessKey: req.AccessKey, Index: i,
			Status: shotd.JobQueued, CreatedAt: now, UpdatedAt: now, Options: raw, ExternalIdentifier: o.ExternalIdentifier}
		if batch != nil {
			j.BatchID = batch.BatchID
			batch.JobIDs = append(batch.JobIDs, j.JobID)
		}
		if o.WebhookURL != "" {
			j.Webhook = &shotd.WebhookState{URL: o.WebhookURL, Sign: o.WebhookSign, SkipFailed: o.NoWebhookErrors}
		}
		jobs = append(jobs, j)
	}
	return jobs, batch, nil
}

// run renders one job and records its end; it runs in a goroutine.
func (a *jobActor) run(root *actor.RootContext, self *actor.PID, p *pendingJob) {
	j := p.job
	log := a.cfg.Log.With().Str("job", j.JobID).Str("account", j.AccountID).Logger()
	if _, err := a.cfg.Store.UpdateJob(j.JobID, func(j *shotd.Job) error {
		j.Status, j.StartedAt = shotd.JobRendering, time.Now().UTC()
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("job to rendering")
	}
	var o shotd.Options
	var result *shotd.JobResult
	outcome := shotd.OutcomeFailed
	err := json.Unmarshal(j.Options, &o)
	if err != nil {
		err = shotd.Wrap(shotd.CodeInternalError, err, "the job's options could not be read")
	} else if o.HasSecrets() && a.cfg.Secrets != nil {
		// Credentials sealed with another key fail with the sealer's own code and reason.
		err = a.cfg.Secrets.OpenOptions(&o)
	}
	if err == nil {
		result, outcome, err = a.render(&o, j.AccountID)
	}
	if err != nil && a.owner.life.Err() != nil {
		// Close gave up waiting and cancelled the render (or the browser went away with the
		// shutdown): the job stays "rendering" in the store and is queued again at the next
		// start, as a killed run's would be. Not failed, not billed, no webhook.
		log.Info().Err(err).Msg("job interrupted by the shutdown; queued again at the next start")
		// Queued now, so that the next start does not count it with the renders that died with
		// the service; if this write fails, it does.
		if _, uerr := a.cfg.Store.UpdateJob(j.JobID, func(j *shotd.Job) error { j.Status = shotd.JobQueued; return nil }); uerr != nil {
			log.Warn().Err(uerr).Msg("interrupted job back to queued")
		}
		root.Send(self, &jobDone{jobID: j.JobID, accountID: j.AccountID, outcome: shotd.OutcomeReleased})
		return
	}
	final, uerr := a.recordEnd(j.JobID, result, err, outcome)
	if uerr != nil {
		// The job stays "rendering" in the store, to be rendered again at the next start: this
		// run neither bills it nor delivers a webhook, so that the next one may.
		log.Error().Err(uerr).Msg("job end not recorded; queued again at the next start")
		root.Send(self, &jobDone{jobID: j.JobID, accountID: j.AccountID, outcome: shotd.OutcomeReleased})
		return
	}
	if err != nil {
		log.Info().Str("code", string(shotd.CodeOf(err))).Msg("job failed")
	}
	if final.Status == shotd.JobSucceeded {
		a.owner.succeeded.Add(1)
	} else {
		a.owner.failed.Add(1)
	}
	if a.cfg.Ended != nil {
		a.cfg.Ended(final)
	}
	root.Send(self, &jobDone{jobID: j.JobID, accountID: j.AccountID, outcome: outcome, webhook: final.Webhook != nil, batchID: j.BatchID})
}

// recordEnd writes a job's end in one transaction: succeeded with result, or failed with err's
// code and message; a webhook, if the job has one, becomes pending; and the mark that its usage
// (outcome o) is to count (store.EndJob), which the account's settle of it deletes as it counts
// it.
func (a *jobActor) recordEnd(jobID string, result *shotd.JobResult, err error, o shotd.Outcome) (shotd.Job, error) {
	return a.cfg.Store.EndJob(jobID, endJob(result, err), o)
}

// endJob is the update that ends a job: succeeded with result, or failed with err's code and
// message.
func endJob(result *shotd.JobResult, err error) func(j *shotd.Job) error {
	return func(j *shotd.Job) error {
		if err != nil {
			e := shotd.AsError(err)
			j.Status, j.ErrorCode, j.ErrorMessage, j.Result = shotd.JobFailed, string(e.Code), e.Message, nil
		} else {
			j.Status, j.Result, j.ErrorCode, j.ErrorMessage = shotd.JobSucceeded, result, "", ""
		}
		if j.Webhook != nil {
			j.Webhook.Status = shotd.WebhookPending
		}
		return nil
	}
}

// failRestored ends jobs found at start that can never run, off the mailbox: each failed with
// err in its own transaction, its webhook delivered.
func (a *jobActor) failRestored(jobs []shotd.Job, err error) {
	a.owner.goRun(func() {
		for _, j := range jobs {
			// The service's doing, not the account's: no usage to count.
			final, uerr := a.cfg.Store.UpdateJob(j.JobID, endJob(nil, err))
			if uerr != nil {
				a.cfg.Log.Error().Err(uerr).Str("job", j.JobID).Msg("restore jobs: end not recorded")
				continue
			}
			jobEnded(a.cfg, final)
		}
	})
}

// jobEnded starts the deliveries the end of job j, failed at start, calls for: its webhook, and
// its batch's when it was the batch's last job to end.
func jobEnded(cfg JobsConfig, j shotd.Job) {
	if cfg.Webhooks == nil {
		return
	}
	if j.Webhook != nil {
		cfg.Webhooks.Deliver(j.JobID)
	}
	if j.BatchID != "" {
		cfg.Webhooks.BatchJobEnded(j.BatchID)
	}
}

// render renders one job's page with this actor's store and settings.
func (a *jobActor) render(o *shotd.Options, accountID string) (*shotd.JobResult, shotd.Outcome, error) {
	r := JobRenderer{Files: a.cfg.Store, Render: a.cfg.Render, Uploader: a.cfg.Uploader, FileTTL: a.cfg.FileTTL, RenderGrace: a.cfg.RenderGrace,
		BusyRetry: a.cfg.BusyRetry, MaxOutputBytes: a.cfg.MaxOutputBytes}
	return r.Run(a.owner.life, o, accountID)
}

// JobFiles is where a job's file and the response cache are: store.Store, or cluster.Files.
type JobFiles interface {
	CacheGet(key string, maxAge time.Duration) (shotd.FileRecord, bool, error)
	OpenFile(rec shotd.FileRecord) (*os.File, error)
	PutFile(accountID string, out *shotd.Output, ttl time.Duration) (shotd.FileRecord, error)
	PutCachedFile(accountID string, out *shotd.Output, ttl time.Duration, cacheKey string, cacheTTL time.Duration) (shotd.FileRecord, error)
	ResultOf(rec shotd.FileRecord, cache string) shotd.JobResult
}

// StoredUploader carries out store=true for a file rendered before (objstore.Uploader): it
// uploads the kept file f (rec.SizeBytes long) where o.Storage says and returns the object's
// location; a file it cannot read is internal_error wrapping shotd.ErrFileUnreadable.
type StoredUploader interface {
	UploadStored(ctx context.Context, o *shotd.Options, rec shotd.FileRecord, f io.ReaderAt) (string, error)
}

// JobRenderer renders the page of a job, as both job queues (this actor's and the cluster's) do.
type JobRenderer struct {
	Files          JobFiles
	Render         shotd.Renderer
	Uploader       StoredUploader // a cache hit's store=true; nil: such a job renders again
	FileTTL        time.Duration
	RenderGrace    time.Duration
	BusyRetry      time.Duration // how long a busy or restarting browser pool is waited out
	MaxOutputBytes int
}

// Run renders (or serves from the cache) and stores the file. A busy or restarting browser
// pool is waited out: a job waits, it does not fail for the service's own load. life's end
// cancels the render (a shutdown).
func (r JobRenderer) Run(life context.Context, o *shotd.Options, accountID string) (*shotd.JobResult, shotd.Outcome, error) {
	var cacheKey string
	if o.Cache {
		cacheKey = o.ResponseCacheKey(accountID)
		if res, ok, err := r.cached(life, o, cacheKey); err != nil {
			return nil, shotd.OutcomeOf(err), err
		} else if ok {
			return res, shotd.OutcomeCacheHit, nil
		}
	}
	deadline := time.Now().Add(r.BusyRetry)
	var out *shotd.Output
	var err error
	lost := 0
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(life, o.RenderBudget()+r.RenderGrace)
		out, err = r.Render.Render(ctx, o)
		cancel()
		if err == nil {
			break // shotd.CodeOf(nil) would panic
		}
		if errors.Is(err, ErrBrowserLost) {
			if lost++; lost >= maxBrowserLosses {
				// A page that takes its browser down each time is taken to be the cause: the
				// job ends, and the failure is the account's (it counts in failures_per_day).
				return nil, shotd.OutcomeFailed, shotd.Wrap(shotd.CodeRendererUnavailable, err,
					fmt.Sprintf("the browser was lost %d times while rendering this page; the job is not tried again", lost))
			}
		}
		code := shotd.CodeOf(err)
		if (code != shotd.CodeRendererBusy && code != shotd.CodeRendererUnavailable) || time.Now().After(deadline) {
			break
		}
		select {
		case <-time.After(backoff(min(attempt, 3))):
		case <-life.Done():
			return nil, shotd.OutcomeReleased, err
		}
	}
	if err == nil && r.MaxOutputBytes > 0 && out.Size() > r.MaxOutputBytes {
		err = shotd.Errorf(shotd.CodeContentTooLarge, "the rendered %s is %d bytes; the limit is %d", out.Format, out.Size(), r.MaxOutputBytes)
	}
	if err != nil {
		return nil, shotd.OutcomeOf(err), err
	}
	// The cache may keep the file longer than the file TTL: the result shows the real expiry.
	var rec shotd.FileRecord
	if o.Cache {
		rec, err = r.Files.PutCachedFile(accountID, out, r.FileTTL, cacheKey, o.CacheTTL)
	} else {
		rec, err = r.Files.PutFile(accountID, out, r.FileTTL)
	}
	if err != nil {
		return nil, shotd.OutcomeReleased, shotd.StoredError(err) // the service's own storage: not the client's failure
	}
	res := r.Files.ResultOf(rec, "MISS")
	return &res, shotd.OutcomeSucceeded, nil
}

// cached answers a job from the response cache when the entry is there (a copy older than the
// job's cache_ttl is a miss: the render replaces it). A store=true job's hit uploads the cached
// file where the job says, as a sync request's does (httpd's admitHit says why); its result
// names that upload, and a job without store names none, whatever request filled the entry.
func (r JobRenderer) cached(life context.Context, o *shotd.Options, key string) (*shotd.JobResult, bool, error) {
	if o.Store && r.Uploader == nil {
		return nil, false, nil // rendered, and uploaded by the pipeline
	}
	rec, ok, err := r.Files.CacheGet(key, o.CacheTTL)
	if err != nil || !ok {
		return nil, false, nil
	}
	rec.StorageLocation = ""
	if o.Store {
		f, err := r.Files.OpenFile(rec)
		if err != nil {
			return nil, false, nil // gone since the lookup: rendered again
		}
		defer f.Close()
		rec.StorageLocation, err = r.Uploader.UploadStored(life, o, rec, f)
		if errors.Is(err, shotd.ErrFileUnreadable) {
			// The cached file could not be read: the service's trouble, not the account's. The
			// job holds its slot and reservation as a render does, so it renders, as it would
			// had the file been gone; nothing was uploaded.
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err // the client's storage: counted as a render's failed upload
		}
	}
	res := r.Files.ResultOf(rec, "HIT")
	return &res, true, nil
}

// Jobs is the front of the job actor.
type Jobs struct {
	sys *actor.ActorSystem
	pid *actor.PID

	// life is cancelled when Close gives up waiting: the running renders stop with it, and
	// their jobs stay "rendering", to be queued again at the next start.
	life context.Context
	cut  context.CancelFunc

	mu       sync.Mutex
	stopping bool
	running  sync.WaitGroup
	stopOnce sync.Once // a second Close (after one cut short) does not stop the actor again

	// For Stats: kept by the actor and the job goroutines, read by /metrics.
	queued, rendering atomic.Int64
	succeeded, failed atomic.Uint64
}

// queuePosition asks the job actor for a queued job's place; the answer is an int, 0 when the
// job is not queued in this run.
type queuePosition struct{ jobID string }

// position is the place of a queued job among its account's queued jobs, which get the
// account's slots in the order they came (1: the next to start); 0 when it is not queued.
func (a *jobActor) position(jobID string) int {
	p, ok := a.pending[jobID]
	if !ok {
		return 0
	}
	n := 0
	for _, q := range a.pending {
		if q.account.ID == p.account.ID && q.seq <= p.seq {
			n++
		}
	}
	return n
}

// QueuePosition is a queued job's place among its account's queued jobs (1: the next to
// start); false when it is not queued or the actor did not answer within timeout.
func (j *Jobs) QueuePosition(jobID string, timeout time.Duration) (int, bool) {
	res, err := j.sys.Root.RequestFuture(j.pid, &queuePosition{jobID: jobID}, timeout).Result()
	if err != nil {
		return 0, false
	}
	n, _ := res.(int)
	return n, n > 0
}

// Stats returns the job counts; Queued is the queue depth (jobs waiting for an account slot).
func (j *Jobs) Stats() shotd.JobStats {
	return shotd.JobStats{Queued: j.queued.Load(), Rendering: j.rendering.Load(), Succeeded: j.succeeded.Load(), Failed: j.failed.Load()}
}

// StartJobs requeues the jobs a previous run left unfinished and spawns the job actor.
func StartJobs(sys *actor.ActorSystem, cfg JobsConfig) (*Jobs, error) {
	if cfg.Store == nil || cfg.Accounts == nil || cfg.Render == nil {
		return nil, errors.New("actors: jobs need a store, accounts and a renderer")
	}
	if cfg.FileTTL <= 0 {
		cfg.FileTTL = 24 * time.Hour
	}
	if cfg.RenderGrace <= 0 {
		cfg.RenderGrace = 10 * time.Second
	}
	if cfg.BusyRetry <= 0 {
		cfg.BusyRetry = 10 * time.Minute
	}
	// Jobs whose end was recorded and whose usage was not (the process was killed in between):
	// counted before any account loads its usage. Marks it cannot count now stay for a start.
	quotaOf := func(plan string) (int, bool) { p, ok := cfg.Plans[plan]; return p.MonthlyQuota, ok }
	if n, err := cfg.Store.BillEndedJobs(quotaOf); err != nil {
		cfg.Log.Error().Err(err).Int("counted", n).Msg("usage of jobs ended before the stop not all counted; tried again at the next start")
	} else if n > 0 {
		cfg.Log.Warn().Int("jobs", n).Msg("usage of jobs that ended just before the stop counted")
	}
	restore, failed, err := cfg.Store.RequeueUnfinished()
	if err != nil {
		return nil, err
	}
	for _, f := range failed {
		cfg.Log.Error().Str("job", f.JobID).Str("account", f.AccountID).Int("interrupted", f.Interrupted).
			Msg("job's render died with the service too often: failed")
		jobEnded(cfg, f)
		if cfg.Ended != nil {
			cfg.Ended(f)
		}
	}
	j := &Jobs{sys: sys}
	j.life, j.cut = context.WithCancel(context.Background())
	q := &jobQueue{pending: map[string]*pendingJob{}}
	pid, err := sys.Root.SpawnNamed(topProps(func() actor.Actor {
		r := restore
		restore = nil // the producer runs again at a restart, in the actor's goroutine
		return &jobActor{cfg: cfg, owner: j, jobQueue: q, restore: r}
	}), "jobs")
	if err != nil {
		return nil, err
	}
	j.pid = pid
	return j, nil
}

// goRun runs f in a tracked goroutine unless the jobs are stopping.
func (j *Jobs) goRun(f func()) bool { return proc.Go(&j.mu, &j.stopping, &j.running, f) }

// Submit queues the jobs of req durably and returns their records, and their batch when
// req.Batch. timeout bounds the time until their write starts (SubmitJobs.StoreBy); past it the
// jobs are refused with service_unavailable and are not created.
func (j *Jobs) Submit(req shotd.JobRequest, timeout time.Duration) ([]shotd.Job, *shotd.Batch, error) {
	m := &SubmitJobs{JobRequest: req, StoreBy: time.Now().Add(timeout)}
	// The write starts by StoreBy or not at all; once started, its outcome is waited for (a bbolt
	// write ends within storeWait even on a slow disk), so that the answer always tells whether
	// the jobs exist.
	res, err := j.sys.Root.RequestFuture(j.pid, m, time.Until(m.StoreBy)+storeWait).Result()
	if err != nil {
		return nil, nil, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the job queue did not answer")
	}
	r, ok := res.(*SubmitJobsResult)
	if !ok {
		return nil, nil, shotd.Errorf(shotd.CodeInternalError, "the job queue answered unexpectedly")
	}
	return r.Jobs, r.Batch, r.Err
}

// cutWait is how long Close waits, after its deadline, for the renders it cancelled: they end
// at once, and their outcomes must reach the actor before it stops.
const cutWait = 5 * time.Second

// Close stops starting jobs and waits, up to ctx, for the running ones, then stops the job actor
// once it has handled their outcomes (and passed each on to the account actors, which bill it).
// A job cut off at the deadline stays rendering in the store and is queued again at the next
// start; Close then returns ctx's error.
func (j *Jobs) Close(ctx context.Context) error {
	j.mu.Lock()
	j.stopping = true
	j.mu.Unlock()
	finished, err := proc.WaitOrCut(ctx, &j.running, j.cut, cutWait)
	if !finished {
		return err // a render that ignores its cancellation: leave the actor to it
	}
	j.cut() // nothing runs any more: this only releases the context
	// Poison, not Stop: a Stop is a system message and would be handled before the jobDone
	// messages still queued, whose SettleJob bills the job.
	j.stopOnce.Do(func() {
		if perr := j.sys.Root.PoisonFuture(j.pid).Wait(); err == nil {
			err = perr
		}
	})
	return err
}
