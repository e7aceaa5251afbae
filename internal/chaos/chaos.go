package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shotd/shotd/internal/testkit"
)

// Options shape a chaos run.
type Options struct {
	Bin     string        // shotd binary; "" builds one into the run's directory
	Clients int           // concurrent sync clients
	Settle  time.Duration // traffic between two faults
	Stop    time.Duration // how long a browser stays stopped (SIGSTOP)
	Out     io.Writer     // progress; nil for none
}

// Fault is one injected fault and what followed.
type Fault struct {
	Name     string
	Target   string        // what was signalled
	Skipped  string        // why nothing was signalled
	Recovery time.Duration // from the fault to a full pool rendering again
	Counted  int           // renders counted as the account's failures from the fault to the recovery
}

// Report is what a chaos run found. Problems lists every broken correctness rule.
type Report struct {
	Statuses             map[string]int
	Renders, Checked     int // 200 answers, and those whose file was right
	Jobs, JobsSucceeded  int
	Webhooks             int // jobs with a valid delivery
	Billed, Successes    int // quota.used delta and renders that succeeded
	Unknown              int // renders that got no answer (transport errors): billed or not
	Faults               []Fault
	MaxZombies           int
	LeftProcs, LeftFiles int
	Problems             []string
}

func (r *Report) problem(format string, a ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "answers by status:\n")
	for _, k := range slices.Sorted(maps.Keys(r.Statuses)) {
		fmt.Fprintf(w, "  %-34s %d\n", k, r.Statuses[k])
	}
	fmt.Fprintf(w, "200s checked (format and size): %d of %d\n", r.Checked, r.Renders)
	fmt.Fprintf(w, "jobs: %d, succeeded %d; with a valid webhook: %d\n", r.Jobs, r.JobsSucceeded, r.Webhooks)
	fmt.Fprintf(w, "billed (quota.used delta): %d, successes seen: %d, no answer: %d\n", r.Billed, r.Successes, r.Unknown)
	for _, f := range r.Faults {
		if f.Skipped != "" {
			fmt.Fprintf(w, "fault %-20s skipped: %s\n", f.Name, f.Skipped)
			continue
		}
		fmt.Fprintf(w, "fault %-20s recovered in %5.1fs, %d failures counted  (%s)\n", f.Name, f.Recovery.Seconds(), f.Counted, f.Target)
	}
	fmt.Fprintf(w, "zombies seen (max): %d; left at the end: %d processes, %d temp dirs\n", r.MaxZombies, r.LeftProcs, r.LeftFiles)
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "PASS: every correctness figure holds")
		return
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}

type run struct {
	opt    Options
	root   *Root
	bin    string
	svc    *Service
	fx     *testkit.Pages
	rc     *testkit.Receiver
	cl     *Client
	rep    *Report
	mu     sync.Mutex
	jobs   []string
	pool   int
	logf   func(string, ...any)
	hc     *http.Client
	counts map[string]int
}

const chaosConfig = `
[browser]
pool_size = 2

[webhooks]
retry_delays_seconds = [1, 2, 2, 2, 2, 2, 2, 2, 2, 2]
timeout_seconds = 5

[plans.default]
monthly_quota = 10000000
requests_per_minute = 1000000
status_requests_per_minute = 1000000
concurrency = 32 # above the clients: the recovery probe must never wait for a slot
queue_limit = 10000
failures_per_minute = 1000000
`

