package httpd_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/testkit"
)

// Plans of the limit tests. Every limit is positive; each plan lowers the ones it exercises.
func init() {
	base := func(mod func(p *shotd.Plan)) shotd.Plan {
		p := shotd.Plan{MonthlyQuota: 1000,
			PlanLimits: shotd.PlanLimits{RequestsPerMinute: 1000, StatusRequestsPerMinute: 1000,
				Concurrency: 4, QueueLimit: 100, FailuresPerMinute: 1000},
			Features: shotd.AllFeatures}
		mod(&p)
		return p
	}
	testPlans["lim_rate"] = base(func(p *shotd.Plan) { p.RequestsPerMinute = 3; p.StatusRequestsPerMinute = 5 })
	testPlans["lim_conc"] = base(func(p *shotd.Plan) { p.Concurrency = 1 })
	testPlans["lim_fail"] = base(func(p *shotd.Plan) { p.FailuresPerMinute = 2 })
	testPlans["lim_queue"] = base(func(p *shotd.Plan) { p.QueueLimit = 2; p.Concurrency = 1 })
	testPlans["lim_quota"] = base(func(p *shotd.Plan) { p.MonthlyQuota = 10; p.Concurrency = 50 })
	testPlans["lim_nothing"] = base(func(p *shotd.Plan) { p.Features = []string{} })
	testPlans["lim_bench"] = base(func(p *shotd.Plan) {
		p.MonthlyQuota, p.RequestsPerMinute, p.StatusRequestsPerMinute = 1<<30, 1<<30, 1<<30
	})
	testPlans["lim_prec"] = base(func(p *shotd.Plan) {
		p.MonthlyQuota, p.RequestsPerMinute, p.Concurrency, p.QueueLimit, p.FailuresPerMinute = 2, 5, 1, 1, 2
		p.Features = []string{shotd.FeatureAsync}
	})
}

// fetch is do for goroutines: it returns its error instead of failing the test.
func fetch(method, rawURL string, body []byte, header map[string]string) (answer, error) {
	req, err := http.NewRequest(method, rawURL, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}, err
}

// codeOf returns the error_code of an error answer, or "" for a success.
func codeOf(a answer) string {
	if a.status < 400 {
		return ""
	}
	var e errorBody
	_ = json.Unmarshal(a.body, &e)
	return e.ErrorCode
}

// tiny is a cheap render: a small html page in a small viewport.
func tiny(a account, kv ...string) url.Values {
	return a.q(append([]string{"html", "<body style='background:#396'>x</body>", "viewport_width", "120", "viewport_height", "100"}, kv...)...)
}

func usageNow(t *testing.T, a account) shotd.UsageReport {
	t.Helper()
	r := get(t, "/api/v1/usage", a.q())
	if r.status != 200 {
		t.Fatalf("usage: %d %s", r.status, codeOf(r))
	}
	var u shotd.UsageReport
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

func headerInt(t *testing.T, a answer, name string) int {
	t.Helper()
	v, err := strconv.Atoi(a.header.Get(name))
	if err != nil {
		t.Fatalf("header %s = %q: %v", name, a.header.Get(name), err)
	}
	return v
}

// wantRetryAfter checks a 429's Retry-After: whole seconds within the one-minute window.
func wantRetryAfter(t *testing.T, a answer) int {
	t.Helper()
	ra := headerInt(t, a, "Retry-After")
	if ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %d, want 1..60", ra)
	}
	return ra
}

// wantRateHeaders checks the X-RateLimit-* headers: the limit, what remains, and a reset that is
// a Unix time within the coming minute.
func wantRateHeaders(t *testing.T, a answer, limit, remaining int) {
	t.Helper()
	if got := headerInt(t, a, "X-RateLimit-Limit"); got != limit {
		t.Fatalf("X-RateLimit-Limit %d, want %d", got, limit)
	}
	if got := headerInt(t, a, "X-RateLimit-Remaining"); got != remaining {
		t.Fatalf("X-RateLimit-Remaining %d, want %d", got, remaining)
	}
	reset := int64(headerInt(t, a, "X-RateLimit-Reset"))
	if now := time.Now().Unix(); reset < now-1 || reset > now+61 {
		t.Fatalf("X-RateLimit-Reset %d is not a Unix time within a minute of %d", reset, now)
	}
}

