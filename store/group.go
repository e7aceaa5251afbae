package store

import (
	"sync"

	"go.etcd.io/bbolt"
)

// groupCommit makes the writes given to it while a commit is in flight share the next commit,
// with no delay added: the first writer commits at once, alone; those that arrive during its
// commit wait, and the first of them commits them all together as soon as it ends. Each write
// returns only after the commit that holds it (or its own, alone) is on disk. Unlike bbolt's
// Batch it waits for no timer, so that a lone writer pays one commit and nothing more, and
// concurrent writers one commit per round instead of one each.
type groupCommit struct {
	mu      sync.Mutex
	busy    bool          // a round is committing
	waiting []*groupWrite // the next round
	commits func(n int)   // tests: called with each round's size before it commits
	db      *bbolt.DB
}

type groupWrite struct {
	fn   func(*bbolt.Tx) error
	done chan error         // the write's outcome
	lead chan []*groupWrite // this writer commits the round given
}

// update runs fn in a write transaction that other writers may share: fn must only write through
// tx, and may run twice (alone, after a round-mate failed), so it sets its results from what it
// reads and writes, never from a previous run. An error fn returns fails the whole round (whose
// writes are then committed one by one), unless it is a refusal (refuse): fn wrote nothing, the
// error is its writer's alone and the round's other writes commit together.
func (g *groupCommit) update(fn func(*bbolt.Tx) error) error {
	w := &groupWrite{fn: fn, done: make(chan error, 1), lead: make(chan []*groupWrite, 1)}
	g.mu.Lock()
	if g.busy {
		g.waiting = append(g.waiting, w)
		g.mu.Unlock()
		select {
		case err := <-w.done:
			return err
		case round := <-w.lead:
			g.commit(round)
		}
	} else {
		g.busy = true
		g.mu.Unlock()
		g.commit([]*groupWrite{w})
	}
	return <-w.done
}

// commit commits round, then hands the writes that arrived meanwhile to the first of them.
func (g *groupCommit) commit(round []*groupWrite) {
	if g.commits != nil {
		g.commits(len(round))
	}
	refused := make([]error, len(round))
	err := g.db.Update(func(tx *bbolt.Tx) error {
		for i, w := range round {
			err := w.fn(tx)
			if r, ok := err.(refusal); ok {
				refused[i] = r.err
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil && len(round) > 1:
		// One write failed and took the round's transaction with it: each on its own, so
		// that the failure is its writer's alone.
		for _, w := range round {
			w.done <- unrefuse(g.db.Update(w.fn))
		}
	case err != nil:
		round[0].done <- unrefuse(err)
	default:
		for i, w := range round {
			w.done <- refused[i]
		}
	}
	g.mu.Lock()
	next := g.waiting
	g.waiting = nil
	if len(next) == 0 {
		g.busy = false
	}
	g.mu.Unlock()
	if len(next) > 0 {
		next[0].lead <- next
	}
}

// refusal is the error of a write that wrote nothing: its writer gets err, and the round it
// shares commits without it.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// refuse marks err as a refusal; nil stays nil.
func refuse(err error) error {
	if err == nil {
		return nil
	}
	return refusal{err}
}

// unrefuse returns the error a refusal carries, and any other error as it is.
func unrefuse(err error) error {
	if r, ok := err.(refusal); ok {
		return r.err
	}
	return err
}
