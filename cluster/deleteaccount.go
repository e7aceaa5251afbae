package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd"
)

// DeleteAccount removes account id from the cluster: its keys (which stop working on every node
// at once), its jobs and batches, the shared records of its files and the account. The keys are
// revoked first, so that no new job of the account is queued while its jobs are read; a job
// request authenticated just before (or on a node whose copy of the keys lags) may still write
// its records after a first read, so the jobs are read again once such a request is over
// (revokeSettle). An account with a job queued or rendering is refused (shotd.ErrAccountBusy):
// its keys are put back, and nothing else is removed. The
// objects of its files stay in the S3 bucket until the node that stored each file sweeps it at
// its expiry (or the bucket's lifecycle rule does): no key can fetch them any more. Its usage
// in the ledger stays, as a record of what it was billed, until the period's record is unused.
func DeleteAccount(b *Book, j *Jobs, files *Files, id string) (shotd.AccountDeletion, error) {
	var d shotd.AccountDeletion
	if _, err := b.Account(id); err != nil {
		return d, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys, err := b.Keys(id)
	if err != nil {
		return d, err
	}
	revoked := make([]jetstream.KeyValueEntry, 0, len(keys))
	// putBack gives the revoked keys back when the account is not deleted after all: with a
	// time of its own, whatever the reads before it used up, and retried (no quorum for a while
	// must not delete the keys for good).
	putBack := func(cause error) (shotd.AccountDeletion, error) {
		pctx, cancel := context.WithTimeout(context.Background(), putBackTimeout)
		defer cancel()
		for _, e := range revoked {
			if err := j.recreate(pctx, b.keys, e); err != nil {
				return shotd.AccountDeletion{}, errors.Join(cause, fmt.Errorf("cluster: put back key %s: %w", redact(e.Key()), err))
			}
		}
		return shotd.AccountDeletion{}, cause
	}
	for _, k := range keys {
		e, err := b.keys.Get(ctx, k.AccessKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err == nil {
			err = deleteKey(ctx, b.keys, k.AccessKey)
		}
		if err != nil {
			return putBack(unavailable(err))
		}
		revoked = append(revoked, e)
	}
	settled := time.Now().Add(j.revokeSettle())
	d.Keys = len(revoked)
	var jobs []jobRecord
	var batches []string
	for read := 0; read < 2; read++ {
		if read == 1 {
			// A request that passed the key check before the revocation (or on a node whose
			// copy of the keys lags) may have written its jobs since the first read.
			select {
			case <-time.After(time.Until(settled)):
			case <-ctx.Done():
				return putBack(unavailable(ctx.Err()))
			}
		}
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		jobs, batches, err = j.accountRecords(sctx, id)
		scancel()
		if err != nil {
			return putBack(unavailable(err))
		}
		for _, r := range jobs {
			if !r.Job.Final() {
				return putBack(shotd.ErrAccountBusy)
			}
		}
	}
	if err := deleteKey(ctx, b.accounts, id); err != nil {
		return d, err
	}
	for _, r := range jobs {
		if err := deleteKey(ctx, j.kv, jobKey(r.Job.JobID)); err != nil {
			return d, err
		}
		d.Jobs++
	}
	for _, id := range batches {
		if err := deleteKey(ctx, j.kv, batchKey(id)); err != nil {
			return d, err
		}
		d.Batches++
	}
	n, err := deleteMatching(ctx, files.js, files.kv, ">", func(data []byte, key string) bool {
		var r fileRecord
		return decode(files.log, "file", key, data, &r) == nil && r.Record.AccountID == id
	})
	d.Files = n
	return d, err
}

// putBackTimeout bounds the putting back of a refused deletion's keys.
const putBackTimeout = 30 * time.Second

// revokeSettle is how long after the revocation of an account's keys a job request that passed
// the key check before it may still write records: the key copies' lag (the watch, about a
// second) and the time Submit writes records for (submitRecordsWithin), with a margin for a write
// under way at its end.
func (j *Jobs) revokeSettle() time.Duration {
	if j.cfg.revokeSettle > 0 {
		return j.cfg.revokeSettle
	}
	return 2*time.Second + submitRecordsWithin + 3*time.Second
}

// recreate writes entry e back into kv, retried until ctx ends; a key there already (a try
// whose answer was lost) is no error.
func (j *Jobs) recreate(ctx context.Context, kv jetstream.KeyValue, e jetstream.KeyValueEntry) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := kv.Create(actx, e.Key(), e.Value())
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrKeyExists) {
			return nil
		}
		select { // not j.pause: a stopping node puts the keys back all the same
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(attempt+1, 10)) * 50 * time.Millisecond):
		}
	}
}

