package testkit

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCanaryCounts: the canary does count a connection, on every listener, so that its zero
// means something.
func TestCanaryCounts(t *testing.T) {
	c := NewCanary(t, "127.0.0.3:0")
	second, err := c.Listen("127.0.0.3:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{c.Addr().String(), second.String()} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	for end := time.Now().Add(time.Second); c.Count() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the canary counted %d connections, want 2", c.Count())
		}
	}
}

// A delivery of {} at 1700000000 signed with the key "k": the signature is a known answer,
// computed with `printf '1700000000.{}' | openssl dgst -sha256 -hmac k`.
const (
	knownTS  = 1700000000
	knownSig = "c6ef4734033cee2367414a0939385eca0397754aa7a59716da7463a9298b5146"
)

func knownHeader(ts, sig string) http.Header {
	h := http.Header{}
	h.Set("x-timestamp", ts)
	h.Set("x-signature", sig)
	return h
}

func TestVerifySignature(t *testing.T) {
	at := time.Unix(knownTS, 0)
	ts := strconv.Itoa(knownTS)
	cases := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    time.Time
		ok     bool
	}{
		{"as signed", "k", knownHeader(ts, knownSig), "{}", at, true},
		{"4 minutes later", "k", knownHeader(ts, knownSig), "{}", at.Add(4 * time.Minute), true},
		{"6 minutes later", "k", knownHeader(ts, knownSig), "{}", at.Add(6 * time.Minute), false},
		{"6 minutes early", "k", knownHeader(ts, knownSig), "{}", at.Add(-6 * time.Minute), false},
		{"other key", "j", knownHeader(ts, knownSig), "{}", at, false},
		{"other body", "k", knownHeader(ts, knownSig), "{ }", at, false},
		{"other timestamp", "k", knownHeader(strconv.Itoa(knownTS+1), knownSig), "{}", at, false},
		{"upper-case hex", "k", knownHeader(ts, strings.ToUpper(knownSig)), "{}", at, true},
		{"no signature", "k", knownHeader(ts, ""), "{}", at, false},
		{"no timestamp", "k", knownHeader("", knownSig), "{}", at, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := VerifySignature(c.secret, c.h, []byte(c.body), c.now); (err == nil) != c.ok {
				t.Fatalf("VerifySignature = %v, want ok %v", err, c.ok)
			}
		})
	}
}

// TestReceiver: the receiver answers 500 while told to fail, 401 to what is not valid, 204 to the
// rest, and records every delivery.
func TestReceiver(t *testing.T) {
	rc := StartReceiver(t)
	valid := func(event, status string) (http.Header, string) {
		h := http.Header{}
		h.Set("x-job-id", "j1")
		h.Set("x-webhook-event", event)
		return h, `{"job_id":"j1","status":"` + status + `","event":"` + event + `"}`
	}
	h, body := valid("job.succeeded", "succeeded")
	rc.Fail(2)
	for i, want := range []int{500, 500, 204} {
		if got := post(t, rc.URL(), h, body); got != want {
			t.Fatalf("delivery %d answered %d, want %d", i+1, got, want)
		}
	}
	hf, bodyf := valid("job.succeeded", "failed") // the event does not match the status
	if got := post(t, rc.URL(), hf, bodyf); got != 401 {
		t.Fatalf("inconsistent body answered %d, want 401", got)
	}
	if got := post(t, rc.URL()+"x", h, body); got != 401 {
		t.Fatalf("a POST to another path answered %d, want 401", got)
	}
	rc.Verify("k")
	if got := post(t, rc.URL(), h, body); got != 401 {
		t.Fatalf("an unsigned delivery to a verifying receiver answered %d, want 401", got)
	}
	rc.Fail(-1)
	for range 3 {
		if got := post(t, rc.URL(), h, body); got != 500 {
			t.Fatalf("answered %d while failing, want 500", got)
		}
	}
	if n := len(rc.Deliveries()); n != 9 {
		t.Fatalf("%d deliveries recorded, want 9", n)
	}
	if ack := rc.Acknowledged(); len(ack) != 1 || ack["j1"] != 1 {
		t.Fatalf("acknowledged %v, want j1 once", ack)
	}
	if bad := rc.Invalid(); len(bad) != 6 {
		t.Fatalf("invalid %q, want the 2 malformed and the 4 unsigned deliveries", bad)
	}
}

// TestPagesSlow: /slow holds its answer until the hold is over, and the loads are counted.
func TestPagesSlow(t *testing.T) {
	p := StartPages(t, 300*time.Millisecond)
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		resp, err := http.Get(p.URL("/slow?n=1"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- time.Since(start)
	}()
	p.WaitSlow(t, 1, 5*time.Second)
	if d := <-done; d < 300*time.Millisecond {
		t.Fatalf("/slow answered after %v, want the hold of 300ms", d)
	}
	if p.Slow() != 0 {
		t.Fatalf("%d /slow requests under way after the answer", p.Slow())
	}
	for range 2 {
		resp, err := http.Get(p.URL("/fast?n=2"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if a, b := p.Loads(p.URL("/slow?n=1")), p.Loads(p.URL("/fast?n=2")); a != 1 || b != 2 {
		t.Fatalf("loads %d and %d, want 1 and 2", a, b)
	}
}

// TestPagesRelease: Release answers the held /slow requests at once, and the peak counts those
// under way together.
func TestPagesRelease(t *testing.T) {
	p := StartPages(t, time.Minute)
	done := make(chan error, 2)
	for i := range 2 {
		go func() {
			resp, err := http.Get(p.URL("/slow?n=" + strconv.Itoa(i)))
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	p.WaitSlow(t, 2, 5*time.Second)
	select {
	case <-done:
		t.Fatal("a /slow request answered before the release")
	case <-time.After(100 * time.Millisecond):
	}
	p.Release()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a held request did not answer after the release")
		}
	}
	if n, peak := p.Slow(), p.SlowPeak(); n != 0 || peak != 2 {
		t.Fatalf("%d under way after the release, peak %d; want 0 and 2", n, peak)
	}
}

func post(t *testing.T, url string, h http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
