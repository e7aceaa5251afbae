package actors_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/objstore"
)

// closedFiles is the store with every file it opens closed at once: reading it fails, as a
// disk error would.
type closedFiles struct{ actors.JobFiles }

func (c closedFiles) OpenFile(rec shotd.FileRecord) (*os.File, error) {
	f, err := c.JobFiles.OpenFile(rec)
	if err == nil {
		f.Close()
	}
	return f, err
}

// TestJobStoredHitUnreadable: a store=true job whose cached file cannot be read is rendered
// instead: the service's own trouble, never a failure counted against the account.
func TestJobStoredHitUnreadable(t *testing.T) {
	st := storetest.Open(t, "")
	acc, _ := newJobAccount(t, st)
	o := jobOptions(t, `{"url":"https://example.test/","cache":true,"store":true,"storage_bucket":"user",
		"storage_endpoint":"http://127.0.0.1:9","storage_access_key_id":"k","storage_secret_access_key":"s"}`)
	s := &script{}
	out, _ := s.render(context.Background(), o)
	if _, err := st.PutCachedFile(acc.ID, out, time.Hour, o.ResponseCacheKey(acc.ID), o.CacheTTL); err != nil {
		t.Fatal(err)
	}
	up := &objstore.Uploader{Attempts: 1, Dial: func(context.Context, string, string) (net.Conn, error) {
		t.Error("an unreadable file was uploaded")
		return nil, errors.New("no upload in this test")
	}}
	r := actors.JobRenderer{Files: closedFiles{st}, Render: shotd.RenderFunc(s.render), Uploader: up, FileTTL: time.Hour,
		RenderGrace: time.Second, BusyRetry: time.Second}
	res, outcome, err := r.Run(context.Background(), o, acc.ID)
	if err != nil || outcome != shotd.OutcomeSucceeded || res.Cache != "MISS" || s.count() != 2 {
		t.Fatalf("%v outcome %v %+v, %d renders: want a fresh render, succeeded", err, outcome, res, s.count()-1)
	}
}

// TestAdmitStoredHit: a store=true cache hit (shotd.AdmitStoredHit) holds a concurrency slot
// but no quota: at the quota it is let in, at the concurrency limit it is not; settled, a failed
// upload counts in the failure window and a done one as a cache hit, neither billed.
func TestAdmitStoredHit(t *testing.T) {
	h := startAccounts(t, t.TempDir(), time.Now, 0)
	plan := shotd.Plan{Name: "default", MonthlyQuota: 1,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 100, StatusRequestsPerMinute: 100,
			Concurrency: 2, QueueLimit: 10, FailuresPerMinute: 1},
		Features: shotd.AllFeatures}
	acc := h.account(t, "default", 0)
	hit := shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitStoredHit}
	render, _, err := h.accounts.Admit(shotd.Admission{Account: acc, Plan: plan, Kind: shotd.AdmitRender}) // the quota's one
	if err != nil {
		t.Fatal(err)
	}
	first, l, err := h.accounts.Admit(hit)
	if err != nil {
		t.Fatalf("a stored hit at the quota: %v", err)
	}
	if l.ConcurrencyRemaining != 0 || l.QuotaRemaining != 0 {
		t.Errorf("limits %+v: want no slot left, the quota reserved by the render alone", l)
	}
	if _, _, err := h.accounts.Admit(hit); shotd.CodeOf(err) != shotd.CodeConcurrencyLimit {
		t.Fatalf("a stored hit past the concurrency: %v, want concurrency_limit", err)
	}
	if _, err := h.accounts.Settle(acc.ID, render.Ticket, shotd.OutcomeReleased); err != nil {
		t.Fatal(err)
	}
	if _, err := h.accounts.Settle(acc.ID, first.Ticket, shotd.OutcomeFailed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.accounts.Admit(hit); shotd.CodeOf(err) != shotd.CodeFailureLimit {
		t.Fatalf("a stored hit after a failed one, one failure a minute allowed: %v, want failure_limit", err)
	}
	u, err := h.accounts.Usage(acc, plan)
	if err != nil {
		t.Fatal(err)
	}
	if u.Quota.Used != 0 || u.Renders.Failed != 1 || u.Renders.CacheHits != 0 {
		t.Errorf("usage %+v %+v: want nothing billed, one failure", u.Quota, u.Renders)
	}
}
