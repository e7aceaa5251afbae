package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// accountRouter creates one account actor per account on first use, forwards every account
// message to it, and stops it when it reports itself idle (passivation). Poison, not Stop, so
// that messages already forwarded are still handled.
type accountRouter struct {
	store    UsageStore
	log      zerolog.Logger
	idle     time.Duration
	now      func() time.Time
	children map[string]*actor.PID
}

func (r *accountRouter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.children = map[string]*actor.PID{}
	case *accountIdle:
		if pid, ok := r.children[m.id]; ok && pid.Equal(ctx.Sender()) {
			delete(r.children, m.id)
			ctx.Poison(pid)
		}
	case *Admit:
		r.forward(ctx, m.Account)
	case *GetUsage:
		r.forward(ctx, m.Account)
	case *AcquireJobSlot:
		r.forward(ctx, m.Account)
	case *RestoreJobs:
		r.forward(ctx, m.Account)
	case *Settle:
		r.forward(ctx, shotd.Account{ID: m.AccountID})
	case *SettleJob:
		r.forward(ctx, shotd.Account{ID: m.AccountID})
	}
}

func (r *accountRouter) forward(ctx actor.Context, acc shotd.Account) {
	pid, ok := r.children[acc.ID]
	if !ok {
		st, now, idle, log := r.store, r.now, r.idle, r.log
		pid = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &accountActor{acc: acc, store: st, now: now, idle: idle, log: log}
		}))
		r.children[acc.ID] = pid
	}
	ctx.Forward(pid)
}

// AccountsConfig tunes the account actors.
type AccountsConfig struct {
	Store   UsageStore
	Log     zerolog.Logger
	Idle    time.Duration // passivate an account actor idle this long; default 10 minutes
	Timeout time.Duration // an answer slower than this is service_unavailable; default 2 s
	Now     func() time.Time
}

// Accounts is the admission front of the account actors, for httpd and the job actor.
type Accounts struct {
	sys     *actor.ActorSystem
	router  *actor.PID
	timeout time.Duration
}

// StartAccounts spawns the account router.
func StartAccounts(sys *actor.ActorSystem, cfg AccountsConfig) (*Accounts, error) {
	if cfg.Store == nil {
		return nil, errors.New("actors: accounts need a usage store")
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 10 * time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pid, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &accountRouter{store: cfg.Store, log: cfg.Log, idle: cfg.Idle, now: cfg.Now}
	}), "accounts")
	if err != nil {
		return nil, err
	}
	return &Accounts{sys: sys, router: pid, timeout: cfg.Timeout}, nil
}

// PID is the router, for actors that talk to accounts directly (the job actor).
func (a *Accounts) PID() *actor.PID { return a.router }

func (a *Accounts) ask(msg any) (any, error) {
	res, err := a.sys.Root.RequestFuture(a.router, msg, a.timeout).Result()
	if err != nil {
		return nil, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the limits service did not answer; the request was refused")
	}
	return res, nil
}

// Admit asks the account to let a request in. A refusal is a *shotd.Error, returned with the
// limits that explain it.
func (a *Accounts) Admit(m *Admit) (*AdmitResult, LimitsSnapshot, error) {
	res, err := a.ask(m)
	if err != nil {
		return nil, LimitsSnapshot{}, err
	}
	switch r := res.(type) {
	case *AdmitResult:
		return r, r.Limits, nil
	case *Denied:
		return nil, r.Limits, r.Err
	}
	return nil, LimitsSnapshot{}, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// Settle ends an admitted render.
func (a *Accounts) Settle(accountID string, ticket uint64, o Outcome) (LimitsSnapshot, error) {
	res, err := a.ask(&Settle{AccountID: accountID, Ticket: ticket, Outcome: o})
	if err != nil {
		return LimitsSnapshot{}, err
	}
	if r, ok := res.(*SettleResult); ok {
		return r.Limits, nil
	}
	return LimitsSnapshot{}, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// Usage returns the usage record of the account for its current period.
func (a *Accounts) Usage(acc shotd.Account, plan shotd.Plan) (*UsageResult, error) {
	res, err := a.ask(&GetUsage{Account: acc, Plan: plan})
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*UsageResult); ok {
		return r, nil
	}
	return nil, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// OutcomeOf classifies a render error for billing and the failure window: errors of the service
// itself (busy, unavailable, limits down) are released, not counted against the account.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Succeeded
	}
	switch shotd.CodeOf(err) {
	case shotd.CodeRendererBusy, shotd.CodeRendererUnavailable, shotd.CodeServiceUnavailable:
		return Released
	}
	return Failed
}
