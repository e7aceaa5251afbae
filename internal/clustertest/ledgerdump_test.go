package clustertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd/cluster"
	"github.com/shotd/shotd/internal/chaos"
)

// dumpLedger logs the account's ledger records as the node of root sees them (billed count,
// each live reservation with its node, slot and expiry) and the record of every job that a
// reservation names, so that a reservation left after the load can be traced to its cause. It
// reads the buckets directly, through the loopback address and token the node wrote for
// `shotd cluster status`.
func dumpLedger(t *testing.T, ctx context.Context, root *chaos.Root, accountID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ledger, jobs, closeConn, err := buckets(ctx, root)
	if err != nil {
		t.Logf("ledger dump: %v", err)
		return
	}
	defer closeConn()
	keys, err := ledger.Keys(ctx)
	if err != nil {
		t.Logf("ledger dump: keys: %v", err)
		return
	}
	now := time.Now()
	for _, key := range keys {
		if !strings.HasPrefix(key, accountID+".") {
			continue
		}
		e, err := ledger.Get(ctx, key)
		if err != nil {
			t.Logf("ledger dump: %s: %v", key, err)
			continue
		}
		var r struct {
			Billed int `json:"billed"`
			Res    map[string]struct {
				Node    string    `json:"node"`
				Slot    bool      `json:"slot"`
				Expires time.Time `json:"exp"`
			} `json:"res"`
			Bills map[string]int64 `json:"bills"` // billed reservation -> kept until (Unix s)
		}
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			t.Logf("ledger dump: %s: %v: %s", key, err, e.Value())
			continue
		}
		t.Logf("ledger %s (revision %d, written %s ago): billed %d, %d reservations, %d bills remembered",
			key, e.Revision(), now.Sub(e.Created()).Round(time.Millisecond), r.Billed, len(r.Res), len(r.Bills))
		ids := make([]string, 0, len(r.Res))
		for id := range r.Res {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			v := r.Res[id]
			t.Logf("  reservation %s: node %s, slot %v, expires %s (in %s)", id, v.Node, v.Slot,
				v.Expires.UTC().Format(time.RFC3339Nano), v.Expires.Sub(now).Round(time.Millisecond))
			jobID, ok := strings.CutPrefix(id, "job-")
			if !ok {
				continue
			}
			je, err := jobs.Get(ctx, "j."+jobID)
			if err != nil {
				t.Logf("    job %s: %v", jobID, err)
				continue
			}
			t.Logf("    job %s (revision %d): %s", jobID, je.Revision(), je.Value())
		}
	}
}

// dumpJob logs a job's record as the node of root reads it, or why it has none: a job answered
// 202 that the admin API's list lacks is either missing from the bucket or missed by the list.
func dumpJob(t *testing.T, ctx context.Context, root *chaos.Root, jobID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, jobs, closeConn, err := buckets(ctx, root)
	if err != nil {
		t.Logf("job dump: %v", err)
		return
	}
	defer closeConn()
	e, err := jobs.Get(ctx, "j."+jobID)
	if err != nil {
		t.Logf("job %s: %v", jobID, err)
		return
	}
	t.Logf("job %s (revision %d, %s): %s", jobID, e.Revision(), e.Operation(), e.Value())
}

// buckets opens the ledger and jobs buckets of the node of root, through the loopback address
// and token it wrote for `shotd cluster status`; closeConn closes the connection.
func buckets(ctx context.Context, root *chaos.Root) (ledger, jobs jetstream.KeyValue, closeConn func(), err error) {
	data, err := os.ReadFile(filepath.Join(root.DataDir, "cluster", cluster.ClientFile))
	if err != nil {
		return nil, nil, nil, err
	}
	var ci struct{ URL, Token string }
	if err := json.Unmarshal(data, &ci); err != nil {
		return nil, nil, nil, err
	}
	nc, err := nats.Connect(ci.URL, nats.Token(ci.Token), nats.Name("clustertest-dump"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err == nil {
		ledger, err = js.KeyValue(ctx, cluster.BucketLedger)
	}
	if err == nil {
		jobs, err = js.KeyValue(ctx, cluster.BucketJobs)
	}
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return ledger, jobs, nc.Close, nil
}
