package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/chaos"
	"github.com/shotd/shotd/internal/testkit"
)

// TestRecoveryAfterKill runs the real binary, kills it with SIGKILL while jobs are queued and
// rendering and while webhook deliveries are pending, starts it again on the same data_dir and
// checks that every job ends and every delivery arrives (at least once, validly signed). It also
// checks that the Chrome of the killed service dies with it (Pdeathsig).
func TestRecoveryAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Chrome")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := newRunRoot(ctx, t, "shotd-rt-")
	root, tmpDir, dataDir, bin := run.root, run.tmpDir, run.dataDir, run.bin

	fx := testkit.StartPages(t, 2*time.Second)
	rc := testkit.StartReceiver(t)

	cfgPath := filepath.Join(root, "shotd.toml")
	cfg := fmt.Sprintf(`listen = "127.0.0.1:0"
admin_listen = "127.0.0.1:0"
data_dir = %q
public_url = "http://127.0.0.1:1"
shutdown_timeout_seconds = 20

[browser]
pool_size = 1
prewarm = 1
renders_per_process = 4

[network]
allow_private = ["127.0.0.1/32"]

[webhooks]
# 20 s of retries: deliveries stay pending across the kill and the restart.
retry_delays_seconds = [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
timeout_seconds = 5

[log]
format = "json"
level = "info"

[plans.default]
concurrency = 2
status_requests_per_minute = 100000
`, dataDir)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	first := startService(ctx, t, bin, cfgPath, tmpDir, "first")
	if first.accessKey == "" || first.secretKey == "" {
		t.Fatalf("first start printed no key pair:\n%s", first.stdout())
	}
	key, secret := first.accessKey, first.secretKey
	rc.Verify(secret)
	cl := &client{t: t, ctx: ctx, key: key}

	// Phase 1: two quick jobs end while the receiver refuses every delivery, so that their
	// deliveries are pending when the service is killed.
	rc.Fail(-1)
	var ids []string
	for i := range 2 {
		ids = append(ids, cl.async(first.base, map[string]any{"url": fx.URL("/fast?n=" + strconv.Itoa(i)), "webhook_url": rc.URL()}))
	}
	quick := slices.Clone(ids)
	cl.waitAll(first.base, quick, 60*time.Second, func(j chaos.Job) bool {
		return j.Status == "succeeded" && j.Webhook != nil && j.Webhook.Status == "pending" && j.Webhook.Attempts >= 1
	})

	// Phase 2: seven slow jobs (four async, a bulk of three) for two slots.
	for i := range 4 {
		ids = append(ids, cl.async(first.base, map[string]any{"url": fx.URL("/slow?n=" + strconv.Itoa(i)), "webhook_url": rc.URL()}))
	}
	batchID, batchJobs := cl.bulk(first.base, map[string]any{
		"defaults": map[string]any{"webhook_url": rc.URL()},
		"requests": []any{
			map[string]any{"url": fx.URL("/slow?n=b0")}, map[string]any{"url": fx.URL("/slow?n=b1")}, map[string]any{"url": fx.URL("/slow?n=b2")},
		},
	})
	ids = append(ids, batchJobs...)
	slow := ids[len(quick):]

	// Wait until some render is under way in Chrome and some job waits for a slot.
	var rendering []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		rendering = rendering[:0]
		queued := 0
		for _, id := range slow {
			switch cl.job(first.base, id).Status {
			case "rendering":
				rendering = append(rendering, id)
			case "queued":
				queued++
			}
		}
		if len(rendering) > 0 && queued > 0 && fx.Slow() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no moment with jobs rendering and queued: %d rendering, %d queued, %d page requests in flight",
				len(rendering), queued, fx.Slow())
		}
		time.Sleep(100 * time.Millisecond)
	}
	servedBefore := map[string]int{}
	for _, id := range rendering {
		servedBefore[id] = fx.Loads(cl.page(id))
	}

	var chrome []string
	for _, cmd := range processesOf(root) {
		if strings.Contains(cmd, "chrom") { // a Chrome binary (the line is cut short)
			chrome = append(chrome, cmd)
		}
	}
	if len(chrome) == 0 {
		t.Fatalf("no Chrome process of this run found (marker %s): the leak check below could not fail", root)
	}
	t.Logf("killing the service: %d jobs rendering, %d Chrome processes", len(rendering), len(chrome))
	first.kill9()
	// Chrome has Pdeathsig SIGKILL: every process of the killed run must be gone shortly.
	waitNoProcesses(t, root, 10*time.Second, "after SIGKILL of the service")
	// What a killed run leaves in TMPDIR (its Chrome profile and temp dirs) stays; the run that
	// stops gracefully below must leave nothing of its own.
	leftByKill := dirNames(t, tmpDir)

	// Phase 3: the receiver accepts from now on; the service starts again on the same data_dir.
	rc.Fail(0)
	second := startService(ctx, t, bin, cfgPath, tmpDir, "second")
	if second.accessKey != "" {
		t.Fatal("the second start created a key again")
	}

	jobs := cl.waitAll(second.base, ids, 120*time.Second, func(j chaos.Job) bool {
		return (j.Status == "succeeded" || j.Status == "failed") && j.Webhook != nil && j.Webhook.Status != "pending"
	})
	for _, id := range ids {
		j := jobs[id]
		if j.Status != "succeeded" || j.Webhook.Status != "delivered" {
			t.Errorf("job %s: %s (%s), webhook %s after %d attempts", id, j.Status, j.ErrorCode, j.Webhook.Status, j.Webhook.Attempts)
		}
	}
	for _, id := range quick {
		t.Logf("quick job %s: webhook delivered at attempt %d", id, jobs[id].Webhook.Attempts)
		if a := jobs[id].Webhook.Attempts; a < 2 {
			t.Errorf("job %s: webhook delivered after %d attempts; the refused ones before the kill are not counted", id, a)
		}
	}
	// The jobs cut short while rendering were rendered again.
	for _, id := range rendering {
		if n := fx.Loads(cl.page(id)); n <= servedBefore[id] {
			t.Errorf("job %s was rendering at the kill, but its page was not loaded again (%d loads)", id, n)
		}
	}
	if b := cl.batch(second.base, batchID); b.Status != "done" || b.Counts.Succeeded != 3 {
		t.Errorf("batch %s %+v", b.Status, b.Counts)
	}
	// Every job's webhook reached the receiver with a valid signature and the right event.
	ok := map[string]bool{}
	for _, d := range rc.Deliveries() {
		ok[d.JobID] = ok[d.JobID] || d.Acknowledged() && d.Event == "job.succeeded"
	}
	for _, id := range ids {
		if !ok[id] {
			t.Errorf("no valid delivery of job.succeeded for %s", id)
		}
	}
	for _, bad := range rc.Invalid() {
		t.Errorf("invalid delivery: %s", bad)
	}
	// The account's counts survived: nine renders billed once each, nothing waiting or held.
	var u struct {
		Quota struct {
			Used int `json:"used"`
		} `json:"quota"`
		Renders struct {
			Succeeded int `json:"succeeded"`
		} `json:"renders"`
		Jobs struct {
			Waiting int `json:"waiting"`
			Running int `json:"running"`
		} `json:"jobs"`
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cl.getJSON(second.base+"/api/v1/usage", &u)
		if u.Renders.Succeeded == len(ids) && u.Quota.Used == len(ids) && u.Jobs.Waiting == 0 && u.Jobs.Running == 0 {
			break
		}
		if time.Now().After(end) {
			t.Errorf("usage after recovery %+v, want %d succeeded and billed, none waiting or running", u, len(ids))
			break
		}
	}

	// A graceful stop ends the service and its Chrome.
	second.stop(t, 40*time.Second)
	waitNoProcesses(t, root, 10*time.Second, "after the graceful stop")
	if left := dirNames(t, tmpDir); !slices.Equal(left, leftByKill) {
		t.Errorf("TMPDIR after the graceful stop holds %v; the killed run had left %v", left, leftByKill)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names // sorted by ReadDir
}

