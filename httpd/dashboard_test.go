package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/devtool"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/store"
)

// dashboardScript is what an operator does in the dashboard, run in the page: log in, create an
// account and a key, render in the playground, then read the chart, the recent renders and the
// links the playground built. Each step waits for what the page shows, up to a bound.
const dashboardScript = `(async () => {
  const $ = (id) => document.getElementById(id);
  const until = async (what, ok) => {
    for (let i = 0; i < 600; i++) { if (ok()) return; await new Promise((r) => setTimeout(r, 50)); }
    throw new Error("timed out waiting for " + what + "; the page says: " + $("msg").textContent);
  };
  $("token").value = TOKEN; $("connect").click();
  await until("login", () => !$("app").hidden);
  $("email").value = "dash@example.test"; $("create-account").click();
  await until("the account", () => !$("account").hidden);
  $("key-name").value = "playground"; $("create-key").click();
  await until("the key", () => !$("secret").hidden && $("pg-key").value !== "");
  $("pg-html").value = "<h1 style='font-size:80px'>Hello from the playground</h1>";
  $("pg-width").value = "640"; $("pg-height").value = "400";
  $("pg-render").click();
  await until("the render", () => $("pg-status").textContent === "rendered" || $("pg-status").textContent.startsWith("the render failed"));
  // Usage is written just after the answer: load the chart until it shows it.
  await until("the chart", () => { loadChart(); return $("chart").dataset.succeeded === "1"; });
  await loadRenders();
  return JSON.stringify({
    status: $("pg-status").textContent, width: $("pg-result").naturalWidth, height: $("pg-result").naturalHeight,
    curl: $("pg-curl").textContent, signed: $("pg-signed").textContent,
    succeeded: $("chart").dataset.succeeded, bars: $("chart").querySelectorAll("rect").length,
    renders: [...$("renders").rows].map((r) => r.cells[2].textContent),
  });
})()`

// TestDashboardInChromium drives the dashboard in real headless Chromium against a service of its
// own: the page logs in, creates a key, renders in the playground and reads the chart. The signed
// link the playground made must then work on its own.
func TestDashboardInChromium(t *testing.T) {
	sk := newStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := launchBrowser(ctx, t)
	// The script clicks buttons whose handlers the page's own script sets at its end: run it only
	// once the page has loaded.
	loadPage(ctx, t, c, sk.admBase+"/dashboard")
	tokenJSON, _ := json.Marshal(adminToken)
	script := strings.Replace(dashboardScript, "TOKEN", string(tokenJSON), 1)
	res, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(script).SetAwaitPromise(true).SetReturnByValue(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("dashboard script: %v", res.ExceptionDetails)
	}
	var text string
	if err := json.Unmarshal(res.Result.Value, &text); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status, Curl, Signed string
		Width, Height        int
		Succeeded            string
		Bars                 int
		Renders              []string
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	if got.Status != "rendered" || got.Width != 640 || got.Height != 400 {
		t.Errorf("playground: %q, image %dx%d; want rendered 640x400", got.Status, got.Width, got.Height)
	}
	if got.Succeeded != "1" || got.Bars != 1 {
		t.Errorf("chart: succeeded %q in %d bars; want 1 in 1", got.Succeeded, got.Bars)
	}
	if len(got.Renders) != 1 || !strings.HasPrefix(got.Renders[0], "succeeded") {
		t.Errorf("recent renders: %q", got.Renders)
	}
	if !strings.HasPrefix(got.Curl, `curl -o shot.png "`+sk.base+"/api/v1/screenshot?access_key=") {
		t.Errorf("curl command %q", got.Curl)
	}
	// The signed link is the page's own HMAC: the service must accept it.
	signed := regexp.MustCompile(`^http://\S+&signature=[0-9a-f]{64}$`).FindString(got.Signed)
	if signed == "" {
		t.Fatalf("signed link %q", got.Signed)
	}
	resp, err := http.Get(signed + "&viewport_width=700")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("the signed link with a parameter added: %d, want 403", resp.StatusCode)
	}
	resp, err = http.Get(signed)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("the signed link: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if path := os.Getenv("SHOTD_DASHBOARD_SCREENSHOT"); path != "" {
		writeDashboardScreenshot(t, sk, path)
	}
}