// Run starts the service and runs the faults in turn while the clients render. The error is
// for a run that could not be made at all; broken rules are in Report.Problems.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	r := &run{opt: opt, rep: &Report{Statuses: map[string]int{}}, pool: 2, hc: &http.Client{Timeout: 90 * time.Second}}
	r.logf = func(f string, a ...any) { fmt.Fprintf(opt.Out, "chaos: "+f+"\n", a...) }
	var err error
	if r.root, err = NewRoot(chaosConfig); err != nil {
		return nil, err
	}
	defer r.root.Remove()
	if r.bin = opt.Bin; r.bin == "" {
		if r.bin, err = Build(ctx, r.root.Dir); err != nil {
			return nil, err
		}
	}
	r.fx = testkit.NewPages(2 * time.Second)
	defer r.fx.Close()
	if r.svc, err = Start(ctx, r.bin, r.root); err != nil {
		return nil, err
	}
	defer func() {
		if r.svc != nil {
			r.svc.Kill()
		}
	}()
	key, secret := r.svc.Keys()
	if key == "" {
		return nil, fmt.Errorf("the first start printed no key pair:\n%s", r.svc.Tail())
	}
	r.rc = testkit.NewReceiver()
	r.rc.Verify(secret)
	defer r.rc.Close()
	r.cl = &Client{Base: r.svc.Base, Key: key, HTTP: r.hc}
	before, err := r.cl.Usage(ctx)
	if err != nil {
		return nil, err
	}

	// The clients render until the faults are done.
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range opt.Clients {
		wg.Add(1)
		go func() { defer wg.Done(); r.client(trafficCtx, i) }()
	}
	r.sleep(ctx, opt.Settle)
	r.chromeFault(ctx, "renderer", KindRenderer, syscall.SIGKILL, false)
	r.chromeFault(ctx, "gpu process", KindGPU, syscall.SIGKILL, false)
	r.chromeFault(ctx, "browser", KindBrowser, syscall.SIGKILL, false)
	r.chromeFault(ctx, "browser stopped", KindBrowser, syscall.SIGSTOP, false)
	r.chromeFault(ctx, "all browsers stopped", KindBrowser, syscall.SIGSTOP, true)
	r.killService(ctx)
	stopTraffic()
	wg.Wait()

	r.checkJobs(ctx)
	r.rep.MaxZombies = max(r.rep.MaxZombies, r.svc.Zombies(2*time.Second))
	if after, err := r.cl.Usage(ctx); err != nil {
		r.rep.problem("usage after: %v", err)
	} else {
		r.rep.Billed = after.Quota.Used - before.Quota.Used
		r.rep.Successes = r.rep.Renders + r.rep.JobsSucceeded
		// Nothing that failed is billed: at most the successes seen, and the requests that got
		// no answer at all.
		if r.rep.Billed > r.rep.Successes+r.rep.Unknown {
			r.rep.problem("billed %d renders, %d succeeded and %d got no answer", r.rep.Billed, r.rep.Successes, r.rep.Unknown)
		}
	}
	if err := r.svc.Stop(40 * time.Second); err != nil {
		r.rep.problem("%v", err)
	}
	r.svc = nil
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		procs, dirs := r.root.Leftovers()
		r.rep.LeftProcs, r.rep.LeftFiles = len(procs), len(dirs)
		if len(procs)+len(dirs) == 0 || time.Now().After(end) {
			if len(procs)+len(dirs) > 0 {
				r.rep.problem("left at the end: processes %v, dirs %v", procs, dirs)
			}
			break
		}
	}
	if r.rep.MaxZombies > 0 {
		r.rep.problem("%d zombie processes below the service", r.rep.MaxZombies)
	}
	if r.rep.Checked != r.rep.Renders {
		r.rep.problem("%d of %d 200 answers had a wrong file", r.rep.Renders-r.rep.Checked, r.rep.Renders)
	}
	return r.rep, nil
}

var shots = []Shot{
	{Format: "png", Width: 640, Height: 400},
	{Format: "jpeg", Width: 800, Height: 600},
	{Format: "webp", Width: 500, Height: 300},
	{Format: "pdf", Width: 1024, Height: 768},
	{Format: "png", Width: 400, Height: 300, FullPage: true},
}

