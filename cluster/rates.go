package cluster

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// subjectRates carries the nodes' reports of their counts (core NATS: no stream, no storage).
const subjectRates = "shotd.rates"

const (
	ratesVersion = 1
	// ratesChunk bounds the accounts of one message: at most about 1,600 buckets each (a day of
	// failures in every minute), well below the 1 MiB payload limit.
	ratesChunk = 16
	// ratesFullEvery: every this many intervals a node reports every account it counts, not only
	// those that changed, so that a node that (re)joined learns the counts of quiet accounts.
	ratesFullEvery = 10
	minuteSpan     = time.Minute
	daySpan        = 24 * time.Hour
)

// Rates shares the per-minute rate and failure counts of each account across the cluster, so
// that an account spread over N nodes gets its plan's limits, not N times them. The node's
// account actors tell it what they count (Count, actors.Tally); every interval it publishes, for
// each account whose counts changed, its counts in time buckets (a second wide for the minute
// windows, a minute wide for the day's failures), or an empty message.
// It keeps the last report of every other node, and ages its buckets by its own clock until
// they leave their windows, whether the node still reports or not: the requests and failures a
// node admitted or saw before it died or was cut off still happened, and count until the minute
// or the day has passed. Each run of a node reports under an id of its own (its incarnation), so
// that a node restarted under its name, which starts counting from nothing, does not replace
// what its earlier run reported. When a run it has not heard before starts reporting, a node
// relays once what it keeps of the runs it no longer hears: the restarted node learns its
// earlier run's counts, a joining node those of a node that died before it came. Peers sums
// them for an admission: reading them is a map look-up under a lock, never a round trip.
//
// Each bucket travels as its age, so that nodes' clocks need not agree; a bucket counts as if all
// its events came at its end, so an event leaves a peer's window up to one bucket width late
// (errs on refusing). A report takes one interval (and the network) to arrive: in that time an
// account can pass its limit by what the other nodes admit meanwhile.
type Rates struct {
	nc       *nats.Conn
	node     string
	run      string // this run's incarnation id
	interval time.Duration
	now      func() time.Time
	log      zerolog.Logger
	sub      *nats.Subscription

	mu    sync.RWMutex      // Peers, on every admission, only reads
	own   map[string]*tally // by account: what this node counted
	jobs  map[string]*tally // by account: job failures of this node, which its actors do not count
	dirty map[string]bool
	peers map[peerRun]*peerReports
	// heard is when each run last reported itself (relays aside); a run missing here, or not
	// heard for silentAfter, is silent and its reports are relayed.
	heard    map[peerRun]time.Time
	relayDue bool // a run not heard before reported: relay the silent runs at the next interval
	ticks    int
	odd      map[string]bool // senders of reports of an unknown version, logged once each

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// RatesConfig tunes Rates.
type RatesConfig struct {
	Interval time.Duration // between reports; default 500 ms
	Now      func() time.Time
	Log      zerolog.Logger
}

// StartRates subscribes to the other nodes' reports and starts publishing this node's.
func StartRates(n *Node, cfg RatesConfig) (*Rates, error) {
	r := newRates(n.NodeName(), cfg)
	r.nc = n.Conn()
	sub, err := r.nc.Subscribe(subjectRates, r.receive)
	if err != nil {
		return nil, err
	}
	r.sub = sub
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		every(r.stop, r.interval, r.publish)
	}()
	return r, nil
}

// newRates is a Rates of node, not yet connected.
func newRates(node string, cfg RatesConfig) *Rates {
	if cfg.Interval <= 0 {
		cfg.Interval = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Rates{node: node, run: randomToken(9), interval: cfg.Interval, now: cfg.Now,
		log: cfg.Log, own: map[string]*tally{}, jobs: map[string]*tally{}, dirty: map[string]bool{},
		peers: map[peerRun]*peerReports{}, heard: map[peerRun]time.Time{}, odd: map[string]bool{},
		stop: make(chan struct{})}
}

// silentAfter is how long a run goes unheard before it counts as silent: three intervals, in
// which a live node sends at least three messages.
func (r *Rates) silentAfter() time.Duration { return 3 * r.interval }

// silent reports whether run no longer reports itself to this node (r.mu held).
func (r *Rates) silent(run peerRun, now time.Time) bool {
	at, ok := r.heard[run]
	return !ok || now.Sub(at) >= r.silentAfter()
}

// Close stops publishing and listening.
func (r *Rates) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		close(r.stop)
		_ = r.sub.Unsubscribe()
	})
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Count records an event this node's account actor counted (actors.Tally): it must not block,
// and takes a lock held only for map updates.
func (r *Rates) Count(accountID string, w shotd.Window, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tallyOf(r.own, accountID).add(w, at)
	r.dirty[accountID] = true
}

