package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of the answers
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/shotd/shotd"
)

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