// unavailable makes err, from a read or write of the cluster's buckets, service_unavailable.
func unavailable(err error) error {
	if err == nil || shotd.CodeOf(err) != shotd.CodeInternalError {
		return err
	}
	return shotd.Wrap(shotd.CodeServiceUnavailable, err, "the cluster could not be reached; try again")
}

// accountRecords lists the job records and batch ids of an account: a scan of the jobs bucket,
// an operator's rare act.
func (j *Jobs) accountRecords(ctx context.Context, accountID string) ([]jobRecord, []string, error) {
	var jobs []jobRecord
	var batches []string
	err := scan(ctx, j.js, j.kv, "j.*", func(key string, data []byte) {
		if j.cfg.onRead != nil {
			j.cfg.onRead(key)
		}
		var r jobRecord
		if decode(j.log, "job", key, data, &r) == nil && r.Job.AccountID == accountID {
			jobs = append(jobs, r)
		}
	})
	if err == nil {
		err = scan(ctx, j.js, j.kv, "b.*", func(key string, data []byte) {
			var r batchRecord
			if decode(j.log, "batch", key, data, &r) == nil && r.Batch.AccountID == accountID {
				batches = append(batches, r.Batch.BatchID)
			}
		})
	}
	return jobs, batches, err
}

// scan reads every value of kv whose key matches filter. The keys come from the subjects of the
// bucket's stream, as its leader counts them at one instant: the bucket's own listing (an
// ordered consumer) can end early while keys are written, and leave some out (its end is a
// message that reports nothing pending, which writes meanwhile make wrong; nats.py #995
// describes the same watcher).
func scan(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, filter string, f func(key string, data []byte)) error {
	return scanWhere(ctx, js, kv, filter, nil, f)
}

// scanWhere is scan of the keys that keep picks (nil: all), the others not read.
func scanWhere(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, filter string, keep func(key string) bool, f func(key string, data []byte)) error {
	stream, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return fmt.Errorf("cluster: list %s: %w", filter, err)
	}
	prefix := "$KV." + kv.Bucket() + "."
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(prefix+filter))
	if err != nil {
		return fmt.Errorf("cluster: list %s: %w", filter, err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		if key := strings.TrimPrefix(subject, prefix); keep == nil || keep(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cluster: read %s: %w", key, err)
		}
		f(key, e.Value())
	}
	return nil
}

// deleteMatching deletes the values of kv under filter that match; it returns how many.
func deleteMatching(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, filter string, match func(data []byte, key string) bool) (int, error) {
	var keys []string
	if err := scan(ctx, js, kv, filter, func(key string, data []byte) {
		if match(data, key) {
			keys = append(keys, key)
		}
	}); err != nil {
		return 0, err
	}
	for i, k := range keys {
		if err := deleteKey(ctx, kv, k); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

func deleteKey(ctx context.Context, kv jetstream.KeyValue, key string) error {
	if err := kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("cluster: delete %s: %w", redact(key), err)
	}
	return nil
}

// JobsOf lists the jobs of an account, newest first, as store.Store.JobsOf does (limit 1..100,
// before the cursor of the previous page, next that of the following one, "" on the last). It
// scans the jobs bucket: for the admin API, not a request path.
func (j *Jobs) JobsOf(accountID, before string, limit int) ([]shotd.Job, string, error) {
	if limit < 1 || limit > 100 {
		limit = 100
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, _, err := j.accountRecords(ctx, accountID)
	if err != nil {
		return nil, "", unavailable(err)
	}
	all := make([]shotd.Job, len(recs))
	for i, r := range recs {
		all[i] = r.Job
		all[i].Options = nil
		all[i].Webhook = r.Hook.state()
	}
	slices.SortFunc(all, func(a, b shotd.Job) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.JobID, b.JobID))
	})
	start := 0
	if before != "" {
		start = len(all)
		if i := slices.IndexFunc(all, func(x shotd.Job) bool { return x.JobID == before }); i >= 0 {
			start = i + 1
		}
	}
	page := all[start:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = page[limit-1].JobID
	}
	return page, next, nil
}
