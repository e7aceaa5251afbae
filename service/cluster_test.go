package service

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/freeport"
	"github.com/shotd/shotd/internal/s3test"
	"github.com/shotd/shotd/internal/testkit"
)

// TestOpenCloseCluster: a node in cluster mode (a cluster of one) makes its first account in the
// cluster's buckets, renders and bills through the ledger, stops its NATS server at Close, and
// finds its accounts and usage again at the next start from data_dir/cluster.
func TestOpenCloseCluster(t *testing.T) {
	srv := s3test.Start(t, "results")
	dir := t.TempDir()
	route := freeport.Addr(t)
	open := func() *Service {
		cfg := testConfig(dir)
		cfg.Storage.S3 = config.S3{Endpoint: srv.Endpoint(), Region: s3test.Region, Bucket: "results", Addressing: "path",
			AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}
		cfg.Network.AllowPrivate = []string{"127.0.0.1"} // the webhook receiver
		cfg.Cluster = config.Cluster{NodeName: "n1", Name: "shotd", Listen: route, Replicas: 3}
		cfg.Plans["extra"] = shotd.Plan{Name: "extra", MonthlyQuota: 5,
			PlanLimits: shotd.PlanLimits{RequestsPerMinute: 5, StatusRequestsPerMinute: 5,
				Concurrency: 1, QueueLimit: 1, FailuresPerMinute: 1}}
		svc, err := Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := svc.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		return svc
	}
	closeIt := func(svc *Service) {
		if err := svc.Close(context.Background()); err != nil {
			t.Error(err)
		}
		noChromeLeft(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "cluster", "client.json")); !os.IsNotExist(err) {
			t.Errorf("client.json after Close: %v", err)
		}
	}
	used := func(svc *Service, key string) int {
		t.Helper()
		resp, err := http.Get("http://" + svc.PublicAddr().String() + "/api/v1/usage?access_key=" + url.QueryEscape(key))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var u shotd.UsageReport
		if err := json.NewDecoder(resp.Body).Decode(&u); err != nil || resp.StatusCode != 200 {
			t.Fatalf("usage: %d %v", resp.StatusCode, err)
		}
		return u.Quota.Used
	}

	svc := open()
	fs := svc.FirstStart()
	if fs == nil {
		t.Fatal("no first start in an empty cluster")
	}
	if _, err := svc.Store().Keys("default"); err == nil {
		t.Error("the first account went to bbolt, not to the cluster")
	}
	if code := get(t, "http://"+svc.PublicAddr().String()+"/readyz"); code != 200 {
		t.Errorf("/readyz answered %d", code)
	}
	if a := render(t, svc, fs.AccessKey, url.Values{"html": {"<h1>one</h1>"}}); a.status != 200 {
		t.Fatalf("render: %d %s", a.status, a.body)
	}
	if n := used(svc, fs.AccessKey); n != 1 {
		t.Fatalf("used %d after one render, want 1", n)
	}
	// The node's NATS listener, on loopback like the allow-listed receiver, is refused to pages.
	listeners := svc.cluster.node.Listeners()
	if len(listeners) == 0 {
		t.Fatal("the node names no listener")
	}
	for _, l := range listeners {
		if a := render(t, svc, fs.AccessKey, url.Values{"url": {"http://" + l.String() + "/"}}); a.status != 403 || a.code != string(shotd.CodeHostNotAllowed) {
			t.Errorf("a page at the node's listener %s: %d %s, want 403 host_not_allowed", l, a.status, a.body)
		}
	}
	// An async job is the cluster's: queued, rendered, billed through the same ledger.
	q := url.Values{"html": {"<h1>two</h1>"}, "async": {"true"}, "access_key": {fs.AccessKey}}
	resp, err := http.Get("http://" + svc.PublicAddr().String() + "/api/v1/screenshot?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	var accepted struct {
		JobID string `json:"job_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&accepted)
	resp.Body.Close()
	if resp.StatusCode != 202 || err != nil {
		t.Fatalf("async: %d %v", resp.StatusCode, err)
	}
	jobStatus := func(svc *Service) string {
		t.Helper()
		resp, err := http.Get("http://" + svc.PublicAddr().String() + "/api/v1/jobs/" + accepted.JobID + "?access_key=" + url.QueryEscape(fs.AccessKey))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var j struct {
			Status string `json:"status"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != 200 {
			t.Fatalf("job: %d %v", resp.StatusCode, err)
		}
		return j.Status
	}
	for deadline := time.Now().Add(60 * time.Second); jobStatus(svc) != shotd.JobSucceeded; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %s, not succeeded", accepted.JobID, jobStatus(svc))
		}
	}
	if n := used(svc, fs.AccessKey); n != 2 {
		t.Fatalf("used %d after a render and a job, want 2", n)
	}
	syncWebhook(t, svc, fs)
	closeIt(svc)

	svc = open()
	defer closeIt(svc)
	if svc.FirstStart() != nil {
		t.Error("a second first start: the cluster's accounts were not kept")
	}
	if n := used(svc, fs.AccessKey); n != 3 {
		t.Fatalf("used %d after the restart, want 3", n)
	}
	if st := jobStatus(svc); st != shotd.JobSucceeded {
		t.Fatalf("job after the restart: %s", st)
	}

	// A reload that drops a plan an account of the cluster has is refused.
	acc, err := svc.cluster.book.CreateAccount("x@example.test", "extra", true)
	if err != nil {
		t.Fatal(err)
	}
	next := testConfig(dir)
	if err := svc.Reload(next); err == nil || !strings.Contains(err.Error(), acc.ID) {
		t.Fatalf("reload without plan extra: %v, want a refusal naming %s", err, acc.ID)
	}
}

// syncWebhook: a sync /take with webhook_url on ScreenshotOne's paths sends its webhook in
// cluster mode too, signed their way, for the render it answered (billed once, by the gate).
func syncWebhook(t *testing.T, svc *Service, fs *FirstStart) {
	t.Helper()
	rc := testkit.StartReceiver(t)
	q := url.Values{"html": {"<h1>sync</h1>"}, "access_key": {fs.AccessKey}, "webhook_url": {rc.URL()}, "external_identifier": {"s7"}}
	resp, err := http.Get("http://" + svc.PublicAddr().String() + "/take?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("sync take: %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ds := rc.Deliveries(); len(ds) > 0 {
			d := ds[0]
			mac := hmac.New(sha256.New, []byte(fs.SecretKey))
			mac.Write(d.Body)
			var b struct {
				IsSuccessful       bool   `json:"is_successful"`
				ExternalIdentifier string `json:"external_identifier"`
			}
			if err := json.Unmarshal(d.Body, &b); err != nil || !b.IsSuccessful || b.ExternalIdentifier != "s7" ||
				d.Header.Get("X-ScreenshotOne-Signature") != hex.EncodeToString(mac.Sum(nil)) {
				t.Fatalf("sync webhook %s (%v), signature %q", d.Body, err, d.Header.Get("X-ScreenshotOne-Signature"))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no webhook of the sync take")
		}
	}
}