// CountJobFailure records the failure of a job this node rendered. The account actors never see
// a cluster job, so the failure is added to this node's own admissions here, and reported to
// the others with the rest.
func (r *Rates) CountJobFailure(accountID string) {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tallyOf(r.own, accountID).add(shotd.WindowFailures, at)
	r.tallyOf(r.jobs, accountID).add(shotd.WindowFailures, at)
	r.dirty[accountID] = true
}

func (r *Rates) tallyOf(m map[string]*tally, accountID string) *tally {
	t := m[accountID]
	if t == nil {
		t = &tally{}
		m[accountID] = t
	}
	return t
}

// Peers is what the other nodes reported counting for the account, with this node's job
// failures, as they stand now.
func (r *Rates) Peers(accountID string) shotd.PeerCounts {
	now := r.now()
	var p shotd.PeerCounts
	r.mu.RLock()
	defer r.mu.RUnlock()
	if t := r.jobs[accountID]; t != nil {
		t.sum(&p, now)
	}
	for _, pr := range r.peers {
		if t := pr.accounts[accountID]; t != nil {
			t.sum(&p, now)
		}
	}
	return p
}

// publish sends the counts of the accounts that changed (all of them every ratesFullEvery
// intervals), at least one message, and forgets what has left every window.
func (r *Rates) publish() {
	now := r.now()
	msgs := r.reports(now)
	for _, m := range msgs {
		data, err := json.Marshal(m)
		if err == nil {
			err = r.nc.Publish(subjectRates, data)
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("cluster rates report not sent")
			return
		}
	}
}

// reports builds this interval's messages and prunes what has aged out.
func (r *Rates) reports(now time.Time) []ratesMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks++
	full := r.ticks%ratesFullEvery == 0
	var msgs []ratesMessage
	self := ratesMessage{V: ratesVersion, Node: r.node, Run: r.run}
	for id, t := range r.own {
		empty := t.prune(now)
		if !full && !r.dirty[id] {
			if empty {
				delete(r.own, id)
			}
			continue
		}
		msgs = appendAccount(msgs, self, id, t.wire(now)) // an empty report tells the others it aged out
		if empty {
			delete(r.own, id)
		}
	}
	if len(msgs) == 0 {
		// Nodes of the previous version drop a node silent for 3 s: an empty message keeps this
		// one counted on them in a rolling restart.
		msgs = append(msgs, ratesMessage{V: ratesVersion, Node: r.node, Run: r.run})
	}
	clear(r.dirty)
	for id, t := range r.jobs {
		if t.prune(now) {
			delete(r.jobs, id)
		}
	}
	for run, pr := range r.peers {
		for id, t := range pr.accounts {
			if t.prune(now) {
				delete(pr.accounts, id)
			}
		}
		if len(pr.accounts) == 0 {
			delete(r.peers, run) // a live node's next message makes it again
		}
	}
	for run, at := range r.heard {
		if now.Sub(at) > minuteSpan {
			delete(r.heard, run)
		}
	}
	if r.relayDue {
		r.relayDue = false
		msgs = append(msgs, r.relays(now)...)
	}
	return msgs
}

// relays are the reports this node keeps of the runs it no longer hears, each sent under the
// run it came from, with this node as the relay (r.mu held).
func (r *Rates) relays(now time.Time) []ratesMessage {
	var all []ratesMessage
	for run, pr := range r.peers {
		if !r.silent(run, now) {
			continue
		}
		head := ratesMessage{V: ratesVersion, Node: run.node, Run: run.run, Via: r.node}
		var msgs []ratesMessage
		for id, t := range pr.accounts {
			msgs = appendAccount(msgs, head, id, t.wire(now))
		}
		all = append(all, msgs...)
	}
	return all
}