// credentialsLine is the first start's pointer to the file with the key pair.
var credentialsLine = regexp.MustCompile(`keys are in (\S+)`)

// httpClient bounds every request of the test.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// service is one run of `shotd serve`.
type service struct {
	name      string
	cmd       *exec.Cmd
	exited    chan struct{}
	base      string
	admin     string // admin listener, host:port
	accessKey string
	secretKey string

	mu     sync.Mutex
	out    bytes.Buffer // stdout
	log    bytes.Buffer // stderr, JSON lines
	listen chan [2]string
}

func startService(ctx context.Context, t *testing.T, bin, cfgPath, tmpDir, name string) *service {
	t.Helper()
	return startServiceCmd(ctx, t, exec.Command(bin, "serve", "--config", cfgPath), tmpDir, name)
}

// startServiceCmd starts cmd, a `shotd serve` command line, with the test's environment less
// SHOTD_* and TMPDIR, plus cmd.Env, and waits until it is ready.
func startServiceCmd(ctx context.Context, t *testing.T, cmd *exec.Cmd, tmpDir, name string) *service {
	t.Helper()
	s := &service{name: name, exited: make(chan struct{}), listen: make(chan [2]string, 1)}
	// Chrome as the service's user: the run's processes are found by this TMPDIR, private to
	// the test (0700), which a user of Chrome's own could not reach (browser.user "auto", root).
	env := []string{"TMPDIR=" + tmpDir, "SHOTD_BROWSER_USER=self"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SHOTD_") && !strings.HasPrefix(e, "TMPDIR=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, cmd.Env...)
	cmd.Stdout = writerFunc(func(p []byte) { s.mu.Lock(); s.out.Write(p); s.mu.Unlock() })
	cmd.Stderr = &lineWriter{line: s.logLine}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // own group: the cleanup kills it whole
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s run, end of its log:\n%s", name, s.logTail())
		}
		select {
		case <-s.exited:
			return
		default:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s run (pid %d) did not exit after SIGKILL", name, cmd.Process.Pid)
		}
		killLeftovers(t, filepath.Dir(tmpDir)) // the run root
	})

	var addrs [2]string
	select {
	case addrs = <-s.listen:
	case <-s.exited:
		t.Fatalf("%s run exited before serving:\n%s", name, s.logTail())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s run: no \"shotd serving\" line in 60 s:\n%s", name, s.logTail())
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	s.base, s.admin = "http://"+addrs[0], addrs[1]
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := httpClient.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("%s run not ready in 60 s:\n%s", name, s.logTail())
		}
	}
	// The first start names the file that holds the key; stdout, not being a terminal, does not
	// show the secret itself.
	s.mu.Lock()
	text := s.out.String()
	if m := credentialsLine.FindStringSubmatch(text); m != nil {
		b, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "access key:"); ok {
			s.accessKey = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "secret key:"); ok {
			s.secretKey = strings.TrimSpace(v)
		}
	}
	s.mu.Unlock()
	return s
}

