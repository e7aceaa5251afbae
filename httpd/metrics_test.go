package httpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/actors"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
	"github.com/shotd/shotd/internal/testkit"
	shotdmetrics "github.com/shotd/shotd/metrics"
	"github.com/shotd/shotd/pressure"
	"github.com/shotd/shotd/store"
	"github.com/shotd/shotd/webhook"
)

// TestMetricsAfterRenders renders for real (the package's Chrome) through a service of its own
// (store, actors, registry), so that no other test's traffic moves its numbers, then scrapes
// /metrics on the admin listener and checks every series against what it did. stack is a service of
// its own around the package's Chrome: store, actors, registry, render log, public and admin
// listeners, with public_url its real address.
type stack struct {
	st            *store.Store
	jobs          *actors.Jobs
	base, admBase string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	log := zerolog.Nop()
	st := storetest.Open(t, "")
	sys := actors.NewSystem(log)
	t.Cleanup(sys.Shutdown)

	metrics := shotdmetrics.New(func() float64 { return float64(env.renderer.Up()) })
	st.ObserveCache(metrics.CacheLookup)
	env.guard.ObserveRefusals(metrics.EgressRefused)
	t.Cleanup(func() { env.guard.ObserveRefusals(func(string) {}) })
	metered := metrics.Meter(env.renderer)
	metrics.WatchBrowsers(env.renderer)

	accounts, err := actors.StartAccounts(sys, actors.AccountsConfig{Store: st, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	webhooks, err := actors.StartWebhooks(sys, actors.WebhooksConfig{Store: st, Log: log,
		RetryDelays: []time.Duration{50 * time.Millisecond}, Attempted: metrics.WebhookAttempted,
		Sender: &webhook.Sender{Client: webhook.NewClient(env.guard.DialContext, 5*time.Second), Keys: st, PublicURL: "http://shotd.test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { webhooks.Close(context.Background()) })
	renders := httpd.NewRenderLog(100)
	jobs, err := actors.StartJobs(sys, actors.JobsConfig{Store: st, Accounts: accounts, Render: metered, Webhooks: webhooks,
		Plans: env.plans, FileTTL: time.Hour, MaxOutputBytes: 4 << 20, Ended: renders.AddJob, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Close(context.Background()) })
	metrics.WatchJobs(jobs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := httpd.New(httpd.Settings{PublicURL: base, MaxSourceBytes: 64 << 10, MaxOutputBytes: 4 << 20, FileTTL: time.Hour},
		httpd.Deps{Keys: st.KeyCache(), Plans: env.plans, Renderer: metered, Ready: env.renderer.Ready, Gate: accounts, Files: st, Jobs: jobs, Records: st,
			URLs: httpd.GuardURLs{Guard: env.guard}, Metrics: metrics, Renders: renders, Log: log})
	serveOn(t, ln, srv.Serve, srv.Shutdown)
	adm := httpd.NewAdmin(adminToken, base, st, env.plans, httpd.GateUsage{Gate: accounts, Plans: env.plans}, metrics.Registry(), log)
	adm.UseRenderLog(renders)
	adm.UsePressure(pressure.Gauge{Pool: env.renderer, Jobs: jobs, SlotsPerBrowser: 2}.Read)
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, aln, adm.Serve, adm.Shutdown)
	return &stack{st: st, jobs: jobs, base: base, admBase: "http://" + aln.Addr().String()}
}

func TestMetricsAfterRenders(t *testing.T) {
	sk := newStack(t)
	st, jobs, base, admBase := sk.st, sk.jobs, sk.base, sk.admBase

	acc, err := st.CreateAccount("metrics@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := st.CreateKey(acc.ID, "m", false)
	if err != nil {
		t.Fatal(err)
	}
	hook := testkit.StartReceiver(t)

	shot := func(want int, kv ...string) []byte {
		t.Helper()
		q := url.Values{"access_key": {key.AccessKey}}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		resp, err := http.Get(base + "/api/v1/screenshot?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("screenshot %v: %d, want %d: %.300s", kv, resp.StatusCode, want, b)
		}
		return b
	}
	shot(200, "url", page("/"), "response_type", "json")
	shot(200, "url", page("/"), "response_type", "json", "viewport_width", "800")
	shot(200, "url", page("/"), "format", "jpeg", "response_type", "json")
	shot(422, "url", page("/"), "selector", "#nothing")
	shot(200, "url", page("/"), "cache", "true", "response_type", "json") // miss, renders
	shot(200, "url", page("/"), "cache", "true", "response_type", "json") // hit
	shot(403, "url", "http://private.shotd.test/")                        // refused at acceptance

	var accepted struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(shot(202, "url", page("/"), "async", "true", "webhook_url", hook.URL()), &accepted); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); len(hook.Deliveries()) == 0 || jobs.Stats().Succeeded == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("job %s: no delivery in a minute (stats %+v)", accepted.JobID, jobs.Stats())
		}
	}
	// The delivery is counted once the actor records it, after the receiver answered.
	for end := time.Now().Add(30 * time.Second); scrape(t, admBase)[`shotd_webhook_attempts_total{outcome="delivered"}`] == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the delivery was not counted")
		}
	}

	got := scrape(t, admBase)
	for series, want := range map[string]float64{
		// 2 sync png, the cache miss and the job; the selector miss failed in the browser.
		`shotd_render_duration_seconds_count{format="png",outcome="success"}`:  4,
		`shotd_render_duration_seconds_count{format="jpeg",outcome="success"}`: 1,
		`shotd_render_duration_seconds_count{format="png",outcome="error"}`:    1,
		`shotd_render_errors_total{code="selector_not_found"}`:                 1,
		`shotd_cache_lookups_total{result="miss"}`:                             1,
		`shotd_cache_lookups_total{result="hit"}`:                              1,
		`shotd_egress_refusals_total{reason="loopback"}`:                       1,
		`shotd_webhook_attempts_total{outcome="delivered"}`:                    1,
		`shotd_jobs_ended_total{state="succeeded"}`:                            1,
		`shotd_jobs_ended_total{state="failed"}`:                               0,
		`shotd_jobs{state="queued"}`:                                           0,
		`shotd_jobs{state="rendering"}`:                                        0,
		`shotd_browsers_up`:                                                    1,
		`shotd_browser_renders_inflight{browser="0"}`:                          0,
		`shotd_requests_total{route="/api/v1/screenshot",status="200"}`:        5,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if s := got[`shotd_render_duration_seconds_sum{format="png",outcome="success"}`]; s <= 0 {
		t.Errorf("png render time sum %v, want > 0", s)
	}
	// The pool refills after the renders: the ready tabs are counted from the browser itself.
	for deadline := time.Now().Add(15 * time.Second); got[`shotd_browser_tabs_ready{browser="0"}`] < 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("shotd_browser_tabs_ready{browser=\"0\"} = %v, want at least one ready tab", got[`shotd_browser_tabs_ready{browser="0"}`])
			break
		}
		got = scrape(t, admBase)
	}
	checkDashboardData(t, admBase, acc.ID)
	if t.Failed() {
		for k, v := range got {
			if strings.HasPrefix(k, "shotd_") && !strings.Contains(k, "_bucket") {
				t.Logf("%s %v", k, v)
			}
		}
	}
}