// appendAccount adds one account's counts to the last of msgs, or to a new message like head
// once that one holds ratesChunk accounts.
func appendAccount(msgs []ratesMessage, head ratesMessage, id string, a accountRates) []ratesMessage {
	if len(msgs) == 0 || len(msgs[len(msgs)-1].Accounts) >= ratesChunk {
		head.Accounts = map[string]accountRates{}
		msgs = append(msgs, head)
	}
	msgs[len(msgs)-1].Accounts[id] = a
	return msgs
}

// receive keeps another node's report.
func (r *Rates) receive(msg *nats.Msg) {
	var m ratesMessage
	if err := json.Unmarshal(msg.Data, &m); err != nil || m.V != ratesVersion {
		// A node of another version, in a rolling restart, reports every interval: say it once.
		r.mu.Lock()
		first := !r.odd[m.Node]
		r.odd[m.Node] = true
		r.mu.Unlock()
		if first {
			r.log.Warn().Err(err).Int("v", m.V).Str("from", m.Node).Msg("cluster rates reports unreadable or of an unknown version ignored")
		}
		return
	}
	r.take(m, r.now())
}

// take keeps m, received at now: a run's own report, or a relay of a run that the relay no
// longer hears, which counts unless this node hears that run itself.
func (r *Rates) take(m ratesMessage, now time.Time) {
	if m.Node == "" {
		return
	}
	run := peerRun{m.Node, m.Run}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Via != "" {
		// A relay: of this run (a peer that does not hear it), or one this node sent, or of a
		// run it hears itself, whose own reports are newer: none of them is news.
		if m.Via == r.node || (m.Node == r.node && m.Run == r.run) || !r.silent(run, now) {
			return
		}
	} else {
		if m.Node == r.node {
			return // its own, back from the subject
		}
		if _, ok := r.heard[run]; !ok {
			// A run not heard before: a node joined or restarted. A node runs once at a time,
			// so its earlier runs are silent now, however recently they spoke.
			for other := range r.heard {
				if other.node == run.node {
					delete(r.heard, other)
				}
			}
			r.relayDue = true
		}
		r.heard[run] = now
	}
	r.merge(run, m, now)
}

// merge keeps m's accounts as run's latest reports of them (r.mu held).
func (r *Rates) merge(run peerRun, m ratesMessage, now time.Time) {
	if len(m.Accounts) == 0 {
		return
	}
	pr := r.peers[run]
	if pr == nil {
		pr = &peerReports{accounts: map[string]*tally{}}
		r.peers[run] = pr
	}
	for id, a := range m.Accounts {
		t := a.tally(now)
		if t.prune(now) {
			delete(pr.accounts, id)
			continue
		}
		pr.accounts[id] = t
	}
}

// peerRun names one run of a node: its name and its incarnation id.
type peerRun struct{ node, run string }

// peerReports is the last report of each account by one run of a node.
type peerReports struct {
	accounts map[string]*tally
}

// tally is one account's counts: requests, status requests and failures in buckets a second
// wide (kept for a minute), failures also in buckets a minute wide (kept for a day).
type tally struct {
	requests, status, failures, failuresDay buckets
}

func (t *tally) add(w shotd.Window, at time.Time) {
	switch w {
	case shotd.WindowRequests:
		t.requests.add(at, time.Second)
	case shotd.WindowStatus:
		t.status.add(at, time.Second)
	case shotd.WindowFailures:
		t.failures.add(at, time.Second)
		t.failuresDay.add(at, time.Minute)
	}
}

// prune drops the buckets out of their windows and reports whether nothing is left.
func (t *tally) prune(now time.Time) bool {
	t.requests.prune(now, minuteSpan)
	t.status.prune(now, minuteSpan)
	t.failures.prune(now, minuteSpan)
	t.failuresDay.prune(now, daySpan)
	return len(t.requests)+len(t.status)+len(t.failures)+len(t.failuresDay) == 0
}

