package chaos

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of the answers
	_ "image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/shotd/shotd"
)

// Fixture serves the pages the clients render: /page (at once) and /slow (after a hold).
type Fixture struct {
	srv  *httptest.Server
	hold time.Duration
}

// NewFixture starts the page server on loopback.
func NewFixture(hold time.Duration) *Fixture {
	f := &Fixture{hold: hold}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(f.hold):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body style='background:#396;margin:0'><h1>%s</h1><p>%s</p></body></html>",
			r.URL.Query().Get("n"), bytes.Repeat([]byte("lorem ipsum "), 40))
	}))
	return f
}

// URL is the address of path on the fixture.
func (f *Fixture) URL(path string) string { return f.srv.URL + path }

// Close stops the server.
func (f *Fixture) Close() { f.srv.Close() }

// Receiver is a webhook receiver that checks every delivery's signature (HMAC-SHA256 of the
// secret key over "<x-timestamp>.<body>", lower-case hex in x-signature).
type Receiver struct {
	srv    *httptest.Server
	secret string

	mu    sync.Mutex
	valid map[string]int // job id -> valid deliveries
	bad   []string
}

// NewReceiver starts the receiver on loopback.
func NewReceiver(secret string) *Receiver {
	rc := &Receiver{secret: secret, valid: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	return rc
}

// URL is where deliveries go.
func (rc *Receiver) URL() string { return rc.srv.URL + "/hook" }

// Close stops the receiver.
func (rc *Receiver) Close() { rc.srv.Close() }

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	err := VerifyWebhook(rc.secret, r.Header, body, time.Now())
	var rec struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
		Event  string `json:"event"`
	}
	if err == nil {
		if jerr := json.Unmarshal(body, &rec); jerr != nil || rec.Event != "job."+rec.Status || r.Header.Get("x-webhook-event") != rec.Event {
			err = fmt.Errorf("body %q/%q does not match its header", rec.Status, rec.Event)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.valid[rec.JobID]++
	w.WriteHeader(http.StatusNoContent)
}

// Delivered is the number of valid deliveries of job id.
func (rc *Receiver) Delivered(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.valid[id]
}

// Invalid lists the deliveries that failed the check.
func (rc *Receiver) Invalid() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bad...)
}

// VerifyWebhook checks a delivery's X-Timestamp (within 5 minutes of now) and X-Signature,
// as the operator contract defines them (shotd.SignWebhook).
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("x-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("x-timestamp %q", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("x-timestamp %v away", d)
	}
	if !hmac.Equal([]byte(shotd.SignWebhook(secret, sec, body)), []byte(h.Get("x-signature"))) {
		return errors.New("x-signature does not match")
	}
	return nil
}

// Client talks to the public API with one access key.
type Client struct {
	Base, Key string
	HTTP      *http.Client
}

// Shot is what one render asks for: enough to check the answer.
type Shot struct {
	Format        string // png, jpeg, webp, pdf
	Width, Height int
	URL           string
	FullPage      bool
}

