package testkit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Delivery is one POST a Receiver got.
type Delivery struct {
	Header http.Header
	Body   []byte
	JobID  string // job_id of the body
	Event  string // event of the body
	Status int    // what the receiver answered
	// Err says why the delivery is not valid: not a POST to /hook, a body that does not match
	// its headers, or (when the receiver has a secret) a signature that does not verify.
	Err error
}

// Acknowledged reports whether the receiver took the delivery: a valid one, answered 2xx.
func (d Delivery) Acknowledged() bool { return d.Err == nil && d.Status/100 == 2 }

// Receiver is a webhook receiver on 127.0.0.1. It answers 500 while told to fail, 401 to a
// delivery that is not valid, and 204 to the others.
type Receiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	secret string // "": signatures are not checked
	fail   int    // answer 500 to this many more deliveries; < 0: to all
	got    []Delivery
}

// NewReceiver starts a receiver that checks no signature; Close stops it.
func NewReceiver() *Receiver {
	rc := &Receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	return rc
}

// StartReceiver is NewReceiver, closed when the test ends.
func StartReceiver(t testing.TB) *Receiver {
	rc := NewReceiver()
	t.Cleanup(rc.Close)
	return rc
}

// URL is where deliveries go.
func (rc *Receiver) URL() string { return rc.srv.URL + "/hook" }

// Close stops the receiver.
func (rc *Receiver) Close() { rc.srv.Close() }

// Verify makes the receiver check every later delivery's signature with secret ("": no check).
func (rc *Receiver) Verify(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = secret
}

// Fail makes the receiver answer 500 to the next n deliveries (n < 0: to every one, until Fail
// is called again).
func (rc *Receiver) Fail(n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail = n
}

// Deliveries is every delivery so far, in the order they came.
func (rc *Receiver) Deliveries() []Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// Acknowledged counts the acknowledged deliveries of each job.
func (rc *Receiver) Acknowledged() map[string]int {
	n := map[string]int{}
	for _, d := range rc.Deliveries() {
		if d.Acknowledged() {
			n[d.JobID]++
		}
	}
	return n
}

// Invalid describes the deliveries that were not valid.
func (rc *Receiver) Invalid() []string {
	var bad []string
	for _, d := range rc.Deliveries() {
		if d.Err != nil {
			bad = append(bad, fmt.Sprintf("%s attempt %s: %v", d.Header.Get("x-job-id"), d.Header.Get("x-webhook-attempt"), d.Err))
		}
	}
	return bad
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := Delivery{Header: r.Header.Clone(), Body: body}
	var rec struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
		Event  string `json:"event"`
	}
	jerr := json.Unmarshal(body, &rec)
	d.JobID, d.Event = rec.JobID, rec.Event
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/hook":
		d.Err = fmt.Errorf("%s %s", r.Method, r.URL.Path)
	case jerr != nil || rec.Event != "job."+rec.Status || r.Header.Get("x-webhook-event") != rec.Event || r.Header.Get("x-job-id") != rec.JobID:
		d.Err = fmt.Errorf("body %q/%q/%q does not match its headers", rec.JobID, rec.Status, rec.Event)
	case rc.secret != "":
		d.Err = VerifySignature(rc.secret, r.Header, body, time.Now())
	}
	switch {
	case rc.fail != 0:
		d.Status = http.StatusInternalServerError
		if rc.fail > 0 {
			rc.fail--
		}
	case d.Err != nil:
		d.Status = http.StatusUnauthorized
	default:
		d.Status = http.StatusNoContent
	}
	rc.got = append(rc.got, d)
	w.WriteHeader(d.Status)
}

// VerifySignature is a receiver's check of a webhook delivery: x-signature is the hex
// HMAC-SHA256 of "<x-timestamp>.<raw body>" keyed with the secret key, and x-timestamp (Unix
// seconds) is within 5 minutes of the receiver's clock, now.
func VerifySignature(secret string, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("x-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("x-timestamp %q is not Unix seconds", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("x-timestamp is %v away from the receiver's clock", d.Round(time.Second))
	}
	sig, err := hex.DecodeString(h.Get("x-signature"))
	if err != nil || len(sig) != sha256.Size {
		return errors.New("x-signature is not a hex HMAC-SHA256")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sig) {
		return errors.New("x-signature does not match")
	}
	return nil
}