func (s *service) logLine(line []byte) {
	var m struct {
		Message     string `json:"message"`
		Status      int    `json:"status"`
		Listen      string `json:"listen"`
		AdminListen string `json:"admin_listen"`
	}
	parsed := json.Unmarshal(line, &m) == nil
	if !parsed || m.Message != "request" || m.Status >= 400 { // the test's polling would drown the rest
		s.mu.Lock()
		s.log.Write(line)
		s.log.WriteByte('\n')
		s.mu.Unlock()
	}
	if parsed && m.Message == "shotd serving" {
		select {
		case s.listen <- [2]string{m.Listen, m.AdminListen}:
		default:
		}
	}
}

func (s *service) stdout() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *service) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.log.Bytes()
	if len(b) > 16<<10 {
		b = b[len(b)-16<<10:]
	}
	return string(b)
}

// kill9 kills the service process alone, as an operator's kill -9 would, and waits for it.
func (s *service) kill9() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks for a graceful stop (SIGTERM) and waits for a clean exit.
func (s *service) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s run exited with %d after SIGTERM", s.name, code)
		}
	case <-time.After(timeout):
		t.Errorf("%s run did not stop within %v of SIGTERM", s.name, timeout)
	}
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// lineWriter hands complete lines to line.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(bytes.Clone(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// processesOf lists the processes of this run's service tree: those whose command line or
// environment names marker (the service's TMPDIR, under which every Chrome profile of the run
// lives). Only our own processes are readable; others are skipped.
func processesOf(marker string) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(cmdline, []byte(marker)) || bytes.Contains(environ, []byte("TMPDIR="+marker+"\x00")) {
			cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
			out[pid] = cmd[:min(len(cmd), 160)]
		}
	}
	return out
}