func (r *run) client(ctx context.Context, i int) {
	for n := 0; ctx.Err() == nil; n++ {
		s := shots[(i+n)%len(shots)]
		s.URL = r.fx.URL(fmt.Sprintf("/page?n=c%d-%d", i, n))
		if n%8 == 7 { // now and then a job with a webhook, so that jobs live through every fault
			if id, err := r.cl.Submit(ctx, s, r.rc.URL()); err == nil {
				r.addJob(id)
			}
			continue
		}
		r.record(r.cl.Render(ctx, s), ctx)
		if ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (r *run) record(o Outcome, ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !o.OK && o.Label == "transport error" {
		// No answer: the service may have rendered and billed it all the same (the client
		// gave up, or shotd was killed before it wrote the answer).
		r.rep.Unknown++
		if ctx.Err() != nil {
			return // cut by the end of the run, not by the service
		}
	}
	r.rep.Statuses[o.Label]++
	if o.OK {
		r.rep.Renders++
		if o.Bad == "" {
			r.rep.Checked++
		}
	}
	if o.Bad != "" && len(r.rep.Problems) < 50 {
		r.rep.problem("%s", o.Bad)
	}
}

func (r *run) addJob(id string) {
	r.mu.Lock()
	r.jobs = append(r.jobs, id)
	r.mu.Unlock()
}

func (r *run) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// chromeFault signals one Chrome process of kind, or all of them, and measures the recovery.
// When all browsers are stopped nothing continues them: the service must replace them itself,
// and no render in between may count as the account's failure.
func (r *run) chromeFault(ctx context.Context, name, kind string, sig syscall.Signal, all bool) {
	f := Fault{Name: name}
	var targets []Proc
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ps := r.svc.Chrome(kind)
		if kind == KindBrowser && len(ps) != r.pool {
			// A recycle runs the replacement beside the Chrome it replaces, which then only
			// finishes its renders: a moment with one browser process per pool place is one
			// where each of them serves.
			continue
		}
		if !all && len(ps) > 0 {
			targets = ps[:1]
			break
		}
		if all && len(ps) >= r.pool {
			targets = ps
			break
		}
	}
	if len(targets) == 0 {
		f.Skipped = "no " + kind + " process below the service"
		r.logf("%s: %s", name, f.Skipped)
		r.rep.Faults = append(r.rep.Faults, f)
		return
	}
	var pids []string
	for _, t := range targets {
		pids = append(pids, strconv.Itoa(t.PID))
	}
	f.Target = fmt.Sprintf("%s pid %s, %v", kind, strings.Join(pids, " "), sig)
	r.logf("%s: %s", name, f.Target)
	before, _ := r.cl.Usage(ctx)
	at := time.Now()
	signalled := 0
	for _, t := range targets {
		if Same(t) && syscall.Kill(t.PID, sig) == nil {
			signalled++
			continue
		}
		if !all {
			f.Skipped = fmt.Sprintf("pid %d ended before the signal", t.PID)
			r.rep.Faults = append(r.rep.Faults, f)
			return
		}
		// A recycle closes the Chrome it replaced once that one's renders are done: it may end
		// between the listing and the signal. The others are stopped all the same.
		r.logf("%s: pid %d ended before the signal", name, t.PID)
	}
	if signalled == 0 {
		f.Skipped = "every process ended before the signal"
		r.rep.Faults = append(r.rep.Faults, f)
		return
	}
	if sig == syscall.SIGSTOP && !all {
		// Continue it after opt.Stop unless the service replaced it by then; SIGCONT goes only
		// to the very process that was stopped.
		t := targets[0]
		time.AfterFunc(r.opt.Stop, func() {
			if Same(t) {
				_ = syscall.Kill(t.PID, syscall.SIGCONT)
			}
		})
	}
	f.Recovery = r.recover(ctx, at, func() bool {
		return kind == KindRenderer || kind == KindGPU || !slices.ContainsFunc(targets, Same)
	})
	if after, err := r.cl.Usage(ctx); err == nil {
		f.Counted = after.Renders.Failed - before.Renders.Failed
	}
	if all && f.Counted != 0 {
		r.rep.problem("%s: %d renders counted as the account's failures", name, f.Counted)
	}
	r.logf("%s: recovered in %.1fs", name, f.Recovery.Seconds())
	r.rep.Faults = append(r.rep.Faults, f)
	r.sleep(ctx, r.opt.Settle)
}

// recover waits until gone holds (the faulted process is out of the pool), the pool is full
// again and a render succeeds; it returns the time since at.
func (r *run) recover(ctx context.Context, at time.Time, gone func() bool) time.Duration {
	for end := at.Add(3 * time.Minute); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(250 * time.Millisecond) {
		if !gone() {
			continue
		}
		up, err := Metric(ctx, r.hc, r.svc.Admin, "shotd_browsers_up")
		if err != nil || int(up) < r.pool {
			continue
		}
		s := shots[0]
		s.URL = r.fx.URL("/page?n=probe")
		o := r.cl.Render(ctx, s)
		r.record(o, ctx)
		if o.OK {
			return time.Since(at)
		}
	}
	r.rep.problem("no recovery within 3 minutes of %v", at.Format(time.TimeOnly))
	return time.Since(at)
}

// killService kills shotd with jobs queued and rendering, and starts it again.
func (r *run) killService(ctx context.Context) {
	f := Fault{Name: "shotd kill -9"}
	var ids []string
	for i := range 12 {
		s := shots[i%len(shots)]
		s.URL = r.fx.URL(fmt.Sprintf("/slow?n=k%d", i))
		if id, err := r.cl.Submit(ctx, s, r.rc.URL()); err == nil {
			ids = append(ids, id)
			r.addJob(id)
		}
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		states := map[string]int{}
		for _, id := range ids {
			if j, err := r.cl.Job(ctx, id); err == nil {
				states[j.Status]++
			}
		}
		if states["rendering"] > 0 && states["queued"] > 0 {
			f.Target = fmt.Sprintf("pid %d, jobs %d rendering, %d queued", r.svc.PID(), states["rendering"], states["queued"])
			break
		}
	}
	if f.Target == "" {
		f.Target = fmt.Sprintf("pid %d, no moment with jobs both rendering and queued", r.svc.PID())
	}
	r.logf("shotd kill -9: %s", f.Target)
	at := time.Now()
	r.svc.Kill9()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if procs, _ := r.root.Leftovers(); len(procs) == 0 {
			break
		}
	}
	svc, err := Start(ctx, r.bin, r.root)
	if err != nil {
		r.rep.problem("restart: %v", err)
		r.svc = nil
		return
	}
	r.svc = svc
	f.Recovery = r.recover(ctx, at, func() bool { return true })
	r.logf("shotd kill -9: recovered in %.1fs", f.Recovery.Seconds())
	r.rep.Faults = append(r.rep.Faults, f)
	r.sleep(ctx, r.opt.Settle)
}

