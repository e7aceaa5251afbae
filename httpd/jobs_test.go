package httpd_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

func init() {
	// Generous rate allowances: the tests poll job records, which counts against the status
	// allowance, and fail renders on purpose, which counts against the failure window.
	testPlans["jobs"] = shotd.Plan{MonthlyQuota: 1000,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 100000,
			Concurrency: 4, QueueLimit: 50, FailuresPerMinute: 1000},
		Features: shotd.AllFeatures}
	testPlans["jobs-serial"] = shotd.Plan{MonthlyQuota: 1000,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 100000,
			Concurrency: 1, QueueLimit: 50, FailuresPerMinute: 1000},
		Features: shotd.AllFeatures}
	testPlans["jobs-queue3"] = shotd.Plan{MonthlyQuota: 1000,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 100000,
			Concurrency: 1, QueueLimit: 3, FailuresPerMinute: 1000},
		Features: shotd.AllFeatures}
	// bench-accept never gets a concurrency slot: its jobs stay queued, so BenchmarkAsyncAccept
	// measures acceptance alone, with no render competing for the two cores.
	testPlans["bench-accept"] = shotd.Plan{MonthlyQuota: 1 << 30,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1 << 30, StatusRequestsPerMinute: 1 << 30,
			Concurrency: 0, QueueLimit: 1 << 30, FailuresPerMinute: 1 << 30},
		Features: shotd.AllFeatures}
	// bench-render lets its jobs run (against a closed port: they fail fast, without billing).
	testPlans["bench-render"] = shotd.Plan{MonthlyQuota: 1 << 30,
		PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1 << 30, StatusRequestsPerMinute: 1 << 30,
			Concurrency: 2, QueueLimit: 1 << 30, FailuresPerMinute: 1 << 30},
		Features: shotd.AllFeatures}
}

