package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/sign"
	"github.com/shotd/shotd/view"
)

// Webhook events: the body's event field and the x-webhook-event header.
const (
	EventSucceeded = "job.succeeded"
	EventFailed    = "job.failed"
)

// Body is what a receiver gets: the job record exactly as GET /api/v1/jobs/{id} shows it, plus
// the event.
type Body struct {
	view.JobView
	Event string `json:"event"`
}

// EventOf is the event of an ended job.
func EventOf(j shotd.Job) string {
	if j.Status == shotd.JobFailed {
		return EventFailed
	}
	return EventSucceeded
}

// NewBody is the body of j's delivery, with links to files under publicURL.
func NewBody(j shotd.Job, publicURL string) ([]byte, error) {
	return json.Marshal(Body{JobView: view.NewJobView(j, publicURL), Event: EventOf(j)})
}

// Sign returns x-signature for a body sent at timestamp (Unix seconds): shotd's webhook
// signature scheme, HMAC-SHA256 of "<timestamp>.<raw body>" with the key's secret.
func Sign(secret string, timestamp int64, body []byte) string {
	return sign.SignWebhook(secret, timestamp, body)
}

// Keys finds the key a job was created with, whose secret signs its deliveries: store.Store
// implements it.
type Keys interface {
	Key(accessKey string) (shotd.Key, error)
}

// Dialer dials an outbound connection: the egress guard's DialContext.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// NewClient is the HTTP client of deliveries: it dials through dial (the egress guard), takes
// no proxy from the environment, answers within timeout, and follows no redirect.
func NewClient(dial Dialer, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: NoRedirects, Transport: &http.Transport{
		DialContext: dial, Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
}

// NoRedirects makes a webhook client treat a redirect as the receiver's answer (a failed
// attempt): following it would re-post the signed body to another host.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Sender makes one delivery attempt: it builds the body and the headers, signs, and posts.
// The webhook actor (actors.Webhooks) records the attempts and schedules the retries.
type Sender struct {
	Client    *http.Client // NewClient: its transport dials through the egress guard
	Keys      Keys         // for signed deliveries
	PublicURL string       // base of the links to files in the body
}

// Send POSTs the record of job, which has ended, to its webhook URL, signed with the secret of
// the key that created the job when the job asked for it. The attempts its record counts, this
// one included, go in x-webhook-attempt. An answer other than 2xx is an error. A job made on
// ScreenshotOne's paths gets their body and their signature (s1.go).
func (s *Sender) Send(job shotd.Job) error {
	s1 := IsS1(job)
	var raw []byte
	var err error
	if s1 {
		raw, err = NewS1Body(job, s.PublicURL)
	} else {
		raw, err = NewBody(job, s.PublicURL)
	}
	if err != nil {
		return err
	}
	signer := ""
	if job.Webhook.Sign {
		signer = job.AccessKey
	}
	return s.post(job.Webhook.URL, raw, EventOf(job), "x-job-id", job.JobID, job.Webhook.Attempts, signer, s1)
}

// BatchBody is what a batch's webhook_url receives once every job of the batch ended: the batch
// record as GET /api/v1/batches/{id} shows it, plus the event (batch.done).
type BatchBody struct {
	view.BatchRecord
	Event string `json:"event"`
}

// SendBatch POSTs the record of batch b with its jobs, which have all ended, to the batch's
// webhook URL, signed with the secret of the key that made the batch (that of its jobs).
func (s *Sender) SendBatch(b shotd.Batch, jobs []shotd.Job) error {
	raw, err := json.Marshal(BatchBody{BatchRecord: view.NewBatchRecord(b, jobs, s.PublicURL), Event: shotd.BatchDoneEvent})
	if err != nil {
		return err
	}
	signer := ""
	if len(jobs) > 0 { // a batch's delivery is always signed
		signer = jobs[0].AccessKey
	}
	return s.post(b.Webhook.URL, raw, shotd.BatchDoneEvent, "x-batch-id", b.BatchID, b.Webhook.Attempts, signer, false)
}

// post makes one delivery of raw to url: the event, the id of what ended under idHeader, the
// attempt's number, and, when signer names an access key, the signature with its secret:
// shotd's x-signature, or ScreenshotOne's X-ScreenshotOne-Signature when s1. An answer other
// than 2xx is an error.
func (s *Sender) post(url string, raw []byte, event, idHeader, id string, attempt int, signer string, s1 bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.Client.Timeout+time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "shotd-webhook/1")
	req.Header.Set("x-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("x-webhook-event", event)
	req.Header.Set(idHeader, id)
	req.Header.Set("x-webhook-attempt", strconv.Itoa(attempt))
	if signer != "" {
		key, err := s.Keys.Key(signer)
		if err != nil {
			return fmt.Errorf("signing key: %w", err)
		}
		if s1 {
			req.Header.Set("X-ScreenshotOne-Signature", sign.SignWebhookS1(key.SecretKey, raw))
		} else {
			req.Header.Set("x-signature", Sign(key.SecretKey, ts, raw))
		}
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return nil
}