var contentTypes = map[string]string{"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "pdf": "application/pdf"}

// Outcome is one answer: its status ("200", "503 renderer_unavailable", "transport") and
// whether a 200 was right or a non-200 carried a documented code.
type Outcome struct {
	Label string
	OK    bool   // a 200
	Bad   string // why the answer breaks the contract; "" when it keeps it
}

// Render asks for one sync render and checks the answer.
func (c *Client) Render(ctx context.Context, s Shot) Outcome {
	q := url.Values{"url": {s.URL}, "format": {s.Format}, "viewport_width": {strconv.Itoa(s.Width)},
		"viewport_height": {strconv.Itoa(s.Height)}}
	if s.FullPage {
		q.Set("full_page", "true")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/api/v1/screenshot?"+q.Encode(), nil)
	req.Header.Set("X-Access-Key", c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Outcome{Label: "transport error"}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Outcome{Label: "transport error"}
	}
	if resp.StatusCode == 200 {
		return Outcome{Label: "200", OK: true, Bad: checkFile(s, resp.Header.Get("Content-Type"), body)}
	}
	return errorOutcome(resp.StatusCode, body)
}

func errorOutcome(status int, body []byte) Outcome {
	var e struct {
		Code string `json:"error_code"`
	}
	_ = json.Unmarshal(body, &e)
	o := Outcome{Label: fmt.Sprintf("%d %s", status, e.Code)}
	if !documented(shotd.Code(e.Code), status) {
		o.Bad = fmt.Sprintf("status %d with code %q is not in the catalogue", status, e.Code)
	}
	return o
}

func documented(code shotd.Code, status int) bool {
	for _, ci := range shotd.Catalogue {
		if ci.Code == code {
			return ci.Status == status
		}
	}
	return false
}

// checkFile says what is wrong with a rendered file, "" when it is the format and size asked.
func checkFile(s Shot, ctype string, b []byte) string {
	if want := contentTypes[s.Format]; ctype != want {
		return fmt.Sprintf("%s: Content-Type %q", s.Format, ctype)
	}
	switch s.Format {
	case "pdf":
		if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.Contains(b[max(0, len(b)-1024):], []byte("%%EOF")) {
			return "pdf: not a whole PDF"
		}
		return ""
	case "webp":
		if len(b) < 30 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
			return "webp: not a WebP file"
		}
		w, h, ok := webpSize(b)
		if ok && (w != s.Width || (!s.FullPage && h != s.Height)) {
			return fmt.Sprintf("webp: %dx%d, want %dx%d", w, h, s.Width, s.Height)
		}
		return ""
	}
	cfg, f, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil || f != s.Format {
		return fmt.Sprintf("%s: does not decode (%s, %v)", s.Format, f, err)
	}
	if cfg.Width != s.Width || (!s.FullPage && cfg.Height != s.Height) || (s.FullPage && cfg.Height < s.Height) {
		return fmt.Sprintf("%s: %dx%d, want %dx%d", s.Format, cfg.Width, cfg.Height, s.Width, s.Height)
	}
	return ""
}

// webpSize reads the canvas of a VP8X, VP8L or VP8 WebP header.
func webpSize(b []byte) (int, int, bool) {
	switch string(b[12:16]) {
	case "VP8X":
		return 1 + int(b[24]) | int(b[25])<<8 | int(b[26])<<16, 1 + int(b[27]) | int(b[28])<<8 | int(b[29])<<16, true
	case "VP8L":
		v := uint32(b[21]) | uint32(b[22])<<8 | uint32(b[23])<<16 | uint32(b[24])<<24
		return int(v&0x3fff) + 1, int(v>>14&0x3fff) + 1, true
	case "VP8 ":
		return int(b[26]) | int(b[27]&0x3f)<<8, int(b[28]) | int(b[29]&0x3f)<<8, true
	}
	return 0, 0, false
}

// Job is a job record as GET /api/v1/jobs/{id} shows it.
type Job struct {
	ID        string `json:"job_id"`
	Status    string `json:"status"`
	ErrorCode string `json:"error_code"`
	Webhook   *struct {
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"webhook"`
}

// Submit posts an async render with a webhook and returns the job id.
func (c *Client) Submit(ctx context.Context, s Shot, webhook string) (string, error) {
	b, _ := json.Marshal(map[string]any{"url": s.URL, "format": s.Format, "viewport_width": s.Width,
		"viewport_height": s.Height, "async": true, "webhook_url": webhook})
	var r struct {
		JobID string `json:"job_id"`
	}
	st, err := c.do(ctx, http.MethodPost, "/api/v1/screenshot", b, &r)
	if err != nil {
		return "", err
	}
	if st != http.StatusAccepted || r.JobID == "" {
		return "", fmt.Errorf("async render: status %d", st)
	}
	return r.JobID, nil
}

// Job reads one job record.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	var j Job
	st, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+id, nil, &j)
	if err == nil && st != 200 {
		err = fmt.Errorf("job %s: status %d", id, st)
	}
	return j, err
}

// Usage is the part of GET /api/v1/usage that the checks compare.
type Usage struct {
	Quota struct {
		Used int `json:"used"`
	} `json:"quota"`
	Renders struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		CacheHits int `json:"cache_hits"`
	} `json:"renders"`
}

// Usage reads the account's usage.
func (c *Client) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	st, err := c.do(ctx, http.MethodGet, "/api/v1/usage", nil, &u)
	if err == nil && st != 200 {
		err = fmt.Errorf("usage: status %d", st)
	}
	return u, err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Access-Key", c.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(b, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: body not JSON", method, path)
		}
	}
	return resp.StatusCode, nil
}

// Metric reads one unlabelled series from the admin listener's /metrics.
func Metric(ctx context.Context, hc *http.Client, admin, name string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name+" ")); ok {
			return strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
		}
	}
	return 0, fmt.Errorf("no series %s", name)
}

func catalogueCodes() []string {
	out := make([]string, 0, len(shotd.Catalogue))
	for _, ci := range shotd.Catalogue {
		out = append(out, string(ci.Code))
	}
	return out
}
