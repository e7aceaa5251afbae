package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/devtool"
	cdppage "github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/mafredri/cdp/rpcc"
	"github.com/shotd/shotd/cdpclient"
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
	loaded, err := c.Page.LoadEventFired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	if _, err := c.Page.Navigate(ctx, cdppage.NewNavigateArgs(sk.admBase+"/dashboard")); err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.Recv(); err != nil {
		t.Fatal(err)
	}
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