// jobRecord is the job record of GET /api/v1/jobs/{id} as a client reads it.
type jobRecord struct {
	JobID        string        `json:"job_id"`
	Status       string        `json:"status"`
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	BatchID      string        `json:"batch_id"`
	Result       *renderResult `json:"result"`
	ErrorCode    string        `json:"error_code"`
	ErrorMessage string        `json:"error_message"`
	Webhook      *struct {
		URL      string `json:"url"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"webhook"`
}

// renderResult is the render result of a succeeded job (and of response_type=json).
type renderResult struct {
	FileID      string    `json:"file_id"`
	URL         string    `json:"url"`
	ExpiresAt   time.Time `json:"expires_at"`
	Format      string    `json:"format"`
	ContentType string    `json:"content_type"`
	SizeBytes   int64     `json:"size_bytes"`
	RenderMs    int64     `json:"render_ms"`
	Cache       string    `json:"cache"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
}

type batchRecord struct {
	BatchID string `json:"batch_id"`
	Status  string `json:"status"`
	Total   int    `json:"total"`
	Counts  struct {
		Queued    int `json:"queued"`
		Rendering int `json:"rendering"`
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
	} `json:"counts"`
	Jobs []jobRecord `json:"jobs"`
}

func final(status string) bool { return status == "succeeded" || status == "failed" }

func postJSON(t *testing.T, path, accessKey string, body []byte) answer {
	t.Helper()
	return do(t, http.MethodPost, env.base+path+"?access_key="+url.QueryEscape(accessKey), body,
		map[string]string{"Content-Type": "application/json"})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// submit posts one async render with key and checks the 202 acceptance body:
// exactly job_id, status queued and status_url. It returns the job id.
func submit(t *testing.T, accessKey string, opts map[string]any) string {
	t.Helper()
	o := maps.Clone(opts)
	o["async"] = true
	r := postJSON(t, "/api/v1/screenshot", accessKey, mustJSON(t, o))
	if r.status != http.StatusAccepted {
		t.Fatalf("async render: status %d, want 202: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("202 Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("202 body is not a JSON object (%d bytes)", len(r.body))
	}
	id, _ := body["job_id"].(string)
	want := map[string]any{"job_id": id, "status": "queued", "status_url": "http://shotd.test/api/v1/jobs/" + id}
	if id == "" || !maps.Equal(body, want) {
		t.Fatalf("202 body %v, want exactly %v", body, want)
	}
	return id
}

// getJob reads a job record with key and checks its status and shape.
func getJob(t *testing.T, accessKey, id string) jobRecord {
	t.Helper()
	r := get(t, "/api/v1/jobs/"+id, url.Values{"access_key": {accessKey}})
	if r.status != http.StatusOK {
		t.Fatalf("GET job %s: status %d: %s", id, r.status, r.body)
	}
	var j jobRecord
	if err := json.Unmarshal(r.body, &j); err != nil {
		t.Fatalf("job record is not JSON (%d bytes): %v", len(r.body), err)
	}
	if j.JobID != id {
		t.Fatalf("job record of %q, want %q", j.JobID, id)
	}
	return j
}

// waitJob polls a job until done says it is, or fails after timeout.
func waitJob(t *testing.T, accessKey, id string, timeout time.Duration, done func(jobRecord) bool) jobRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		j := getJob(t, accessKey, id)
		if done(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s (webhook %+v) after %v", id, j.Status, j.Webhook, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitFinal(t *testing.T, accessKey, id string) jobRecord {
	t.Helper()
	return waitJob(t, accessKey, id, 40*time.Second, func(j jobRecord) bool { return final(j.Status) })
}

// waitDelivered waits until the job ended and its webhook is no longer pending.
func waitDelivered(t *testing.T, accessKey, id string) jobRecord {
	t.Helper()
	return waitJob(t, accessKey, id, 40*time.Second, func(j jobRecord) bool {
		return final(j.Status) && j.Webhook != nil && j.Webhook.Status != "pending"
	})
}

// checkResult checks a succeeded job's result and fetches its file, which must
// stream the image described.
func checkResult(t *testing.T, accessKey string, res *renderResult, w, h int) {
	t.Helper()
	if res == nil {
		t.Fatal("succeeded job without result")
	}
	switch {
	case res.FileID == "" || res.URL != "http://shotd.test/api/v1/files/"+res.FileID:
		t.Fatalf("result file_id %q url %q", res.FileID, res.URL)
	case res.Format != "png" || res.ContentType != "image/png" || res.Cache != "MISS":
		t.Fatalf("result format %q content_type %q cache %q", res.Format, res.ContentType, res.Cache)
	case res.SizeBytes <= 0 || res.RenderMs < 0:
		t.Fatalf("result size %d render_ms %d", res.SizeBytes, res.RenderMs)
	case res.Width != w || res.Height != h:
		t.Fatalf("result %dx%d, want %dx%d", res.Width, res.Height, w, h)
	case time.Until(res.ExpiresAt) < 50*time.Minute || time.Until(res.ExpiresAt) > 61*time.Minute:
		t.Fatalf("expires_at %v, want in about an hour (file TTL)", res.ExpiresAt)
	}
	f := get(t, "/api/v1/files/"+res.FileID, url.Values{"access_key": {accessKey}})
	if f.status != http.StatusOK || f.header.Get("Content-Type") != "image/png" || int64(len(f.body)) != res.SizeBytes {
		t.Fatalf("file: status %d, %s, %d bytes; want 200 image/png %d bytes", f.status, f.header.Get("Content-Type"), len(f.body), res.SizeBytes)
	}
	if gw, gh := imageSize(t, "png", f.body); gw != w || gh != h {
		t.Fatalf("file is %dx%d, want %dx%d", gw, gh, w, h)
	}
}

func TestJobLifecycle(t *testing.T) {
	a := newAccount(t, "jobs", true)
	other := newAccount(t, "jobs", true)
	closed := closedPort(t)
	cases := []struct {
		name    string
		opts    map[string]any
		status  string
		code    shotd.Code
		minTook time.Duration // the job cannot end sooner
	}{
		{"succeeds", map[string]any{"url": page("/"), "viewport_width": 400, "viewport_height": 300}, "succeeded", "", 0},
		{"html source", map[string]any{"html": "<h1>job</h1>", "viewport_width": 320, "viewport_height": 200}, "succeeded", "", 0},
		{"connection refused", map[string]any{"url": "http://127.0.0.1:" + closed + "/"}, "failed", shotd.CodeNavigationFailed, 0},
		{"page too slow", map[string]any{"url": page("/slow"), "timeout": 1}, "failed", shotd.CodeTimeout, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			// The 202 comes whatever the render will do: render errors never show in it.
			id := submit(t, a.key.AccessKey, c.opts)
			if !strings.HasPrefix(id, "job_") {
				t.Fatalf("job id %q", id)
			}
			first := getJob(t, a.key.AccessKey, id)
			if final(first.Status) && time.Since(start) < c.minTook {
				t.Fatalf("job %s right after acceptance, too soon", first.Status)
			}
			if first.CreatedAt.IsZero() || first.CreatedAt.Before(start.Add(-time.Second)) || first.CreatedAt.After(time.Now().Add(time.Second)) {
				t.Fatalf("created_at %v, want about %v", first.CreatedAt, start)
			}

			j := waitFinal(t, a.key.AccessKey, id)
			if j.Status != c.status {
				t.Fatalf("job ended %s (%s: %s), want %s", j.Status, j.ErrorCode, j.ErrorMessage, c.status)
			}
			if !j.CreatedAt.Equal(first.CreatedAt) || j.UpdatedAt.Before(j.CreatedAt) {
				t.Fatalf("created_at %v -> %v, updated_at %v", first.CreatedAt, j.CreatedAt, j.UpdatedAt)
			}
			if j.BatchID != "" || j.Webhook != nil {
				t.Fatalf("async job with batch_id %q webhook %+v", j.BatchID, j.Webhook)
			}
			if c.status == "failed" {
				if j.ErrorCode != string(c.code) || j.ErrorMessage == "" || j.Result != nil {
					t.Fatalf("failed job: error_code %q message %q result %+v; want %s", j.ErrorCode, j.ErrorMessage, j.Result, c.code)
				}
				if took := j.UpdatedAt.Sub(j.CreatedAt); took < c.minTook {
					t.Fatalf("failed after %v, before %v", took, c.minTook)
				}
				return
			}
			if j.ErrorCode != "" || j.ErrorMessage != "" {
				t.Fatalf("succeeded job with error %q %q", j.ErrorCode, j.ErrorMessage)
			}
			checkResult(t, a.key.AccessKey, j.Result, c.opts["viewport_width"].(int), c.opts["viewport_height"].(int))

			// Another account sees neither the job nor its file.
			wantError(t, get(t, "/api/v1/jobs/"+id, other.q()), 404, shotd.CodeJobNotFound)
			wantError(t, get(t, "/api/v1/files/"+j.Result.FileID, other.q()), 404, shotd.CodeFileNotFound)
		})
	}

	t.Run("usage", func(t *testing.T) {
		waitUsage(t, a, "2 succeeded and 2 failed jobs, billed once each, none held", func(u usageRecord) bool {
			return u.Renders.Succeeded == 2 && u.Renders.Failed == 2 && u.Quota.Used == 2 && u.Jobs.Waiting == 0 && u.Jobs.Running == 0
		})
	})
}

type usageRecord struct {
	Quota struct {
		Used      int `json:"used"`
		Remaining int `json:"remaining"`
	} `json:"quota"`
	Renders struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
	} `json:"renders"`
	Jobs struct {
		Waiting int `json:"waiting"`
		Running int `json:"running"`
	} `json:"jobs"`
}

func usageOf(t *testing.T, a account) usageRecord {
	t.Helper()
	r := get(t, "/api/v1/usage", a.q())
	if r.status != 200 {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	var u usageRecord
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// waitUsage polls the usage until ok holds: a job's record ends before its account actor has
// settled it, so the counts follow a moment later.
func waitUsage(t *testing.T, a account, want string, ok func(usageRecord) bool) {
	t.Helper()
	var u usageRecord
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if u = usageOf(t, a); ok(u) {
			return
		}
	}
	t.Fatalf("usage %+v, want %s", u, want)
}

// newReceiver is a webhook receiver that checks signatures with secret ("": none) and answers
// 500 to its first fail deliveries (to all of them when fail < 0).
func newReceiver(t *testing.T, secret string, fail int) *testkit.Receiver {
	rc := testkit.StartReceiver(t)
	rc.Verify(secret)
	rc.Fail(fail)
	return rc
}

// checkDelivery checks one delivery against the job record as GET shows it now (after the
// delivery ended): the signed webhook headers and a body that is the record plus event.
func checkDelivery(t *testing.T, d testkit.Delivery, rec jobRecord, recRaw []byte, attempt int) {
	t.Helper()
	event := "job." + rec.Status
	h := d.Header
	if d.Err != nil {
		t.Fatalf("attempt %d does not verify: %v", attempt, d.Err)
	}
	if got := h.Get("x-webhook-event"); got != event {
		t.Fatalf("x-webhook-event %q, want %q", got, event)
	}
	if got := h.Get("x-job-id"); got != rec.JobID {
		t.Fatalf("x-job-id %q, want %q", got, rec.JobID)
	}
	if got := h.Get("x-webhook-attempt"); got != strconv.Itoa(attempt) {
		t.Fatalf("x-webhook-attempt %q, want %d", got, attempt)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("delivery Content-Type %q", ct)
	}
	var body, want map[string]json.RawMessage
	if err := json.Unmarshal(d.Body, &body); err != nil {
		t.Fatalf("delivery body is not a JSON object (%d bytes)", len(d.Body))
	}
	if err := json.Unmarshal(recRaw, &want); err != nil {
		t.Fatal(err)
	}
	if string(body["event"]) != strconv.Quote(event) {
		t.Fatalf("event %s, want %q", body["event"], event)
	}
	delete(body, "event")
	if !slices.Equal(slices.Sorted(maps.Keys(body)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("delivery fields %v, job record fields %v", slices.Sorted(maps.Keys(body)), slices.Sorted(maps.Keys(want)))
	}
	for k := range want {
		switch k {
		case "updated_at", "webhook": // they move with every attempt; checked below
			continue
		}
		if string(body[k]) != string(want[k]) {
			t.Fatalf("delivery %s = %s, job record says %s", k, body[k], want[k])
		}
	}
	var sent jobRecord
	if err := json.Unmarshal(d.Body, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.UpdatedAt.Before(sent.CreatedAt) || sent.UpdatedAt.After(rec.UpdatedAt) {
		t.Fatalf("delivery updated_at %v, created_at %v, record updated_at %v", sent.UpdatedAt, sent.CreatedAt, rec.UpdatedAt)
	}
	if w := sent.Webhook; w == nil || w.URL != rec.Webhook.URL || w.Status != "pending" || w.Attempts != attempt {
		t.Fatalf("delivery webhook %+v, want url %s, pending, attempt %d", w, rec.Webhook.URL, attempt)
	}
}

func TestWebhookDelivery(t *testing.T) {
	a := newAccount(t, "jobs", true)
	// A second key of the same account: a delivery is signed with the secret of the key that
	// made the job, not with another key of the account.
	second, err := env.st.CreateKey(a.acc.ID, "second", false)
	if err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)
	cases := []struct {
		name   string
		key    shotd.Key
		opts   map[string]any
		status string
		code   shotd.Code
		sign   bool
	}{
		{"succeeded", a.key, map[string]any{"url": page("/"), "viewport_width": 300, "viewport_height": 200}, "succeeded", "", true},
		{"failed", a.key, map[string]any{"url": "http://127.0.0.1:" + closed + "/"}, "failed", shotd.CodeNavigationFailed, true},
		{"second key", second, map[string]any{"html": "<p>2</p>", "viewport_width": 300, "viewport_height": 200}, "succeeded", "", true},
		{"unsigned", a.key, map[string]any{"html": "<p>u</p>", "viewport_width": 300, "viewport_height": 200, "webhook_sign": false}, "succeeded", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secret := ""
			if c.sign {
				secret = c.key.SecretKey
			}
			rc := newReceiver(t, secret, 0)
			opts := maps.Clone(c.opts)
			opts["webhook_url"] = rc.URL()
			id := submit(t, c.key.AccessKey, opts)
			j := waitDelivered(t, c.key.AccessKey, id)
			if j.Status != c.status || j.ErrorCode != string(c.code) {
				t.Fatalf("job %s %s, want %s %s", j.Status, j.ErrorCode, c.status, c.code)
			}
			if j.Webhook.Status != "delivered" || j.Webhook.Attempts != 1 || j.Webhook.URL != rc.URL() {
				t.Fatalf("webhook %+v, want delivered at attempt 1 to %s", j.Webhook, rc.URL())
			}
			raw := get(t, "/api/v1/jobs/"+id, url.Values{"access_key": {c.key.AccessKey}}).body
			ds := rc.Deliveries()
			if len(ds) != 1 {
				t.Fatalf("receiver got %d deliveries, want 1", len(ds))
			}
			d := ds[0]
			if !c.sign {
				if _, ok := d.Header["X-Signature"]; ok {
					t.Fatal("webhook_sign=false, but the delivery carries x-signature")
				}
				d.Err = nil
			}
			checkDelivery(t, d, j, raw, 1)
			if c.sign && c.key.SecretKey == second.SecretKey {
				if testkit.VerifySignature(a.key.SecretKey, d.Header, d.Body, time.Now()) == nil {
					t.Fatal("the delivery verifies with the secret of another key of the account")
				}
			}
			if ts, _ := strconv.ParseInt(d.Header.Get("x-timestamp"), 10, 64); time.Since(time.Unix(ts, 0)).Abs() > 10*time.Second {
				t.Fatalf("x-timestamp %d is not now", ts)
			}
		})
	}

	// The receiver's own checks must be able to refuse: a replayed or altered delivery.
	t.Run("receiver refuses", func(t *testing.T) {
		rc := newReceiver(t, a.key.SecretKey, 0)
		id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>r</p>", "viewport_width": 300, "viewport_height": 200, "webhook_url": rc.URL()})
		waitDelivered(t, a.key.AccessKey, id)
		d := rc.Deliveries()[0]
		ts, _ := strconv.ParseInt(d.Header.Get("x-timestamp"), 10, 64)
		sent := time.Unix(ts, 0)
		resigned := func(at time.Time) http.Header {
			h := d.Header.Clone()
			h.Set("x-timestamp", strconv.FormatInt(at.Unix(), 10))
			mac := hmac.New(sha256.New, []byte(a.key.SecretKey))
			fmt.Fprintf(mac, "%d.%s", at.Unix(), d.Body)
			h.Set("x-signature", hex.EncodeToString(mac.Sum(nil)))
			return h
		}
		tampered := strings.Replace(string(d.Body), `"succeeded"`, `"failed"`, 1)
		checks := []struct {
			name string
			h    http.Header
			body []byte
			now  time.Time
			ok   bool
		}{
			{"as sent", d.Header, d.Body, time.Now(), true},
			{"4 minutes later", d.Header, d.Body, sent.Add(4 * time.Minute), true},
			{"replayed 6 minutes later", d.Header, d.Body, sent.Add(6 * time.Minute), false},
			{"timestamp 6 minutes ahead", d.Header, d.Body, sent.Add(-6 * time.Minute), false},
			{"old timestamp, signed anew", resigned(time.Now().Add(-10 * time.Minute)), d.Body, time.Now(), false},
			{"fresh timestamp, signed anew", resigned(time.Now()), d.Body, time.Now(), true},
			{"altered body", d.Header, []byte(tampered), time.Now(), false},
			{"timestamp changed, signature kept", func() http.Header {
				h := d.Header.Clone()
				h.Set("x-timestamp", strconv.FormatInt(ts+1, 10))
				return h
			}(), d.Body, time.Now(), false},
		}
		for _, c := range checks {
			if err := testkit.VerifySignature(a.key.SecretKey, c.h, c.body, c.now); (err == nil) != c.ok {
				t.Errorf("%s: verify = %v, want ok %v", c.name, err, c.ok)
			}
		}
	})
}

func TestWebhookRetries(t *testing.T) {
	a := newAccount(t, "jobs", true)
	const delays = 3 // the harness retries after 100, 200 and 300 ms
	cases := []struct {
		name     string
		fail     int // answers 500 to this many attempts first; -1: always
		status   string
		attempts int
	}{
		{"fails once", 1, "delivered", 2},
		{"fails three times", 3, "delivered", 4},
		{"always fails", -1, "failed", 1 + delays},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := newReceiver(t, a.key.SecretKey, c.fail)
			id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>retry</p>", "viewport_width": 300, "viewport_height": 200, "webhook_url": rc.URL()})
			j := waitDelivered(t, a.key.AccessKey, id)
			if j.Webhook.Status != c.status || j.Webhook.Attempts != c.attempts {
				t.Fatalf("webhook %s after %d attempts, want %s after %d", j.Webhook.Status, j.Webhook.Attempts, c.status, c.attempts)
			}
			raw := get(t, "/api/v1/jobs/"+id, url.Values{"access_key": {a.key.AccessKey}}).body
			if c.status == "failed" {
				time.Sleep(700 * time.Millisecond) // no attempt after the last
			}
			ds := rc.Deliveries()
			if len(ds) != c.attempts {
				t.Fatalf("receiver got %d deliveries, want %d", len(ds), c.attempts)
			}
			for i, d := range ds {
				checkDelivery(t, d, j, raw, i+1) // each attempt numbered and signed anew
			}
		})
	}
}

func TestWebhookURLNotAllowed(t *testing.T) {
	a := newAccount(t, "jobs", true)
	c := testkit.NewCanary(t, "127.0.0.3:0")
	hook := "http://" + c.Addr().String() + "/hook"
	before := usageOf(t, a)
	cases := []struct {
		name string
		path string
		body map[string]any
	}{
		{"async", "/api/v1/screenshot", map[string]any{"url": page("/"), "async": true, "webhook_url": hook}},
		{"async with html", "/api/v1/screenshot", map[string]any{"html": "<p>x</p>", "async": true, "webhook_url": hook}},
		{"bulk item", "/api/v1/bulk", map[string]any{"requests": []any{map[string]any{"url": page("/")}, map[string]any{"url": page("/"), "webhook_url": hook}}}},
		{"bulk defaults", "/api/v1/bulk", map[string]any{"requests": []any{map[string]any{"url": page("/")}}, "defaults": map[string]any{"webhook_url": hook}}},
	}
	for _, cc := range cases {
		t.Run(cc.name, func(t *testing.T) {
			wantError(t, postJSON(t, cc.path, a.key.AccessKey, mustJSON(t, cc.body)), 403, shotd.CodeHostNotAllowed)
		})
	}
	time.Sleep(300 * time.Millisecond)
	if n := c.Count(); n != 0 {
		t.Fatalf("the canary on %s got %d connections", c.Addr(), n)
	}
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused requests changed the usage: %+v -> %+v", before, after)
	}
}

// TestJobTargetsNeedNoDNS: async and bulk acceptance checks only what needs no DNS. A host name
// is judged when it is dialed, and its error lands in the job's error_code, never in the 202. A
// sync render keeps the full check of its url and has no use for webhook_url.
func TestJobTargetsNeedNoDNS(t *testing.T) {
	a := newAccount(t, "jobs", true)
	c := testkit.NewCanary(t, "127.0.0.3:0")
	_, port, _ := net.SplitHostPort(c.Addr().String())
	private := "http://private.shotd.test:" + port + "/" // resolves to the canary
	unresolvable := "http://" + nowhere + "/"
	small := func(kv ...any) map[string]any {
		m := map[string]any{"viewport_width": 200, "viewport_height": 150}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	type want struct {
		status  string
		code    shotd.Code // the job's error_code
		webhook string     // the delivery's end; "" when the job has no webhook
	}
	check := func(t *testing.T, j jobRecord, w want) {
		t.Helper()
		if j.Status != w.status || j.ErrorCode != string(w.code) {
			t.Fatalf("job %s (%s), want %s (%s)", j.Status, j.ErrorCode, w.status, w.code)
		}
		if w.webhook != "" && (j.Webhook == nil || j.Webhook.Status != w.webhook) {
			t.Fatalf("webhook %+v, want %s", j.Webhook, w.webhook)
		}
	}

	t.Run("async", func(t *testing.T) {
		cases := []struct {
			name string
			opts map[string]any
			want want
		}{
			{"url does not resolve", small("url", unresolvable), want{"failed", shotd.CodeNavigationFailed, ""}},
			{"url names a private address", small("url", private), want{"failed", shotd.CodeHostNotAllowed, ""}},
			{"url names an allowed address", small("url", strings.Replace(page("/"), "127.0.0.1", "pages.shotd.test", 1)), want{"succeeded", "", ""}},
			{"webhook_url does not resolve", small("html", "<p>x</p>", "webhook_url", unresolvable+"hook"), want{"succeeded", "", "failed"}},
			{"webhook_url names a private address", small("html", "<p>x</p>", "webhook_url", private+"hook"), want{"succeeded", "", "failed"}},
		}
		for _, cc := range cases {
			t.Run(cc.name, func(t *testing.T) {
				id := submit(t, a.key.AccessKey, cc.opts)
				if cc.want.webhook != "" {
					check(t, waitDelivered(t, a.key.AccessKey, id), cc.want)
				} else {
					check(t, waitFinal(t, a.key.AccessKey, id), cc.want)
				}
			})
		}
		t.Run("a name that does not resolve is looked up once", func(t *testing.T) {
			// The render's guard fails the document itself: the egress proxy never looks the
			// name up a second time.
			name := fmt.Sprintf("once-%d.%s", time.Now().UnixNano(), nowhere) // its own count in every run (-count)
			id := submit(t, a.key.AccessKey, small("url", "http://"+name+"/"))
			check(t, waitFinal(t, a.key.AccessKey, id), want{"failed", shotd.CodeNavigationFailed, ""})
			if n := lookupsOf(name); n != 1 {
				t.Errorf("%s was looked up %d times, want once", name, n)
			}
		})
	})
	t.Run("bulk", func(t *testing.T) {
		body := map[string]any{"defaults": small(), "requests": []any{
			map[string]any{"url": unresolvable},
			map[string]any{"url": private},
			map[string]any{"html": "<p>x</p>", "webhook_url": unresolvable + "hook"},
		}}
		wants := []want{{"failed", shotd.CodeNavigationFailed, ""}, {"failed", shotd.CodeHostNotAllowed, ""}, {"succeeded", "", "failed"}}
		batchID, ids := bulk(t, a.key.AccessKey, body)
		waitBatch(t, a.key.AccessKey, batchID, ids)
		for i, id := range ids {
			if wants[i].webhook != "" {
				check(t, waitDelivered(t, a.key.AccessKey, id), wants[i])
			} else {
				check(t, getJob(t, a.key.AccessKey, id), wants[i])
			}
		}
	})
	t.Run("sync", func(t *testing.T) {
		cases := []struct {
			name   string
			opts   map[string]any
			status int
			code   shotd.Code
		}{
			{"url does not resolve", small("url", unresolvable), 502, shotd.CodeNavigationFailed},
			{"url names a private address", small("url", private), 403, shotd.CodeHostNotAllowed},
			{"webhook_url that does not resolve is not used", small("html", "<p>x</p>", "webhook_url", unresolvable+"hook"), 200, ""},
			{"webhook_url at a private address is not used", small("html", "<p>x</p>", "webhook_url", "http://"+c.Addr().String()+"/hook"), 200, ""},
		}
		for _, cc := range cases {
			t.Run(cc.name, func(t *testing.T) {
				r := postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, cc.opts))
				if cc.status == 200 {
					if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
						t.Fatalf("got %d %s, want the png", r.status, codeOf(r))
					}
					return
				}
				wantError(t, r, cc.status, cc.code)
			})
		}
	})
	time.Sleep(300 * time.Millisecond)
	if n := c.Count(); n != 0 {
		t.Fatalf("the canary on %s got %d connections", c.Addr(), n)
	}
}

func TestJobsWaitForSlot(t *testing.T) {
	a := newAccount(t, "jobs-serial", true) // concurrency 1
	pages := testkit.StartPages(t, 300*time.Millisecond)
	const n = 4
	ids := make([]string, n)
	for i := range ids {
		// Each acceptance is a 202, never concurrency_limit, although only one may render.
		ids[i] = submit(t, a.key.AccessKey, map[string]any{"url": pages.URL("/slow?n=" + strconv.Itoa(i)), "viewport_width": 300, "viewport_height": 200})
	}
	for _, id := range ids {
		j := waitFinal(t, a.key.AccessKey, id)
		if j.Status != "succeeded" {
			t.Fatalf("job %s %s (%s: %s)", id, j.Status, j.ErrorCode, j.ErrorMessage)
		}
	}
	served, maxSeen := pages.SlowCame(), pages.SlowPeak()
	if served != n || maxSeen != 1 {
		t.Fatalf("the page was served %d times, at most %d at once; want %d, one at a time", served, maxSeen, n)
	}
	waitUsage(t, a, "every job billed, none held", func(u usageRecord) bool {
		return u.Renders.Succeeded == n && u.Quota.Used == n && u.Jobs.Waiting == 0 && u.Jobs.Running == 0
	})
}

func TestBulkValidation(t *testing.T) {
	a := newAccount(t, "jobs", true)
	basic := newAccount(t, "basic", true)
	ok := map[string]any{"url": page("/")}
	items := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = ok
		}
		return out
	}
	cases := []struct {
		name    string
		key     string
		body    string
		ctype   string
		status  int
		code    shotd.Code
		indexes map[int]string // invalid_options: index -> field
	}{
		{"array body", a.key.AccessKey, `[{"url":"http://x.test"}]`, "", 400, shotd.CodeInvalidRequest, nil},
		{"string body", a.key.AccessKey, `"requests"`, "", 400, shotd.CodeInvalidRequest, nil},
		{"not json", a.key.AccessKey, `{"requests":`, "", 400, shotd.CodeInvalidRequest, nil},
		{"no requests", a.key.AccessKey, `{"defaults":{"format":"png"}}`, "", 400, shotd.CodeInvalidRequest, nil},
		{"requests null", a.key.AccessKey, `{"requests":null}`, "", 400, shotd.CodeInvalidRequest, nil},
		{"requests not a list", a.key.AccessKey, `{"requests":{"url":"http://x.test"}}`, "", 400, shotd.CodeInvalidRequest, nil},
		{"empty list", a.key.AccessKey, `{"requests":[]}`, "", 400, shotd.CodeInvalidRequest, nil},
		{"too many items", a.key.AccessKey, string(mustJSON(t, map[string]any{"requests": items(6)})), "", 400, shotd.CodeInvalidRequest, nil},
		{"not json content type", a.key.AccessKey, string(mustJSON(t, map[string]any{"requests": items(1)})), "text/plain", 400, shotd.CodeInvalidRequest, nil},
		{"items 1 and 3 invalid", a.key.AccessKey, string(mustJSON(t, map[string]any{"requests": []any{
			ok, map[string]any{"url": "example.com"}, ok, map[string]any{"url": page("/"), "viewport_width": 5}, ok}})),
			"", 400, shotd.CodeInvalidOptions, map[int]string{1: "url", 3: "viewport_width"}},
		{"unknown option in an item", a.key.AccessKey, string(mustJSON(t, map[string]any{"requests": []any{
			ok, map[string]any{"url": page("/"), "fromat": "png"}}})), "", 400, shotd.CodeInvalidOptions, map[int]string{1: "fromat"}},
		{"item not an object", a.key.AccessKey, string(mustJSON(t, map[string]any{"requests": []any{"http://x.test", ok}})),
			"", 400, shotd.CodeInvalidOptions, map[int]string{0: "requests"}},
		{"invalid defaults make every item invalid", a.key.AccessKey, string(mustJSON(t, map[string]any{
			"requests": items(2), "defaults": map[string]any{"viewport_width": 5}})), "", 400, shotd.CodeInvalidOptions,
			map[int]string{0: "viewport_width", 1: "viewport_width"}},
		{"bulk not in plan", basic.key.AccessKey, string(mustJSON(t, map[string]any{"requests": items(1)})), "", 403, shotd.CodeFeatureNotAvailable, nil},
	}
	before := usageOf(t, a)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := c.ctype
			if ct == "" {
				ct = "application/json"
			}
			r := do(t, http.MethodPost, env.base+"/api/v1/bulk?access_key="+c.key, []byte(c.body), map[string]string{"Content-Type": ct})
			e := wantError(t, r, c.status, c.code)
			if c.indexes == nil {
				return
			}
			got := map[int]string{}
			for _, fe := range e.Errors {
				if fe.Index == nil {
					t.Fatalf("error item without index: %+v", fe)
				}
				if _, dup := got[*fe.Index]; dup {
					continue
				}
				got[*fe.Index] = fe.Field
			}
			if !maps.Equal(got, c.indexes) {
				t.Fatalf("invalid items %v, want %v", got, c.indexes)
			}
		})
	}
	// Nothing was queued, reserved or counted by any refused bulk.
	if after := usageOf(t, a); after != before {
		t.Fatalf("refused bulks changed the usage: %+v -> %+v", before, after)
	}
}

// bulk posts a bulk body and checks its 202 (batch_id, status, total, jobs); it returns the batch
// id and the job ids in item order.
func bulk(t *testing.T, accessKey string, body map[string]any) (string, []string) {
	t.Helper()
	r := postJSON(t, "/api/v1/bulk", accessKey, mustJSON(t, body))
	if r.status != http.StatusAccepted {
		t.Fatalf("bulk: status %d: %s", r.status, r.body)
	}
	var acc struct {
		BatchID string `json:"batch_id"`
		Status  string `json:"status"`
		Total   int    `json:"total"`
		Jobs    []struct {
			Index *int   `json:"index"`
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(r.body, &acc); err != nil {
		t.Fatalf("bulk 202 is not JSON (%d bytes)", len(r.body))
	}
	n := len(body["requests"].([]any))
	if !strings.HasPrefix(acc.BatchID, "bat_") || acc.Status != "queued" || acc.Total != n || len(acc.Jobs) != n {
		t.Fatalf("bulk 202: %s", r.body)
	}
	ids := make([]string, n)
	seen := map[string]bool{}
	for i, j := range acc.Jobs {
		if j.Index == nil || *j.Index != i || !strings.HasPrefix(j.JobID, "job_") || seen[j.JobID] {
			t.Fatalf("bulk 202 jobs: %s", r.body)
		}
		seen[j.JobID] = true
		ids[i] = j.JobID
	}
	return acc.BatchID, ids
}

func getBatch(t *testing.T, accessKey, id string) batchRecord {
	t.Helper()
	r := get(t, "/api/v1/batches/"+id, url.Values{"access_key": {accessKey}})
	if r.status != 200 {
		t.Fatalf("GET batch: %d %s", r.status, r.body)
	}
	var b batchRecord
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitBatch polls a batch until it is done, checking on every read that the counts add up.
func waitBatch(t *testing.T, accessKey, id string, jobIDs []string) batchRecord {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b := getBatch(t, accessKey, id)
		c := b.Counts
		if b.BatchID != id || b.Total != len(jobIDs) || c.Queued+c.Rendering+c.Succeeded+c.Failed != b.Total || len(b.Jobs) != b.Total {
			t.Fatalf("batch record %+v", b)
		}
		for i, j := range b.Jobs {
			if j.JobID != jobIDs[i] || j.BatchID != id {
				t.Fatalf("batch job %d is %s of batch %q, want %s of %s", i, j.JobID, j.BatchID, jobIDs[i], id)
			}
		}
		ended := c.Succeeded + c.Failed
		wantStatus := map[bool]string{true: "running", false: "queued"}[ended+c.Rendering > 0]
		if ended == b.Total {
			wantStatus = "done"
		}
		if b.Status != wantStatus {
			t.Fatalf("batch status %s with counts %+v, want %s", b.Status, c, wantStatus)
		}
		if b.Status == "done" {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s %+v", b.Status, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBulkCompletion(t *testing.T) {
	a := newAccount(t, "jobs", true)
	other := newAccount(t, "jobs", true)
	closed := closedPort(t)
	rc := newReceiver(t, a.key.SecretKey, 0)
	cases := []struct {
		name      string
		body      map[string]any
		status    []string // per item
		widths    []int
		webhooks  bool
		heightAll int
	}{
		{"defaults merged under items", map[string]any{
			"defaults": map[string]any{"viewport_width": 300, "viewport_height": 200},
			"requests": []any{map[string]any{"url": page("/")}, map[string]any{"url": page("/"), "viewport_width": 500}},
		}, []string{"succeeded", "succeeded"}, []int{300, 500}, false, 200},
		// Were defaults merged option by option, the second item would have two sources and the
		// third a selector with clip_width: both refused.
		{"an item's own source and area replace those of defaults", map[string]any{
			"defaults": map[string]any{"url": page("/"), "clip_x": 0, "clip_y": 0, "clip_width": 300, "clip_height": 200,
				"viewport_width": 400, "viewport_height": 300},
			"requests": []any{map[string]any{}, map[string]any{"html": "<p>own</p>"},
				map[string]any{"html": `<html style="height:200px;width:300px"><body style="margin:0"><p>own</p></body></html>`, "selector": "html"}},
		}, []string{"succeeded", "succeeded", "succeeded"}, []int{300, 300, 300}, false, 200},
		{"one item fails", map[string]any{
			"defaults": map[string]any{"viewport_width": 320, "viewport_height": 240, "webhook_url": rc.URL()},
			"requests": []any{map[string]any{"html": "<p>ok</p>"}, map[string]any{"url": "http://127.0.0.1:" + closed + "/"},
				map[string]any{"url": page("/"), "async": false}},
		}, []string{"succeeded", "failed", "succeeded"}, []int{320, 0, 320}, true, 240},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			batchID, ids := bulk(t, a.key.AccessKey, c.body)
			// Another account sees neither the batch nor its jobs.
			wantError(t, get(t, "/api/v1/batches/"+batchID, other.q()), 404, shotd.CodeJobNotFound)
			wantError(t, get(t, "/api/v1/jobs/"+ids[0], other.q()), 404, shotd.CodeJobNotFound)

			b := waitBatch(t, a.key.AccessKey, batchID, ids)
			succeeded := 0
			for i, j := range b.Jobs {
				if j.Status != c.status[i] {
					t.Fatalf("item %d %s (%s), want %s", i, j.Status, j.ErrorCode, c.status[i])
				}
				if j.Status == "succeeded" {
					succeeded++
					checkResult(t, a.key.AccessKey, j.Result, c.widths[i], c.heightAll)
				} else if j.ErrorCode != string(shotd.CodeNavigationFailed) {
					t.Fatalf("item %d error_code %q", i, j.ErrorCode)
				}
				if own := getJob(t, a.key.AccessKey, j.JobID); own.BatchID != batchID {
					t.Fatalf("job %s shows batch %q", j.JobID, own.BatchID)
				}
			}
			if b.Counts.Succeeded != succeeded || b.Counts.Failed != len(ids)-succeeded {
				t.Fatalf("counts %+v", b.Counts)
			}
			if !c.webhooks {
				return
			}
			for _, id := range ids {
				j := waitDelivered(t, a.key.AccessKey, id)
				if j.Webhook.Status != "delivered" {
					t.Fatalf("job %s webhook %+v", id, j.Webhook)
				}
			}
			byJob := map[string]int{}
			for _, d := range rc.Deliveries() {
				if d.Err != nil {
					t.Fatalf("delivery for %s: %v", d.Header.Get("x-job-id"), d.Err)
				}
				byJob[d.Header.Get("x-job-id")]++
			}
			for _, id := range ids {
				if byJob[id] != 1 {
					t.Fatalf("deliveries per job %v", byJob)
				}
			}
		})
	}
}

func TestBulkQueueLimit(t *testing.T) {
	a := newAccount(t, "jobs-queue3", true) // queue_limit 3, concurrency 1
	pages := testkit.StartPages(t, 700*time.Millisecond)
	item := func(i int) map[string]any {
		return map[string]any{"url": pages.URL("/slow?i=" + strconv.Itoa(i)), "viewport_width": 300, "viewport_height": 200}
	}
	before := usageOf(t, a)
	// Four items do not fit a queue of three: nothing is queued.
	r := postJSON(t, "/api/v1/bulk", a.key.AccessKey, mustJSON(t, map[string]any{"requests": []any{item(0), item(1), item(2), item(3)}}))
	wantError(t, r, 429, shotd.CodeQueueLimit)
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if after := usageOf(t, a); after != before {
		t.Fatalf("a refused bulk changed the usage: %+v -> %+v", before, after)
	}
	// Three fit; then the queue is full for a single async job too.
	batchID, ids := bulk(t, a.key.AccessKey, map[string]any{"requests": []any{item(0), item(1), item(2)}})
	r = postJSON(t, "/api/v1/screenshot", a.key.AccessKey, mustJSON(t, map[string]any{"url": page("/"), "async": true}))
	wantError(t, r, 429, shotd.CodeQueueLimit)
	if u := usageOf(t, a); u.Jobs.Waiting+u.Jobs.Running != 3 {
		t.Fatalf("usage with a full queue: %+v", u)
	}
	b := waitBatch(t, a.key.AccessKey, batchID, ids)
	if b.Counts.Succeeded != 3 {
		t.Fatalf("counts %+v", b.Counts)
	}
	if maxSeen := pages.SlowPeak(); maxSeen != 1 {
		t.Fatalf("%d jobs rendered at once with concurrency 1", maxSeen)
	}
	// The queue is free again once the account actor has settled the three jobs.
	waitUsage(t, a, "an empty queue", func(u usageRecord) bool { return u.Jobs.Waiting+u.Jobs.Running == 0 })
	waitFinal(t, a.key.AccessKey, submit(t, a.key.AccessKey, map[string]any{"html": "<p>again</p>"}))
}

var benchAccounts atomic.Int64

// BenchmarkAsyncAccept measures what a client waits for an async job: an HTTP POST on loopback
// to the 202, which includes authentication, option parsing, the egress check of url, admission
// by the account actor and the job's durable bbolt write (with its fsync). The sub-benchmarks:
//   - idle: the plan has no concurrency slot, so the jobs stay queued and no render competes;
//   - rendering: the jobs run at once against a closed port (each fails fast in Chrome), so
//     acceptance competes with dispatch, Chrome and the failure writes.
func BenchmarkAsyncAccept(b *testing.B) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}()
	for _, c := range []struct {
		name, plan, url string
	}{
		{"idle", "bench-accept", page("/")},
		{"rendering", "bench-render", "http://127.0.0.1:" + closed + "/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			acc, err := env.st.CreateAccount(fmt.Sprintf("bench-%s-%d@example.test", c.name, benchAccounts.Add(1)), c.plan, true)
			if err != nil {
				b.Fatal(err)
			}
			key, err := env.st.CreateKey(acc.ID, "bench", false)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := json.Marshal(map[string]any{"url": c.url, "async": true, "viewport_width": 300, "viewport_height": 200})
			target := env.base + "/api/v1/screenshot?access_key=" + key.AccessKey
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			post := func() time.Duration {
				req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != http.StatusAccepted {
					b.Fatalf("status %d", resp.StatusCode)
				}
				return took
			}
			post() // warm: the key cache, the account actor, the connection
			durations := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				durations = append(durations, post())
			}
			b.StopTimer()
			sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
			q := func(p float64) float64 {
				return float64(durations[int(p*float64(len(durations)-1))]) / float64(time.Millisecond)
			}
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
		})
	}
}