func waitNoProcesses(t *testing.T, marker string, timeout time.Duration, when string) {
	t.Helper()
	var left map[int]string
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if left = processesOf(marker); len(left) == 0 {
			return
		}
	}
	t.Errorf("%s, %d processes of the run remain:", when, len(left))
	for pid, cmd := range left {
		t.Errorf("  pid %d: %s", pid, cmd)
	}
	killLeftovers(t, marker)
}

// killLeftovers kills, by pid, the processes this run started that are still there: the marker
// (this test's private TMPDIR) makes them ours alone.
func killLeftovers(t *testing.T, marker string) {
	for pid := range processesOf(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if len(processesOf(marker)) == 0 {
			return
		}
	}
	t.Errorf("processes of the run survive SIGKILL: %v", processesOf(marker))
}

// page is the page a job renders, as the test submitted it.
func (c *client) page(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[id]
}

// client talks to the public API with one access key.
type client struct {
	t   *testing.T
	ctx context.Context
	key string

	mu   sync.Mutex
	urls map[string]string // job id -> page url
}

func (c *client) do(method, rawURL string, body []byte, v any) int {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-Access-Key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("%s %s: status %d, body not JSON (%d bytes)", method, rawURL, resp.StatusCode, len(b))
	}
	return resp.StatusCode
}

func (c *client) remember(id, page string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.urls == nil {
		c.urls = map[string]string{}
	}
	c.urls[id] = page
}

func (c *client) async(base string, opts map[string]any) string {
	c.t.Helper()
	opts["async"] = true
	b, _ := json.Marshal(opts)
	var r struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	if st := c.do(http.MethodPost, base+"/api/v1/screenshot", b, &r); st != http.StatusAccepted || r.JobID == "" || r.Status != "queued" {
		c.t.Fatalf("async: %d %+v", st, r)
	}
	c.remember(r.JobID, opts["url"].(string))
	return r.JobID
}

func (c *client) bulk(base string, body map[string]any) (string, []string) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	var r struct {
		BatchID string `json:"batch_id"`
		Jobs    []struct {
			Index int    `json:"index"`
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	items := body["requests"].([]any)
	if st := c.do(http.MethodPost, base+"/api/v1/bulk", b, &r); st != http.StatusAccepted || r.BatchID == "" || len(r.Jobs) != len(items) {
		c.t.Fatalf("bulk: %d %+v", st, r)
	}
	ids := make([]string, len(r.Jobs))
	for i, j := range r.Jobs {
		ids[i] = j.JobID
		c.remember(j.JobID, items[j.Index].(map[string]any)["url"].(string))
	}
	return r.BatchID, ids
}

func (c *client) getJSON(rawURL string, v any) {
	c.t.Helper()
	if st := c.do(http.MethodGet, rawURL, nil, v); st != http.StatusOK {
		c.t.Fatalf("GET %s: %d", rawURL, st)
	}
}

func (c *client) job(base, id string) chaos.Job {
	c.t.Helper()
	var j chaos.Job
	c.getJSON(base+"/api/v1/jobs/"+id, &j)
	return j
}

type batchRec struct {
	Status string `json:"status"`
	Counts struct {
		Queued, Rendering, Succeeded, Failed int
	} `json:"counts"`
}

func (c *client) batch(base, id string) batchRec {
	c.t.Helper()
	var b batchRec
	c.getJSON(base+"/api/v1/batches/"+id, &b)
	return b
}

// waitAll polls the jobs until done holds for each, and returns their last records.
func (c *client) waitAll(base string, ids []string, timeout time.Duration, done func(chaos.Job) bool) map[string]chaos.Job {
	c.t.Helper()
	out := map[string]chaos.Job{}
	for end := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		pending := 0
		for _, id := range ids {
			j := c.job(base, id)
			out[id] = j
			if !done(j) {
				pending++
			}
		}
		if pending == 0 {
			return out
		}
		if time.Now().After(end) || c.ctx.Err() != nil {
			for _, id := range ids {
				if j := out[id]; !done(j) {
					c.t.Errorf("job %s: %s %+v", id, j.Status, j.Webhook)
				}
			}
			c.t.Fatalf("%d of %d jobs not done after %v", pending, len(ids), timeout)
		}
	}
}