// newHoldPage serves /slow, whose answer waits until the test releases it: a render of it holds
// its concurrency slot (or its job) as long as the test needs.
func newHoldPage(t *testing.T) *testkit.Pages { return testkit.StartPages(t, 30*time.Second) }

func TestRateLimit(t *testing.T) {
	a := newAccount(t, "lim_rate", true)
	for i := range 3 {
		r := get(t, "/api/v1/screenshot", tiny(a))
		if r.status != 200 {
			t.Fatalf("render %d: %d %s", i+1, r.status, codeOf(r))
		}
		wantRateHeaders(t, r, 3, 2-i)
	}
	quota := usageNow(t, a).Quota
	r := get(t, "/api/v1/screenshot", tiny(a))
	wantError(t, r, 429, shotd.CodeRateLimited)
	wantRetryAfter(t, r)
	wantRateHeaders(t, r, 3, 0)
	if got := usageNow(t, a).Quota; got.Used != quota.Used || got.Remaining != quota.Remaining {
		t.Fatalf("quota %+v after the refusal, was %+v", got, quota)
	}
	// Other endpoints that render are under the same allowance.
	wantError(t, get(t, "/api/v1/take", tiny(a)), 429, shotd.CodeRateLimited)
	wantError(t, get(t, "/api/v1/screenshot", tiny(a, "async", "true")), 429, shotd.CodeRateLimited)
}

func TestStatusRateLimit(t *testing.T) {
	a := newAccount(t, "lim_rate", true)
	for i := range 5 {
		r := get(t, "/api/v1/usage", a.q())
		if r.status != 200 {
			t.Fatalf("usage %d: %d %s", i+1, r.status, codeOf(r))
		}
		wantRateHeaders(t, r, 5, 4-i)
		if r.header.Get("X-Quota-Limit") != "" {
			t.Fatalf("status endpoint with X-Quota-Limit")
		}
	}
	cases := []struct {
		name string
		path string
	}{
		{"usage", "/api/v1/usage"},
		{"jobs", "/api/v1/jobs/job_nope"},
		{"batches", "/api/v1/batches/bat_nope"},
		{"files", "/api/v1/files/f_nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := get(t, c.path, a.q())
			wantError(t, r, 429, shotd.CodeRateLimited)
			wantRetryAfter(t, r)
			wantRateHeaders(t, r, 5, 0)
		})
	}
	// The render allowance is its own.
	r := get(t, "/api/v1/screenshot", tiny(a))
	if r.status != 200 {
		t.Fatalf("render after the status allowance: %d %s", r.status, codeOf(r))
	}
	wantRateHeaders(t, r, 3, 2)
}

func TestConcurrencyLimit(t *testing.T) {
	a := newAccount(t, "lim_conc", true)
	hp := newHoldPage(t)
	first := make(chan answer, 1)
	go func() {
		r, err := fetch(http.MethodGet, env.base+"/api/v1/screenshot?"+a.q("url", hp.URL("/slow"), "viewport_width", "120", "viewport_height", "100").Encode(), nil, nil)
		if err != nil {
			r.status = -1
		}
		first <- r
	}()
	hp.WaitSlow(t, 1, 20*time.Second)

	r := get(t, "/api/v1/screenshot", tiny(a))
	wantError(t, r, 429, shotd.CodeConcurrencyLimit)
	wantRetryAfter(t, r)
	if headerInt(t, r, "X-Concurrency-Limit") != 1 || headerInt(t, r, "X-Concurrency-Remaining") != 0 {
		t.Fatalf("X-Concurrency-* %s/%s, want 1/0", r.header.Get("X-Concurrency-Limit"), r.header.Get("X-Concurrency-Remaining"))
	}
	// Status endpoints do not take a render slot.
	if u := usageNow(t, a); u.Quota.Remaining != 999 || u.Quota.Used != 0 {
		t.Fatalf("usage while rendering: %+v (one reservation held)", u.Quota)
	}

	hp.Release()
	r = <-first
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("held render: %d %s %s", r.status, r.header.Get("Content-Type"), codeOf(r))
	}
	if headerInt(t, r, "X-Concurrency-Remaining") != 1 {
		t.Fatalf("X-Concurrency-Remaining %s after the render, want 1", r.header.Get("X-Concurrency-Remaining"))
	}
	if r := get(t, "/api/v1/screenshot", tiny(a)); r.status != 200 {
		t.Fatalf("render after the slot was freed: %d %s", r.status, codeOf(r))
	}
	if u := usageNow(t, a); u.Quota.Used != 2 {
		t.Fatalf("used %d, want 2 (the refused request is free)", u.Quota.Used)
	}
}