// writeDashboardScreenshot has shotd itself render the dashboard, after the test's traffic, for
// docs/operations.md (Dashboard): its scripts option logs in, opens the account and renders in the playground.
func writeDashboardScreenshot(t *testing.T, sk *stack, path string) {
	acc, err := sk.st.CreateAccount("readme@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sk.st.CreateKey(acc.ID, "readme", false)
	if err != nil {
		t.Fatal(err)
	}
	tokenJSON, _ := json.Marshal(adminToken)
	script := `const $ = (id) => document.getElementById(id);
const until = async (ok) => { for (let i = 0; i < 300 && !ok(); i++) await new Promise((r) => setTimeout(r, 50)); };
$("token").value = ` + string(tokenJSON) + `; $("connect").click();
await until(() => !$("app").hidden && [...$("accounts").rows].some((r) => r.textContent.includes("dash@")));
[...$("accounts").rows].find((r) => r.textContent.includes("dash@")).click();
await until(() => !$("account").hidden && $("chart").dataset.succeeded);
$("pg-html").value = "<h1 style='font:64px system-ui'>Hello from the playground</h1>";
$("pg-width").value = "640"; $("pg-height").value = "300";
$("pg-render").click();
await until(() => $("pg-status").textContent === "rendered");
await loadChart(); await loadRenders();`
	q := url.Values{"access_key": {key.AccessKey}, "url": {sk.admBase + "/dashboard"}, "scripts": {script},
		"full_page": {"true"}, "viewport_width": {"1100"}, "viewport_height": {"900"}, "timeout": {"60"}}
	resp, err := http.Get(sk.base + "/api/v1/screenshot?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("shotd rendering the dashboard: %d %s", resp.StatusCode, b)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// launchBrowser starts a headless Chromium of the test's own (the service's pool is not for
// driving pages) in its own process group and user-data dir, both gone when the test ends, and
// returns a CDP client of a new page.
func launchBrowser(ctx context.Context, t *testing.T) *cdp.Client {
	t.Helper()
	bin, err := cdpclient.FindBrowser("")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1", "--user-data-dir="+dir, "--window-size=1280,1800", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "DevTools listening on "); ok {
				found <- u
			}
		}
	}()
	var ws string
	select {
	case ws = <-found:
	case <-exited:
		t.Fatal("chromium exited before DevTools listened")
	case <-ctx.Done():
		t.Fatal("chromium: no DevTools address")
	}
	host := strings.TrimPrefix(strings.SplitN(ws, "/devtools/", 2)[0], "ws://")
	target, err := devtool.New("http://" + host).Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := rpcc.DialContext(ctx, target.WebSocketDebuggerURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := cdp.NewClient(conn)
	if err := c.Page.Enable(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDashboardPagesAccounts has the dashboard in real Chromium page through 150 accounts (more
// than one page of the admin API) with its Next button, and offers the configured plans.
func TestDashboardPagesAccounts(t *testing.T) {
	sk := newStack(t)
	want := map[string]bool{}
	for i := 0; i < 150; i++ {
		acc, err := sk.st.CreateAccount(fmt.Sprintf("dpage%d@example.test", i), "default", true)
		if err != nil {
			t.Fatal(err)
		}
		want[acc.ID] = true
	}
	tokenJSON, _ := json.Marshal(adminToken)
	script := `(async () => {
  const $ = (id) => document.getElementById(id);
  const until = async (what, ok) => {
    for (let i = 0; i < 600; i++) { if (ok()) return; await new Promise((r) => setTimeout(r, 50)); }
    throw new Error("timed out waiting for " + what + "; the page says: " + $("msg").textContent);
  };
  $("token").value = ` + string(tokenJSON) + `; $("connect").click();
  await until("login", () => !$("app").hidden && $("accounts").rows.length > 0);
  const ids = [], pages = [];
  for (;;) {
    pages.push($("accounts").rows.length);
    ids.push(...[...$("accounts").rows].map((r) => r.cells[0].textContent));
    if ($("acc-next").disabled) break;
    const first = $("accounts").rows[0].cells[0].textContent;
    $("acc-next").click();
    await until("the next page", () => $("accounts").rows.length > 0 && $("accounts").rows[0].cells[0].textContent !== first);
  }
  $("acc-prev").click();
  await until("the previous page", () => $("accounts").rows.length === 100);
  return JSON.stringify({ids, pages, back: $("accounts").rows[0].cells[0].textContent,
    plans: [...$("plan").options].map((o) => o.value)});
})()`
	var got struct {
		IDs   []string
		Pages []int
		Back  string
		Plans []string
	}
	runDashboard(t, sk, script, &got)
	seen := map[string]bool{}
	for _, id := range got.IDs {
		if seen[id] || !want[id] {
			t.Fatalf("account %s shown twice or unknown", id)
		}
		seen[id] = true
	}
	if len(seen) != 150 || len(got.Pages) != 2 || got.Back != got.IDs[0] {
		t.Fatalf("the dashboard showed %d accounts on pages %v, back to %s; want 150 on [100 50]", len(seen), got.Pages, got.Back)
	}
	if len(got.Plans) != len(env.plans) || !slices.Contains(got.Plans, "default") {
		t.Fatalf("plan choices %v", got.Plans)
	}
}

// runDashboard opens the dashboard of sk in a Chromium of the test's own, runs script (an async
// function's call that returns a JSON string) and decodes its answer into v.
func runDashboard(t *testing.T, sk *stack, script string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := launchBrowser(ctx, t)
	loadPage(ctx, t, c, sk.admBase+"/dashboard")
	res, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(script).SetAwaitPromise(true).SetReturnByValue(true))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("dashboard script: %v", res.ExceptionDetails.Exception.Description)
	}
	var text string
	if err := json.Unmarshal(res.Result.Value, &text); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
}

// TestDashboardOverviewAndJobs has the dashboard in real Chromium show the service overview (the
// pressure and a recent error), an account's jobs, and delete the account.
func TestDashboardOverviewAndJobs(t *testing.T) {
	sk := newStack(t)
	acc, err := sk.st.CreateAccount("jobs-dash@example.test", "default", true)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sk.st.CreateKey(acc.ID, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []shotd.Job{{JobID: store.NewJobID(), AccountID: acc.ID, AccessKey: key.AccessKey, Options: json.RawMessage(`{}`)}}
	if err := sk.st.CreateJobs(jobs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sk.st.UpdateJob(jobs[0].JobID, func(j *shotd.Job) error {
		j.Status, j.ErrorCode = shotd.JobFailed, string(shotd.CodeTimeout)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A refused render, for the recent errors.
	if r := do(t, "GET", sk.base+"/api/v1/screenshot?access_key="+key.AccessKey, nil, nil); r.status != 400 {
		t.Fatalf("screenshot without a source: %d", r.status)
	}
	tokenJSON, _ := json.Marshal(adminToken)
	idJSON, _ := json.Marshal(acc.ID)
	script := `(async () => {
  const $ = (id) => document.getElementById(id);
  const until = async (what, ok) => {
    for (let i = 0; i < 600; i++) { if (ok()) return; await new Promise((r) => setTimeout(r, 50)); }
    throw new Error("timed out waiting for " + what + "; the page says: " + $("msg").textContent);
  };
  window.confirm = () => true;
  $("token").value = ` + string(tokenJSON) + `; $("connect").click();
  await until("the overview", () => !$("app").hidden && $("ov-capacity") && $("errors").rows.length > 0);
  const overview = {state: $("ov-state").textContent, capacity: $("ov-capacity").textContent, browsers: $("ov-browsers").textContent,
    error: $("errors").rows[0].cells[3].textContent};
  const row = [...$("accounts").rows].find((r) => r.cells[0].textContent === ` + string(idJSON) + `);
  row.click();
  await until("the jobs", () => !$("account").hidden && $("jobs").rows.length > 0);
  const job = [...$("jobs").rows[0].cells].map((c) => c.textContent);
  $("delete-account").click();
  await until("the delete", () => $("account").hidden && ![...$("accounts").rows].some((r) => r.cells[0].textContent === ` + string(idJSON) + `));
  return JSON.stringify({overview, job});
})()`
	var got struct {
		Overview struct{ State, Capacity, Browsers, Error string }
		Job      []string
	}
	runDashboard(t, sk, script, &got)
	if got.Overview.State != "Takes more work" || !strings.Contains(got.Overview.Capacity, "slots") || !strings.HasSuffix(got.Overview.Browsers, "of 1") ||
		got.Overview.Error != "invalid_options" {
		t.Errorf("overview %+v", got.Overview)
	}
	if len(got.Job) < 6 || got.Job[0] != jobs[0].JobID || got.Job[1] != "failed" || got.Job[5] != "timeout" {
		t.Errorf("job row %q", got.Job)
	}
	if _, err := sk.st.Account(acc.ID); !errors.Is(err, shotd.ErrNotFound) {
		t.Errorf("the account is still there after the delete: %v", err)
	}
}
