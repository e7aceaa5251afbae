package httpd

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/shotd/shotd"
)

// PlanBook holds the configured plans. serve replaces them on SIGHUP while requests read them,
// so the map is swapped whole, never changed in place.
type PlanBook struct {
	m atomic.Pointer[map[string]shotd.Plan]
}

// NewPlanBook returns a book of a copy of plans.
func NewPlanBook(plans map[string]shotd.Plan) *PlanBook {
	b := &PlanBook{}
	b.Set(plans)
	return b
}

// Get returns the plan called name.
func (b *PlanBook) Get(name string) (shotd.Plan, bool) {
	p, ok := (*b.m.Load())[name]
	return p, ok
}

// List returns the plans sorted by name.
func (b *PlanBook) List() []shotd.Plan {
	m := *b.m.Load()
	out := make([]shotd.Plan, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[n])
	}
	return out
}

// All returns the plans (a map the caller must not change).
func (b *PlanBook) All() map[string]shotd.Plan { return *b.m.Load() }

// Set replaces every plan with a copy of plans. A request already admitted keeps the plan it
// was admitted under; the next one sees the new plans.
func (b *PlanBook) Set(plans map[string]shotd.Plan) {
	c := maps.Clone(plans)
	if c == nil {
		c = map[string]shotd.Plan{}
	}
	b.m.Store(&c)
}

// Plans returns the public API's plan book, which the admin API may share (UsePlans) so that
// one Set reaches both.
func (s *Server) Plans() *PlanBook { return s.plans }

// UsePlans makes the admin API check plan names against b.
func (a *Admin) UsePlans(b *PlanBook) { a.plans = b }

// BookUsage reports usage through the account actors under the plans of a book.
type BookUsage struct {
	Gate Gate
	Book *PlanBook
}

// Usage returns the account's usage record.
func (u BookUsage) Usage(_ context.Context, acc shotd.Account) (any, error) {
	p, _ := u.Book.Get(acc.Plan)
	return u.Gate.Usage(acc, p)
}