func TestFailureLimit(t *testing.T) {
	a := newAccount(t, "lim_fail", true)
	closed := closedPort(t)
	for i := range 2 {
		r := get(t, "/api/v1/screenshot", a.q("url", "http://127.0.0.1:"+closed+"/", "viewport_width", "120", "viewport_height", "100"))
		wantError(t, r, 502, shotd.CodeNavigationFailed)
		if headerInt(t, r, "X-Quota-Remaining") != 1000 {
			t.Fatalf("failure %d: X-Quota-Remaining %s, want 1000 (not billed)", i+1, r.header.Get("X-Quota-Remaining"))
		}
	}
	r := get(t, "/api/v1/screenshot", tiny(a))
	wantError(t, r, 429, shotd.CodeFailureLimit)
	wantRetryAfter(t, r)
	u := usageNow(t, a)
	if u.Quota.Used != 0 || u.Renders.Failed != 2 || u.Renders.Succeeded != 0 {
		t.Fatalf("usage %+v %+v, want 2 failed, nothing billed", u.Quota, u.Renders)
	}
}

func TestQueueLimit(t *testing.T) {
	a := newAccount(t, "lim_queue", true)
	hp := newHoldPage(t)
	async := func() answer {
		return get(t, "/api/v1/screenshot", a.q("url", hp.URL("/slow"), "async", "true", "viewport_width", "120", "viewport_height", "100"))
	}
	var jobs []string
	var last answer
	for i := range 2 {
		last = async()
		if last.status != 202 {
			t.Fatalf("job %d: %d %s", i+1, last.status, codeOf(last))
		}
		var acc struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(last.body, &acc); err != nil || acc.JobID == "" {
			t.Fatalf("202 body: %v", err)
		}
		jobs = append(jobs, acc.JobID)
		if i == 0 {
			hp.WaitSlow(t, 1, 20*time.Second) // the first job renders and holds the only slot; the second waits
		}
	}
	before := usageNow(t, a)
	r := async()
	wantError(t, r, 429, shotd.CodeQueueLimit)
	wantRetryAfter(t, r)
	// Nothing counted: not the rate, not the quota.
	if got, want := headerInt(t, r, "X-RateLimit-Remaining"), headerInt(t, last, "X-RateLimit-Remaining"); got != want {
		t.Fatalf("X-RateLimit-Remaining %d after the refusal, %d before", got, want)
	}
	after := usageNow(t, a)
	if after.Quota != before.Quota || after.Renders != before.Renders || after.Jobs != before.Jobs {
		t.Fatalf("usage changed by a refused job: %+v -> %+v", before, after)
	}
	if before.Jobs.Waiting != 1 || before.Jobs.Running != 1 || before.Quota.Remaining != 998 {
		t.Fatalf("usage with two jobs: %+v", before)
	}

	hp.Release()
	for _, id := range jobs {
		waitJobStatus(t, a, id, "succeeded")
	}
	// The job record is final before its account settles it (a message after the store write).
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		u := usageNow(t, a)
		if u.Quota.Used == 2 && u.Jobs.Waiting == 0 && u.Jobs.Running == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("usage after the jobs: %+v", u)
		}
	}
}