// checkJobs waits for every job to end and its webhook to be delivered, and checks both.
func (r *run) checkJobs(ctx context.Context) {
	r.rep.Jobs = len(r.jobs)
	final := map[string]Job{}
	for end := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		pending := 0
		delivered := r.rc.Acknowledged()
		for _, id := range r.jobs {
			if j, ok := final[id]; ok && delivered[id] > 0 && j.Webhook != nil && j.Webhook.Status != "pending" {
				continue
			}
			j, err := r.cl.Job(ctx, id)
			if err != nil {
				pending++
				continue
			}
			final[id] = j
			if (j.Status != "succeeded" && j.Status != "failed") || delivered[id] == 0 || j.Webhook == nil || j.Webhook.Status == "pending" {
				pending++
			}
		}
		if pending == 0 || time.Now().After(end) || ctx.Err() != nil {
			break
		}
	}
	var notDone []string
	delivered := r.rc.Acknowledged()
	for _, id := range r.jobs {
		j := final[id]
		switch {
		case j.Status == "succeeded":
			r.rep.JobsSucceeded++
		case j.Status == "failed" && documented0(j.ErrorCode):
		default:
			notDone = append(notDone, fmt.Sprintf("%s %s %q", id, j.Status, j.ErrorCode))
		}
		if delivered[id] > 0 {
			r.rep.Webhooks++
		}
	}
	sort.Strings(notDone)
	if len(notDone) > 0 {
		r.rep.problem("jobs not ended with a documented code: %s", strings.Join(notDone, ", "))
	}
	if r.rep.Webhooks != r.rep.Jobs {
		r.rep.problem("%d of %d jobs have no valid webhook delivery", r.rep.Jobs-r.rep.Webhooks, r.rep.Jobs)
	}
	if bad := r.rc.Invalid(); len(bad) > 0 {
		r.rep.problem("invalid webhook deliveries: %v", bad)
	}
}

func documented0(code string) bool {
	for _, c := range catalogueCodes() {
		if c == code {
			return true
		}
	}
	return false
}
