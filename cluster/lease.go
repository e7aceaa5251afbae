package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// leaseRecord is a value of the leases bucket: which node runs a once-per-cluster task, until
// when. The holder renews it well before Until; once Until has passed, any node may take it.
// Nodes' clocks must agree to well under the lease's TTL (NTP), as for the files' expiry.
type leaseRecord struct {
	V     int       `json:"v"`
	Node  string    `json:"node"`
	Until time.Time `json:"until"`
}

// lease is one named lease of the leases bucket, as one node sees it. Every change is a
// compare-and-swap on the key's revision, so two nodes never both take it.
type lease struct {
	kv   jetstream.KeyValue
	name string
	node string
	ttl  time.Duration
	log  zerolog.Logger
	now  func() time.Time
}

// hold takes or renews the lease; it reports whether this node holds it until now()+ttl.
func (l *lease) hold(ctx context.Context) (bool, error) {
	now := l.now()
	data, _ := json.Marshal(leaseRecord{V: recordVersion, Node: l.node, Until: now.Add(l.ttl).UTC()})
	e, err := l.kv.Get(ctx, l.name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if _, err := l.kv.Create(ctx, l.name, data); err != nil {
			if conflict(err) {
				return false, nil // another node took it first
			}
			return false, err
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	var r leaseRecord
	// An unreadable record (a newer node's) is taken over only once it would have lapsed by the
	// revision's own time, which every version writes.
	if decode(l.log, "lease", l.name, e.Value(), &r) != nil {
		r = leaseRecord{Until: e.Created().Add(l.ttl)}
	}
	if r.Node != l.node && now.Before(r.Until) {
		return false, nil
	}
	if _, err := l.kv.Update(ctx, l.name, data, e.Revision()); err != nil {
		if conflict(err) {
			return false, nil // changed since the read: another node renewed or took it
		}
		return false, err
	}
	return true, nil
}

// release gives the lease up at once, if this node holds it, so that another node need not
// wait for it to lapse.
func (l *lease) release(ctx context.Context) {
	e, err := l.kv.Get(ctx, l.name)
	if err != nil {
		return
	}
	var r leaseRecord
	if json.Unmarshal(e.Value(), &r) != nil || r.Node != l.node {
		return
	}
	if err := l.kv.Delete(ctx, l.name, jetstream.LastRevision(e.Revision())); err != nil {
		l.log.Info().Err(err).Str("lease", l.name).Msg("lease not released; it lapses")
	}
}
