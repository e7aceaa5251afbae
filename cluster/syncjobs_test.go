package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/webhook"
)

type oneKey shotd.Key

func (k oneKey) Key(string) (shotd.Key, error) { return shotd.Key(k), nil }

// TestRecordFinishedDelivered: the ended job of a sync render with webhook_url on
// ScreenshotOne's paths, recorded on one node, is delivered by the cluster once, in their body
// and signed their way (X-ScreenshotOne-Signature, the key's HMAC-SHA256 of the raw body),
// never rendered, even when its hook message comes before its record; a failed one with webhook_errors=true too; and every node answers its job
// the same.
func TestRecordFinishedDelivered(t *testing.T) {
	nodes := startCluster(t, 3)
	key := shotd.Key{AccessKey: "ak_sync", SecretKey: "sk_sync_secret", AccountID: "acc_sync"}
	bodies := make(chan []byte, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(key.SecretKey))
		mac.Write(raw)
		if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.Header.Get("X-ScreenshotOne-Signature"))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			t.Errorf("delivery not signed their way: %s", raw)
			return
		}
		bodies <- raw
	}))
	t.Cleanup(srv.Close)
	sender := &webhook.Sender{Client: webhook.NewClient((&net.Dialer{}).DialContext, 5*time.Second), Keys: oneKey(key),
		PublicURL: "http://shotd.test"}
	var js []*jobsNode
	for i, n := range nodes {
		js = append(js, startJobsNode(t, n, func(ctx context.Context, o *shotd.Options) (*shotd.Output, error) {
			t.Error("a recorded sync render was rendered again")
			return pngOut(), nil
		}, sender, func(c *JobsConfig) {
			if i == 0 { // its hook message comes before its record: the delivery waits for it
				c.published = func(workMsg) { time.Sleep(2 * time.Second) }
			}
		}))
	}
	acc := shotd.Account{ID: key.AccountID, CreatedAt: time.Now()}
	req := func(ext string) shotd.JobRequest {
		o := &shotd.Options{URL: "http://127.0.0.1:1/", Format: "png", Dialect: shotd.DialectS1, WebhookURL: srv.URL + "/hook",
			WebhookSign: true, ExternalIdentifier: ext}
		return shotd.JobRequest{Account: acc, Plan: shotd.Plan{MonthlyQuota: 10,
			PlanLimits: shotd.PlanLimits{Concurrency: 1}}, AccessKey: key.AccessKey,
			Options: []*shotd.Options{o}}
	}
	result := &shotd.JobResult{FileID: "f_sync", Format: "png", ContentType: "image/png", SizeBytes: 10, Cache: "MISS",
		ExpiresAt: time.Now().Add(time.Hour).UTC()}
	okID, err := js[0].jobs.RecordFinished(req("sync-ok"), result, nil)
	if err != nil {
		t.Fatal(err)
	}
	badID, err := js[0].jobs.RecordFinished(req("sync-bad"), nil, shotd.Errorf(shotd.CodeNavigationFailed, "no such host"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for len(got) < 2 {
		select {
		case raw := <-bodies:
			var b map[string]any
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatal(err)
			}
			id, _ := b["job_id"].(string)
			if got[id] != nil {
				t.Fatalf("job %s delivered twice", id)
			}
			got[id] = b
		case <-time.After(30 * time.Second):
			t.Fatalf("deliveries: %d of 2", len(got))
		}
	}
	if b := got[okID]; b["is_successful"] != true || b["external_identifier"] != "sync-ok" {
		t.Errorf("succeeded sync render's webhook %v", b)
	}
	if b := got[badID]; b["is_successful"] != false || b["error_code"] != "name_not_resolved" {
		t.Errorf("failed sync render's webhook %v", b)
	}
	// The sender hears a delivery before its outcome is written: wait for the records.
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range js {
		for {
			j, err := n.jobs.Job(acc.ID, okID)
			if err == nil && j.Webhook != nil && j.Webhook.Status != shotd.WebhookPending {
				if j.Status != shotd.JobSucceeded || j.Result == nil || j.Result.FileID != "f_sync" ||
					j.Webhook.Status != shotd.WebhookDelivered || j.Webhook.Attempts != 1 {
					t.Fatalf("job %+v webhook %+v", j, j.Webhook)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %+v %v", okID, j, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := js[2].jobs.Job("acc_other", okID); err == nil {
		t.Error("another account reads the job")
	}
}