// waitJobStatus polls the job until it reaches status.
func waitJobStatus(t *testing.T, a account, id, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := get(t, "/api/v1/jobs/"+id, a.q())
		var j struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(r.body, &j)
		if j.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %q (%d), want %s", id, j.Status, r.status, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExactQuota: 50 requests at once against a quota of 10 give exactly 10 successes, and
// exactly 10 are billed; bonus screenshots come after the plan quota.
func TestExactQuota(t *testing.T) {
	a := newAccount(t, "lim_quota", true)
	u := env.base + "/api/v1/screenshot?" + tiny(a).Encode()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
		start  = make(chan struct{})
	)
	for range 50 {
		wg.Go(func() {
			<-start
			for try := 0; ; try++ {
				r, err := fetch(http.MethodGet, u, nil, nil)
				key := codeOf(r)
				switch {
				case err != nil:
					key = "transport error"
				case r.status == 200:
					key = "200"
				case key == string(shotd.CodeRendererBusy) && try < 20:
					// Four browser slots for ten renders: busy is the client's cue to retry.
					time.Sleep(100 * time.Millisecond)
					continue
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
				return
			}
		})
	}
	close(start)
	wg.Wait()
	if counts["200"] != 10 || counts[string(shotd.CodeQuotaExceeded)] != 40 {
		t.Fatalf("answers %v, want 10 × 200 and 40 × quota_exceeded", counts)
	}
	us := usageNow(t, a)
	if us.Quota.Used != 10 || us.Quota.Remaining != 0 || us.Renders.Succeeded != 10 {
		t.Fatalf("usage %+v %+v, want exactly 10 billed", us.Quota, us.Renders)
	}
	stored, err := env.st.Usage(a.acc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if stored.Used > 10 || stored.BonusUsed != 0 {
		t.Fatalf("stored usage %+v, want at most 10 billed (writes may still be on their way)", stored)
	}

	r := get(t, "/api/v1/screenshot", tiny(a))
	wantError(t, r, 402, shotd.CodeQuotaExceeded)
	if r.header.Get("X-Quota-Remaining") != "0" {
		t.Fatalf("X-Quota-Remaining %q on a 402", r.header.Get("X-Quota-Remaining"))
	}

	// The operator grants one bonus screenshot: one more success, then 402 again.
	pr := do(t, http.MethodPatch, env.admin+"/admin/v1/accounts/"+a.acc.ID, []byte(`{"bonus_screenshots":1}`),
		map[string]string{"Authorization": "Bearer " + adminToken, "Content-Type": "application/json"})
	if pr.status != 200 {
		t.Fatalf("patch: %d %s", pr.status, pr.body)
	}
	if us := usageNow(t, a); us.Quota.Bonus != 1 || us.Quota.Remaining != 1 {
		t.Fatalf("usage after the grant: %+v", us.Quota)
	}
	r = get(t, "/api/v1/screenshot", tiny(a))
	if r.status != 200 || r.header.Get("X-Quota-Remaining") != "0" {
		t.Fatalf("bonus render: %d %s, X-Quota-Remaining %q", r.status, codeOf(r), r.header.Get("X-Quota-Remaining"))
	}
	wantError(t, get(t, "/api/v1/screenshot", tiny(a)), 402, shotd.CodeQuotaExceeded)
	us = usageNow(t, a)
	if us.Quota.Used != 10 || us.Quota.Bonus != 0 || us.Renders.Succeeded != 11 {
		t.Fatalf("usage %+v %+v, want 10 used, bonus spent, 11 successes", us.Quota, us.Renders)
	}
}

// TestLimitHeaders: the headers of a render answer agree with the usage record.
func TestLimitHeaders(t *testing.T) {
	a := newAccount(t, "default", true)
	plan := env.plans["default"]
	r := get(t, "/api/v1/screenshot", tiny(a))
	if r.status != 200 {
		t.Fatalf("render: %d %s", r.status, codeOf(r))
	}
	u := usageNow(t, a)
	checks := []struct {
		name   string
		header string
		want   string
	}{
		{"quota limit", "X-Quota-Limit", strconv.Itoa(plan.MonthlyQuota)},
		{"quota remaining", "X-Quota-Remaining", strconv.Itoa(u.Quota.Remaining)},
		// In whole seconds, rounded up: never before the real reset.
		{"quota reset", "X-Quota-Reset", u.Quota.Reset.UTC().Add(time.Second - 1).Truncate(time.Second).Format(time.RFC3339)},
		{"rate limit", "X-RateLimit-Limit", strconv.Itoa(plan.RequestsPerMinute)},
		{"rate remaining", "X-RateLimit-Remaining", strconv.Itoa(plan.RequestsPerMinute - 1)},
		{"concurrency limit", "X-Concurrency-Limit", strconv.Itoa(plan.Concurrency)},
		{"concurrency remaining", "X-Concurrency-Remaining", strconv.Itoa(plan.Concurrency)},
		{"cache", "X-Cache", "MISS"},
	}
	for _, c := range checks {
		if got := r.header.Get(c.header); got != c.want {
			t.Errorf("%s: %s = %q, want %q", c.name, c.header, got, c.want)
		}
	}
	if u.Quota.Used != 1 || u.Quota.Remaining != plan.MonthlyQuota-1 {
		t.Fatalf("usage %+v after one render", u.Quota)
	}
	if reset, err := time.Parse(time.RFC3339, r.header.Get("X-Quota-Reset")); err != nil || !reset.After(time.Now()) || reset.After(time.Now().AddDate(0, 1, 1)) {
		t.Fatalf("X-Quota-Reset %q: want a date within the coming month", r.header.Get("X-Quota-Reset"))
	}
	if ms := headerInt(t, r, "X-Render-Ms"); ms < 0 {
		t.Fatalf("X-Render-Ms %d", ms)
	}
	// An error answer after admission carries the headers too, and bills nothing.
	r = get(t, "/api/v1/screenshot", a.q("url", "http://127.0.0.1:"+closedPort(t)+"/"))
	wantError(t, r, 502, shotd.CodeNavigationFailed)
	if r.header.Get("X-Quota-Remaining") != strconv.Itoa(plan.MonthlyQuota-1) {
		t.Fatalf("X-Quota-Remaining %q on a failed render", r.header.Get("X-Quota-Remaining"))
	}
}

// TestFeatureGates: a plan without a feature refuses it with 403 naming the feature, and counts
// nothing.
func TestFeatureGates(t *testing.T) {
	a := newAccount(t, "lim_nothing", true)
	cases := []struct {
		name    string
		feature string
		method  string
		path    string
		q       url.Values
		body    string
	}{
		{"pdf", "pdf", "GET", "/api/v1/screenshot", tiny(a, "format", "pdf"), ""},
		{"video", "video", "GET", "/api/v1/screenshot", tiny(a, "format", "mp4"), ""},
		{"gif is video", "video", "GET", "/api/v1/take", tiny(a, "format", "gif"), ""},
		{"async", "async", "GET", "/api/v1/screenshot", tiny(a, "async", "true"), ""},
		{"cache", "cache", "GET", "/api/v1/screenshot", tiny(a, "cache", "true"), ""},
		{"bulk", "bulk", "POST", "/api/v1/bulk", a.q(), `{"requests":[{"html":"<p>x</p>"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, env.base+c.path+"?"+c.q.Encode(), []byte(c.body), map[string]string{"Content-Type": "application/json"})
			e := wantError(t, r, 403, shotd.CodeFeatureNotAvailable)
			if !strings.Contains(e.ErrorMessage, c.feature) {
				t.Fatalf("message %q does not name %s", e.ErrorMessage, c.feature)
			}
		})
	}
	r := get(t, "/api/v1/screenshot", tiny(a))
	if r.status != 200 {
		t.Fatalf("png on the plan without features: %d %s", r.status, codeOf(r))
	}
	wantRateHeaders(t, r, 1000, 999) // the refusals counted nothing
}

// TestPrecedence: a request that fails two ways at once gets the code that comes first:
// authentication, validation, features, rate, failures, queue, quota, concurrency.
func TestPrecedence(t *testing.T) {
	// The requests are judged by lim_prec: quota 2, rpm 5, concurrency 1, queue 1, failures 2,
	// async only. Set-ups drive the account actors directly under a roomy copy of it, so that
	// they can reach two limits at once (failures and quota, say), as a plan change could.
	roomy := env.plans["lim_prec"]
	roomy.MonthlyQuota, roomy.RequestsPerMinute, roomy.Concurrency, roomy.QueueLimit, roomy.FailuresPerMinute = 100, 100, 100, 100, 100
	admit := func(t *testing.T, a account, kind shotd.AdmitKind, o shotd.Outcome, hold bool) {
		t.Helper()
		res, _, err := env.accounts.Admit(shotd.Admission{Account: a.acc, Plan: roomy, Kind: kind, Jobs: 1})
		if err != nil {
			t.Fatalf("set-up admit: %v", err)
		}
		if kind != shotd.AdmitRender || hold {
			if hold {
				t.Cleanup(func() { env.accounts.Settle(a.acc.ID, res.Ticket, shotd.OutcomeReleased) })
			}
			return
		}
		if _, err := env.accounts.Settle(a.acc.ID, res.Ticket, o); err != nil {
			t.Fatal(err)
		}
	}
	render := func(t *testing.T, a account, o shotd.Outcome, n int) {
		for range n {
			admit(t, a, shotd.AdmitRender, o, false)
		}
	}
	noKey := func(a account) url.Values { q := tiny(a, "fromat", "png"); q.Del("access_key"); return q }
	cases := []struct {
		name  string
		setup func(t *testing.T, a account)
		q     func(a account) url.Values
		code  shotd.Code
	}{
		{"authentication over validation", nil, noKey, shotd.CodeAccessKeyRequired},
		{"validation over features", nil, func(a account) url.Values { return tiny(a, "format", "pdf", "viewport_width", "99") }, shotd.CodeInvalidOptions},
		{"features over rate", func(t *testing.T, a account) { render(t, a, shotd.OutcomeReleased, 5) },
			func(a account) url.Values { return tiny(a, "format", "pdf") }, shotd.CodeFeatureNotAvailable},
		{"rate over failures", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeFailed, 2)
			render(t, a, shotd.OutcomeReleased, 3)
		},
			func(a account) url.Values { return tiny(a) }, shotd.CodeRateLimited},
		{"rate over quota", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeSucceeded, 2)
			render(t, a, shotd.OutcomeReleased, 3)
		},
			func(a account) url.Values { return tiny(a) }, shotd.CodeRateLimited},
		{"failures over queue", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeFailed, 2)
			admit(t, a, shotd.AdmitJobs, 0, false) // the queue is full
		}, func(a account) url.Values { return tiny(a, "async", "true") }, shotd.CodeFailureLimit},
		{"failures over quota", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeFailed, 2)
			render(t, a, shotd.OutcomeSucceeded, 2)
		},
			func(a account) url.Values { return tiny(a) }, shotd.CodeFailureLimit},
		{"queue over quota", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeSucceeded, 1)
			admit(t, a, shotd.AdmitJobs, 0, false) // holds the last of the quota and the only queue place
		}, func(a account) url.Values { return tiny(a, "async", "true") }, shotd.CodeQueueLimit},
		{"quota over concurrency", func(t *testing.T, a account) {
			render(t, a, shotd.OutcomeSucceeded, 1)
			admit(t, a, shotd.AdmitRender, 0, true) // holds the only slot and the last of the quota
		}, func(a account) url.Values { return tiny(a) }, shotd.CodeQuotaExceeded},
		{"concurrency alone", func(t *testing.T, a account) { admit(t, a, shotd.AdmitRender, 0, true) },
			func(a account) url.Values { return tiny(a) }, shotd.CodeConcurrencyLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAccount(t, "lim_prec", true)
			if c.setup != nil {
				c.setup(t, a)
			}
			r := get(t, "/api/v1/screenshot", c.q(a))
			wantError(t, r, shotd.Info(c.code).Status, c.code)
		})
	}
}
