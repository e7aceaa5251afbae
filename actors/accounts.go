package actors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
)

// accountRouter creates one account actor per account on first use, forwards every account
// message to it, and stops it when it reports itself idle (passivation). Poison, not Stop, so
// that messages already forwarded are still handled.
//
// An idle report can cross a message forwarded after it was sent: the actor would then admit a
// render and stop with its ticket, and the Settle would reach a fresh actor that does not know
// the ticket, so the success would never be billed. The report therefore carries how many
// account messages the actor had handled, and the router passivates it only when that is every
// message it forwarded; otherwise the actor reports again after its next idle period.
type accountRouter struct {
	store    UsageStore
	log      zerolog.Logger
	idle     time.Duration
	now      func() time.Time
	tally    Tally
	children map[string]*accountChild
	alive    int        // account actors not yet terminated, passivated ones included
	closer   *actor.PID // set by closeAccounts: answered once every account actor has stopped
}

type accountChild struct {
	pid       *actor.PID
	forwarded uint64 // account messages forwarded to it
}

func (r *accountRouter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		r.children = map[string]*accountChild{}
	case *accountIdle:
		if c, ok := r.children[m.id]; ok && c.pid.Equal(ctx.Sender()) && c.forwarded == m.handled {
			delete(r.children, m.id)
			ctx.Poison(c.pid)
		}
	case *actor.Terminated:
		r.alive--
		r.closed(ctx)
	case *closeAccounts:
		r.closer = ctx.Sender()
		for id, c := range r.children {
			ctx.Poison(c.pid) // after every message already forwarded to it
			delete(r.children, id)
		}
		r.closed(ctx)
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
	if r.closer != nil {
		if ctx.Sender() != nil {
			ctx.Respond(&Denied{Err: shotd.Errorf(shotd.CodeServiceUnavailable, "the service is stopping")})
		}
		return
	}
	c, ok := r.children[acc.ID]
	if !ok {
		st, now, idle, log, tally := r.store, r.now, r.idle, r.log, r.tally
		c = &accountChild{pid: ctx.Spawn(childProps(func() actor.Actor {
			return &accountActor{acc: acc, store: st, now: now, idle: idle, log: log, tally: tally, failuresDay: window{span: failureDaySpan}}
		}))}
		r.children[acc.ID] = c
		r.alive++
	}
	c.forwarded++
	ctx.Forward(c.pid)
}

// closed answers the closer once every account actor has stopped, then stops the router.
func (r *accountRouter) closed(ctx actor.Context) {
	if r.closer == nil || r.alive > 0 {
		return
	}
	ctx.Send(r.closer, &accountsClosed{})
	ctx.Stop(ctx.Self())
}

// AccountsConfig tunes the account actors.
type AccountsConfig struct {
	Store   UsageStore
	Log     zerolog.Logger
	Idle    time.Duration // passivate an account actor idle this long; default 10 minutes
	Timeout time.Duration // an answer slower than this is service_unavailable; default 2 s
	Now     func() time.Time
	// Tally, in cluster mode, hears of every request and failure the account actors count, to
	// tell the other nodes (cluster.Rates). nil on a single node.
	Tally Tally
}

// Tally hears of each event an account actor counts in one of its windows. It is called from
// the actor's mailbox: it must not block.
type Tally interface {
	Count(accountID string, w shotd.Window, at time.Time)
}

// Accounts is the admission front of the account actors, for httpd and the job actor.
type Accounts struct {
	sys     *actor.ActorSystem
	router  *actor.PID
	timeout time.Duration
	tickets atomic.Uint64 // render tickets, unique across accounts; below 1<<63
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
	pid, err := sys.Root.SpawnNamed(topProps(func() actor.Actor {
		return &accountRouter{store: cfg.Store, log: cfg.Log, idle: cfg.Idle, now: cfg.Now, tally: cfg.Tally}
	}), "accounts")
	if err != nil {
		return nil, err
	}
	return &Accounts{sys: sys, router: pid, timeout: cfg.Timeout}, nil
}

// Close stops every account actor once it has handled the messages already sent to it, and
// returns when the usage writes they started are committed, so that no billed success is lost
// at shutdown. Stop the HTTP servers and the job actor first; later requests are refused with
// service_unavailable.
func (a *Accounts) Close(ctx context.Context) error {
	wait := time.Minute
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if wait <= 0 {
		return ctx.Err()
	}
	f := a.sys.Root.RequestFuture(a.router, &closeAccounts{}, wait)
	done := make(chan error, 1)
	go func() {
		_, err := f.Result()
		done <- err
	}()
	select {
	case err := <-done:
		if errors.Is(err, actor.ErrDeadLetter) {
			return nil // closed already
		}
		if err != nil {
			return fmt.Errorf("actors: close accounts: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("actors: close accounts: %w", ctx.Err())
	}
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
//
// When the answer does not come in time the request is refused with service_unavailable. A
// render the actor admits after that is released at once (the Settle follows the Admit through
// the same mailboxes, so it always finds the ticket); the actor also refuses an Admit it handles
// after its Deadline, three quarters into the timeout, which keeps a late job admission from
// holding queue places.
func (a *Accounts) Admit(req shotd.Admission) (*shotd.AdmitResult, shotd.LimitsSnapshot, error) {
	msg := Admit{Admission: req}
	if msg.Kind.Ticketed() {
		msg.Ticket = a.tickets.Add(1) &^ (1 << 63)
	}
	// The actor grants nothing after Deadline, which comes a quarter of the timeout before the
	// asker gives up: a grant sent in time has that long to arrive. A job admission has no
	// ticket to release it by, and a grant that arrived late would hold its queue places and
	// quota until the restart.
	msg.Deadline = time.Now().Add(a.timeout - a.timeout/4)
	res, err := a.ask(&msg)
	if err != nil {
		if msg.Kind.Ticketed() {
			a.sys.Root.Send(a.router, &Settle{AccountID: req.Account.ID, Ticket: msg.Ticket, Outcome: shotd.OutcomeReleased})
		}
		return nil, shotd.LimitsSnapshot{}, err
	}
	switch r := res.(type) {
	case *shotd.AdmitResult:
		return r, r.Limits, nil
	case *Denied:
		return nil, r.Limits, r.Err
	}
	return nil, shotd.LimitsSnapshot{}, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// Settle ends an admitted render.
func (a *Accounts) Settle(accountID string, ticket uint64, o shotd.Outcome) (shotd.LimitsSnapshot, error) {
	res, err := a.ask(&Settle{AccountID: accountID, Ticket: ticket, Outcome: o})
	if err != nil {
		return shotd.LimitsSnapshot{}, err
	}
	if r, ok := res.(*SettleResult); ok {
		return r.Limits, nil
	}
	return shotd.LimitsSnapshot{}, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// Usage returns the usage record of the account for its current period.
func (a *Accounts) Usage(acc shotd.Account, plan shotd.Plan) (*shotd.UsageReport, error) {
	res, err := a.ask(&GetUsage{Account: acc, Plan: plan})
	if err != nil {
		return nil, err
	}
	if r, ok := res.(*shotd.UsageReport); ok {
		return r, nil
	}
	return nil, shotd.Errorf(shotd.CodeServiceUnavailable, "the limits service answered unexpectedly")
}

// ReleaseJobs gives back n jobs admitted by AdmitJobs that were never queued: their queue places
// and quota reservations.
func (a *Accounts) ReleaseJobs(accountID string, n int) {
	for range n {
		a.sys.Root.Send(a.router, &SettleJob{AccountID: accountID, Outcome: shotd.OutcomeReleased})
	}
}
