package webhook_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/internal/testkit"
	"github.com/shotd/shotd/view"
	"github.com/shotd/shotd/webhook"
)

// TestSend: one delivery to a receiver on loopback, signed with the key's secret, carries the
// job record as the public API shows it plus the event, and the headers that name them.
func TestSend(t *testing.T) {
	st := storetest.Open(t, "")
	acc, err := st.CreateAccount("hooks@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	rc := testkit.StartReceiver(t)
	rc.Verify(key.SecretKey)
	s := &webhook.Sender{Client: webhook.NewClient((&net.Dialer{}).DialContext, 5*time.Second), Keys: st, PublicURL: "https://shots.example"}

	tests := []struct {
		name   string
		status string
		event  string
	}{
		{"succeeded", shotd.JobSucceeded, webhook.EventSucceeded},
		{"failed", shotd.JobFailed, webhook.EventFailed},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
			j := shotd.Job{JobID: "j_" + tt.name, Status: tt.status, AccessKey: key.AccessKey, CreatedAt: now, UpdatedAt: now,
				Webhook: &shotd.WebhookState{URL: rc.URL(), Status: shotd.WebhookPending, Attempts: 2, Sign: true}}
			if err := s.Send(j); err != nil {
				t.Fatal(err)
			}
			ds := rc.Deliveries()
			if len(ds) != i+1 {
				t.Fatalf("%d deliveries, want %d", len(ds), i+1)
			}
			d := ds[i]
			if !d.Acknowledged() {
				t.Fatalf("delivery not acknowledged: %v (status %d)", d.Err, d.Status)
			}
			want, _ := json.Marshal(webhook.Body{JobView: view.NewJobView(j, "https://shots.example"), Event: tt.event})
			if string(d.Body) != string(want) {
				t.Errorf("body\n got %s\nwant %s", d.Body, want)
			}
			for h, v := range map[string]string{"x-webhook-event": tt.event, "x-job-id": j.JobID, "x-webhook-attempt": "2",
				"Content-Type": "application/json", "User-Agent": "shotd-webhook/1"} {
				if got := d.Header.Get(h); got != v {
					t.Errorf("%s = %q, want %q", h, got, v)
				}
			}
		})
	}
}

// TestSendRefused: a redirect or an answer other than 2xx is a failed attempt, and a redirect is
// not followed.
func TestSendRefused(t *testing.T) {
	rc := testkit.StartReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(rc.URL(), http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	s := &webhook.Sender{Client: webhook.NewClient((&net.Dialer{}).DialContext, 5*time.Second)}
	j := shotd.Job{JobID: "j_1", Status: shotd.JobSucceeded, Webhook: &shotd.WebhookState{URL: redirect.URL, Attempts: 1}}
	if err := s.Send(j); err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("redirect: %v, want a failed attempt naming 307", err)
	}
	if n := len(rc.Deliveries()); n != 0 {
		t.Errorf("the redirect was followed: %d deliveries", n)
	}
	rc.Fail(1)
	j.Webhook.URL = rc.URL()
	if err := s.Send(j); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("500: %v, want a failed attempt", err)
	}
}