// serveOn serves on ln until the test ends.
func serveOn(t *testing.T, ln net.Listener, serve func(net.Listener) error, shutdown func(context.Context) error) {
	t.Helper()
	go serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		shutdown(ctx)
	})
}

// scrape reads /metrics as Prometheus would and returns its samples.
func scrape(t *testing.T, admBase string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", admBase+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return samples(families)
}

// samples flattens metric families to series name (labels sorted, as in the text format) ->
// value; a histogram gives its _count and _sum.
func samples(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[strings.Replace(key, name, name+"_count", 1)] = float64(m.GetHistogram().GetSampleCount())
				out[strings.Replace(key, name, name+"_sum", 1)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// checkDashboardData reads what the dashboard shows after TestMetricsAfterRenders' traffic: the
// recent renders, newest first, and today's counts.
func checkDashboardData(t *testing.T, admBase, accountID string) {
	t.Helper()
	adminGet := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest("GET", admBase+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var list struct{ Renders []httpd.RenderEntry }
	adminGet("/admin/v1/renders?account="+accountID, &list)
	var kinds []string
	for _, r := range list.Renders {
		k := r.Kind + ":" + r.Outcome
		if r.ErrorCode != "" {
			k += ":" + r.ErrorCode
		}
		kinds = append(kinds, k)
		if r.AccountID != accountID {
			t.Errorf("render of account %q listed for %q", r.AccountID, accountID)
		}
	}
	// Newest first: the job's end, its acceptance, the refused url, the cache hit and miss, the
	// selector miss, three renders.
	want := []string{"job:succeeded", "accepted:accepted", "sync:failed:host_not_allowed", "sync:succeeded", "sync:succeeded",
		"sync:failed:selector_not_found", "sync:succeeded", "sync:succeeded", "sync:succeeded"}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Errorf("recent renders:\n got %q\nwant %q", kinds, want)
	}
	if len(list.Renders) > 0 && list.Renders[len(list.Renders)-1].ContentType != "application/json" {
		t.Errorf("oldest render's content type %q", list.Renders[len(list.Renders)-1].ContentType)
	}

	// Usage is written by the account actors after each answer: wait for the last one.
	var daily struct {
		Days []shotd.DayUsage
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		adminGet("/admin/v1/accounts/"+accountID+"/usage/daily?days=30", &daily)
		if len(daily.Days) == 30 && daily.Days[29].Succeeded == 5 || time.Now().After(end) {
			break
		}
	}
	today := daily.Days[len(daily.Days)-1]
	if len(daily.Days) != 30 || today.Date != time.Now().UTC().Format(time.DateOnly) ||
		today.Succeeded != 5 || today.Failed != 1 || today.CacheHits != 1 {
		t.Errorf("daily usage: %d days, today %+v; want 30 days, 5 succeeded, 1 failed, 1 cache hit", len(daily.Days), today)
	}
}
