package httpd_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/pressure"
)

// TestPressureAndSeries reads /pressure and /readyz of the package's service, then has it
// refuse a request, render and run a job, and finds the series operators alert on in /metrics:
// refusals by code, the slot and queue waits, Chrome's memory and the build; the two redundant
// series are gone.
func TestPressureAndSeries(t *testing.T) {
	r := do(t, "GET", env.base+"/pressure", nil, nil)
	var body struct{ Pressure pressure.Pressure }
	decodeJSON(t, r, &body)
	p := body.Pressure
	if r.status != 200 || !p.Available || p.BrowsersUp < 1 || p.Capacity < 1 || p.ChromeMemoryBytes <= 0 || p.Date.IsZero() {
		t.Fatalf("/pressure: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "pid") {
		t.Errorf("/pressure shows process ids: %s", r.body)
	}
	r = do(t, "GET", env.base+"/readyz", nil, nil)
	if r.status != 200 || strings.Contains(string(r.body), "missing") {
		t.Errorf("/readyz: %d %s", r.status, r.body)
	}
	if a := adminDo(t, "GET", "/admin/v1/pressure", "", adminToken); a.status != 200 || !strings.Contains(string(a.body), `"capacity"`) {
		t.Errorf("/admin/v1/pressure: %d %s", a.status, a.body)
	}

	if a := get(t, "/api/v1/screenshot", nil); a.status != 401 {
		t.Fatalf("no key: %d", a.status)
	}
	acc := newAccount(t, "jobs", true)
	if a := get(t, "/api/v1/screenshot", acc.q("html", "<p>pressure</p>", "viewport_width", "320", "viewport_height", "200")); a.status != 200 {
		t.Fatalf("render: %d %s", a.status, a.body)
	}
	waitFinal(t, acc.key.AccessKey, submit(t, acc.key.AccessKey, map[string]any{"html": "<p>queued</p>", "viewport_width": 320, "viewport_height": 200}))

	got := scrape(t, env.admin)
	for _, s := range []string{
		`shotd_refusals_total{code="access_key_required"}`,
		`shotd_render_slot_wait_seconds_count`,
		`shotd_job_queue_wait_seconds_count`,
		`shotd_chrome_memory_bytes{browser="0"}`,
	} {
		if got[s] <= 0 {
			t.Errorf("%s = %v, want > 0", s, got[s])
		}
	}
	build := false
	for k, v := range got {
		if strings.HasPrefix(k, "shotd_build_info{") && strings.Contains(k, `goversion="go`) && v == 1 {
			build = true
		}
		if strings.HasPrefix(k, "shotd_render_seconds") || strings.HasPrefix(k, "shotd_job_queue_depth") {
			t.Errorf("redundant series %s is still served", k)
		}
	}
	if !build {
		t.Error("no shotd_build_info")
	}
}

// TestPressureFull: a node that takes no more work answers 503, so that a load balancer's health
// check takes it out of rotation; one with room answers 200.
func TestPressureFull(t *testing.T) {
	var reading atomic.Pointer[pressure.Pressure]
	// Refused requests are limited per address: a health check's 503s must not count.
	srv := httpd.New(httpd.Settings{PublicURL: "http://127.0.0.1", RefusedPerAddressPerMinute: 2}, httpd.Deps{Log: zerolog.Nop(),
		Pressure: func() pressure.Pressure { return *reading.Load() }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, srv.Serve, srv.Shutdown)
	for _, c := range []struct {
		p      pressure.Pressure
		status int
	}{
		{pressure.Pressure{Capacity: 2, Running: 2, Reason: "every render slot is busy"}, 503},
		{pressure.Pressure{Capacity: 2, Running: 2, Reason: "every render slot is busy"}, 503},
		{pressure.Pressure{Capacity: 2, Running: 2, Reason: "every render slot is busy"}, 503},
		{pressure.Pressure{Capacity: 2, Running: 2, Reason: "every render slot is busy"}, 503},
		{pressure.Pressure{Capacity: 2, Running: 1, FreeSlots: 1, Available: true, Date: time.Now()}, 200},
	} {
		reading.Store(&c.p)
		resp, err := http.Get("http://" + ln.Addr().String() + "/pressure")
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Pressure pressure.Pressure }
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode != c.status || got.Pressure.Running != c.p.Running || got.Pressure.Reason != c.p.Reason {
			t.Errorf("%+v: %d %+v", c.p, resp.StatusCode, got.Pressure)
		}
	}
}

// TestReadyzSaysWhatIsMissing: /readyz names what is missing; a required part makes it 503, ffmpeg
// (video only) is named but leaves it 200.
func TestReadyzSaysWhatIsMissing(t *testing.T) {
	var diskFull atomic.Bool
	srv := httpd.New(httpd.Settings{PublicURL: "http://127.0.0.1"}, httpd.Deps{Log: zerolog.Nop(), Ready: func() bool { return true },
		ReadyChecks: []httpd.ReadyCheck{
			{Name: "disk", Required: true, Check: func() string {
				if diskFull.Load() {
					return "data_dir has 1 MiB free"
				}
				return ""
			}},
			{Name: "ffmpeg", Check: func() string { return "ffmpeg is gone" }},
		}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, srv.Serve, srv.Shutdown)
	for _, full := range []bool{false, true} {
		diskFull.Store(full)
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status  string
			Missing map[string]string
		}
		json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		wantStatus, want := 200, "ready"
		if full {
			wantStatus, want = 503, "unavailable"
		}
		if resp.StatusCode != wantStatus || got.Status != want || got.Missing["ffmpeg"] == "" || (got.Missing["disk"] != "") != full {
			t.Errorf("disk full %v: %d %+v", full, resp.StatusCode, got)
		}
	}
}