// sum adds the counts in their windows at now to p, and moves p's resets to the earliest.
func (t *tally) sum(p *shotd.PeerCounts, now time.Time) {
	add := func(b buckets, span time.Duration, n *int, reset *time.Time) {
		c, first := b.count(now, span)
		if c == 0 {
			return
		}
		*n += c
		if at := first.Add(span); reset.IsZero() || at.Before(*reset) {
			*reset = at
		}
	}
	add(t.requests, minuteSpan, &p.Requests, &p.RequestsReset)
	add(t.status, minuteSpan, &p.StatusRequests, &p.StatusReset)
	add(t.failures, minuteSpan, &p.Failures, &p.FailuresReset)
	add(t.failuresDay, daySpan, &p.FailuresDay, &p.FailuresDayReset)
}

func (t *tally) wire(now time.Time) accountRates {
	return accountRates{Requests: t.requests.wire(now), Status: t.status.wire(now),
		Failures: t.failures.wire(now), FailuresDay: t.failuresDay.wire(now)}
}

// bucket counts n events that came before end (and after end less the bucket's width).
type bucket struct {
	end time.Time
	n   int
}

// buckets are in order of their ends.
type buckets []bucket

func (b *buckets) add(at time.Time, width time.Duration) {
	end := at.Truncate(width).Add(width)
	if l := len(*b); l > 0 && !end.After((*b)[l-1].end) {
		(*b)[l-1].n++ // an event a little out of order joins the newest bucket
		return
	}
	*b = append(*b, bucket{end: end, n: 1})
}

// prune drops the buckets whose every event has left a window of span.
func (b *buckets) prune(now time.Time, span time.Duration) {
	i := 0
	for i < len(*b) && now.Sub((*b)[i].end) >= span {
		i++
	}
	if i > 0 {
		*b = append((*b)[:0], (*b)[i:]...)
	}
}

// count sums the events in a window of span at now, and gives the end of the oldest bucket.
func (b buckets) count(now time.Time, span time.Duration) (int, time.Time) {
	n := 0
	var first time.Time
	for _, k := range b {
		if now.Sub(k.end) >= span {
			continue
		}
		if n == 0 {
			first = k.end
		}
		n += k.n
	}
	return n, first
}

func (b buckets) wire(now time.Time) []wireBucket {
	if len(b) == 0 {
		return nil
	}
	w := make([]wireBucket, len(b))
	for i, k := range b {
		w[i] = wireBucket{now.Sub(k.end).Milliseconds(), int64(k.n)}
	}
	return w
}

// ratesMessage is one node's report: the counts of the accounts it names (each replacing that
// run's previous report of the account), or none (for nodes of the previous version, which drop
// a node they have not heard for 3 s); or another node's relay of such a report.
type ratesMessage struct {
	V    int    `json:"v"`
	Node string `json:"node"`
	Run  string `json:"run,omitempty"` // the node's incarnation
	// Via names the node that relays the report of a run it no longer hears; "" in a run's own.
	Via      string                  `json:"via,omitempty"`
	Accounts map[string]accountRates `json:"accounts,omitempty"`
}

// accountRates is one account's buckets on the wire.
type accountRates struct {
	Requests    []wireBucket `json:"r,omitempty"`
	Status      []wireBucket `json:"s,omitempty"`
	Failures    []wireBucket `json:"f,omitempty"` // a second wide, the last minute
	FailuresDay []wireBucket `json:"d,omitempty"` // a minute wide, the last day
}

// wireBucket is a bucket as [age of its end in milliseconds when sent (negative: it ends
// later), count]: ages rather than times, so that the nodes' clocks need not agree.
type wireBucket [2]int64

// tally turns a report received at now into buckets on this node's clock. Buckets out of order
// or with no positive count are dropped.
func (a accountRates) tally(now time.Time) *tally {
	conv := func(w []wireBucket) buckets {
		var b buckets
		for _, k := range w {
			end := now.Add(-time.Duration(k[0]) * time.Millisecond)
			if k[1] <= 0 || (len(b) > 0 && !end.After(b[len(b)-1].end)) {
				continue
			}
			b = append(b, bucket{end: end, n: int(min(k[1], 1<<31-1))})
		}
		return b
	}
	return &tally{requests: conv(a.Requests), status: conv(a.Status), failures: conv(a.Failures), failuresDay: conv(a.FailuresDay)}
}
