package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/chaos"
	"github.com/shotd/shotd/internal/freeport"
	"github.com/shotd/shotd/internal/s3test"
)

// load is one run's size.
type load struct {
	quota, concurrency int
	maxAttempts        int
	workers            int
	killAt             int // A's 200s and jobs accepted when the ledger's leader gets SIGKILL
	bulk               int // jobs of A's bulk, sent first
	jobEvery           int // every jobEvery-th request of A is an async job
	growAt             int // A's 200s and jobs accepted when a fourth node starts (0: none)
}

func (l load) String() string {
	return fmt.Sprintf("quota %d, concurrency %d, %d workers, at most %d attempts, kill at %d, bulk %d, one async in %d, fourth node at %d", l.quota, l.concurrency,
		l.workers, l.maxAttempts, l.killAt, l.bulk, l.jobEvery, l.growAt)
}

// TestClusterQuota starts three nodes, renders for account A round-robin over them (and for an
// account B with room to spare, beside) and kills with SIGKILL the node that leads the quota
// ledger: halfway through A's quota, or in the long runs at 30% of it past the bulk or five
// before it, by turns.
// A sends a bulk with webhooks first, then sync renders and every third an async job with a
// webhook: every job ends on every node's view, every webhook arrives signed, and A's successes
// (200s and succeeded jobs) never pass the quota and equal the usage every node reports.
func TestClusterQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three shotd processes with a Chrome each")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build shotd")
	}
	l := load{quota: 16, concurrency: 2, maxAttempts: 1000, workers: 5, killAt: 8, bulk: 4, jobEvery: 3}
	if os.Getenv("SHOTD_TEST_CLUSTER_LONG") != "" {
		// The load: a quota of 200 and a concurrency of 4; a bulk of 100 with webhooks,
		// then at most 600 sync renders and 300 async jobs (one in three); a node killed at
		// about 30% of the quota left after the bulk, or when 195 of 200 are taken; a fourth
		// node started at about 60%. Run n of make cluster-test (SHOTD_TEST_CLUSTER_RUN) takes
		// the first kill point when n is odd, the second when even, so that five runs cover both.
		l = load{quota: 200, concurrency: 4, maxAttempts: 900, workers: 10, bulk: 100, jobEvery: 3}
		l.killAt = l.bulk + (l.quota-l.bulk)*3/10
		l.growAt = l.bulk + (l.quota-l.bulk)*6/10
		if run, _ := strconv.Atoi(os.Getenv("SHOTD_TEST_CLUSTER_RUN")); run > 0 && run%2 == 0 {
			l.killAt = l.quota - 5
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// SHOTD_TEST_CLUSTER_BIN: a binary built already (make cluster-test builds one for its 5 runs).
	bin := os.Getenv("SHOTD_TEST_CLUSTER_BIN")
	if bin == "" {
		var err error
		if bin, err = chaos.Build(ctx, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	s3 := s3test.Start(t, "shots")
	page := newPage(t)

	// Three nodes, each with a free route port, all peers of each other. With growAt, a fourth
	// node's configuration is ready too: it names the three as its peers (they do not name it,
	// as when an operator adds a node to a running cluster) and starts during the load.
	const n = 3
	total := n
	if l.growAt > 0 {
		total = n + 1
	}
	routes := make([]string, total)
	for i := range routes {
		routes[i] = freePort(t)
	}
	roots := make([]*chaos.Root, total)
	for i := range roots {
		peers := `["` + strings.Join(routes[:max(n, i+1)], `", "`) + `"]`
		extra := fmt.Sprintf(`
[browser]
pool_size = 1
renders_per_process = 2

# The load's clients retry every concurrency_limit: refusals are not to throttle the key.
[limits]
refused_per_address_per_minute = 0
refused_per_key_per_minute = 0
bulk_max_items = 100

# Jobs' webhooks retry soon, so that a delivery to a node that died is made again in the run.
[webhooks]
retry_delays_seconds = [1, 2, 2, 2, 2, 2]
timeout_seconds = 5

[storage.s3]
endpoint = %q
bucket = "shots"
access_key_id = %q
secret_access_key = %q

[cluster]
node_name = "n%d"
listen = %q
peers = %s

[plans.big]
monthly_quota = 100000
requests_per_minute = 100000
concurrency = 8

[plans.small]
monthly_quota = %d
requests_per_minute = 100000
status_requests_per_minute = 100000
concurrency = %d
# Above the quota: the load measures the quota across the cluster; the queue limit, the
# cluster's too, would otherwise refuse the async jobs first while the bulk's wait.
queue_limit = 1000
failures_per_minute = 10000

[plans.rated]
monthly_quota = 100
requests_per_minute = 100000
status_requests_per_minute = %d
concurrency = 1
`, s3.Endpoint(), s3test.AccessKey, s3test.SecretKey, i+1, routes[i], peers, l.quota, l.concurrency, ratedAllowance)
		r, err := chaos.NewRoot(extra)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Remove)
		roots[i] = r
	}
	// They start together: each waits for a quorum before it serves.
	svcs := make([]*chaos.Service, total)
	errs := make([]error, n)
	var err error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svcs[i], errs[i] = chaos.Start(ctx, bin, roots[i])
		}()
	}
	wg.Wait()
	alive := make([]atomic.Bool, total)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
		alive[i].Store(true)
	}
	t.Cleanup(func() {
		for i, s := range svcs {
			if alive[i].Load() {
				if err := s.Stop(60 * time.Second); err != nil {
					t.Errorf("node %d: %v", i+1, err)
				}
			}
		}
	})

	// shotd cluster status, run beside node 2, sees the three members and a meta leader.
	// Right after the start a member's first heartbeat may not be in yet: ask again for a while.
	var statusOut []byte
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		cmd := exec.CommandContext(ctx, bin, "cluster", "status", "--config", roots[1].Config)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no SHOTD_ variable of the test's
		statusOut, err = cmd.CombinedOutput()
		missing := ""
		for _, want := range []string{"seen from n2", "jetstream meta leader: n", "  n1 ", "  n2 ", "  n3 ", "shotd_ledger"} {
			if !strings.Contains(string(statusOut), want) {
				missing = want
			}
		}
		if err == nil && missing == "" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("shotd cluster status: %v, lacks %q:\n%s", err, missing, statusOut)
		}
	}
	t.Logf("shotd cluster status:\n%s", statusOut)

	// Account A, made through node 1's admin API; its key works on every node.
	key, secret, accA := makeAccount(t, ctx, svcs[0].Admin, "small")
	clients := make([]*chaos.Client, total)
	for i, s := range svcs[:n] {
		clients[i] = &chaos.Client{Base: s.Base, Key: key, HTTP: &http.Client{Timeout: 60 * time.Second}}
	}
	waitKey(t, ctx, clients[:n])

	// An account of the plan "rated" gets its status allowance across the nodes.
	keyR, _, _ := makeAccount(t, ctx, svcs[2].Admin, "rated")
	checkStatusRateAcrossNodes(t, ctx, svcs[:n], keyR)

	// Account B renders a JSON result through node 1; nodes 2 and 3 serve its file.
	keyB, _, _ := makeAccount(t, ctx, svcs[1].Admin, "big")
	checkFilesEverywhere(t, ctx, svcs[:n], keyB, page.URL+"/b")
	clientsB := make([]*chaos.Client, total)
	for i, s := range svcs[:n] {
		clientsB[i] = &chaos.Client{Base: s.Base, Key: keyB, HTTP: &http.Client{Timeout: 60 * time.Second}}
	}
	okB0 := 1 // the JSON render

	// B renders beside A until A is done, round-robin too.
	var okB atomic.Int64
	// lostB counts B's renders answered by a transport error (as A's lost): one billed just
	// before the killed node died with its answer counts in B's usage without a 200.
	var lostB atomic.Int64
	served := make([]atomic.Int64, total) // 200s of A and B, by node
	doneA := make(chan struct{})
	var workB sync.WaitGroup
	for w := range 2 {
		workB.Add(1)
		go func() {
			defer workB.Done()
			for i := w; ; i += 2 {
				select {
				case <-doneA:
					return
				default:
				}
				node := i % total
				for !alive[node].Load() {
					node = (node + 1) % total
				}
				if out := clientsB[node].Render(ctx, chaos.Shot{Format: "png", Width: 320, Height: 240, URL: page.URL + "/b"}); out.OK {
					okB.Add(1)
					served[node].Add(1)
				} else {
					if out.Label == "transport error" {
						lostB.Add(1)
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		}()
	}

	// A's bulk, through node 2, before anything else: its jobs run while the node dies.
	rcv := newReceiver(t, secret)
	batchID, jobIDs, err := submitBulk(ctx, clients[1], page.URL+"/a", l.bulk, rcv.URL+"/job", rcv.URL+"/batch")
	if err != nil {
		t.Fatal(err)
	}
	var (
		next, oks, inflight, attempts atomic.Int64
		accepted                      atomic.Int64 // A's jobs answered 202
		// maybe counts A's requests that may hold a unit of quota without a success to show:
		// a job request whose answer was lost (queued, or not), and any request answered 503
		// while the cluster elects leaders after the kill (its reservation's write may have
		// landed with its answer lost: it holds until its lease ends, or the sweeper ends it).
		maybe atomic.Int64
		// lost counts A's sync renders answered by a transport error (the killed node served
		// them): each may have been billed before the node died with its answer.
		lost     atomic.Int64
		killedAt time.Time
		killed   atomic.Bool
		grown    atomic.Bool
		growing  sync.WaitGroup
		victim   atomic.Int64
		mu       sync.Mutex
		labels   = map[string]int{}
		early    []string // quota_exceeded that came too soon
	)
	accepted.Store(int64(l.bulk))
	start := time.Now()
	var work sync.WaitGroup
	for range l.workers {
		work.Add(1)
		go func() {
			defer work.Done()
			for ctx.Err() == nil && oks.Load()+accepted.Load() < int64(l.quota) {
				i := next.Add(1)
				if attempts.Add(1) > int64(l.maxAttempts) {
					return
				}
				if oks.Load()+accepted.Load() >= int64(l.killAt) && !killed.Swap(true) {
					v := ledgerLeader(t, ctx, bin, roots[:n])
					victim.Store(int64(v))
					svcs[v].Kill9() // the ledger's leader dies mid-render
					alive[v].Store(false)
					mu.Lock()
					killedAt = time.Now()
					mu.Unlock()
				}
				if l.growAt > 0 && oks.Load()+accepted.Load() >= int64(l.growAt) && !grown.Swap(true) {
					growing.Add(1)
					go func() { // the load goes on while the node starts
						defer growing.Done()
						s, err := chaos.Start(ctx, bin, roots[n])
						if err != nil {
							t.Errorf("node %d: %v", n+1, err)
							return
						}
						svcs[n] = s
						clients[n] = &chaos.Client{Base: s.Base, Key: key, HTTP: &http.Client{Timeout: 60 * time.Second}}
						clientsB[n] = &chaos.Client{Base: s.Base, Key: keyB, HTTP: &http.Client{Timeout: 60 * time.Second}}
						alive[n].Store(true) // after the writes above: the workers read them once they see it
					}()
				}
				node := int(i) % total
				for !alive[node].Load() {
					node = (node + 1) % total
				}
				shot := chaos.Shot{Format: "png", Width: 320, Height: 240, URL: page.URL + "/a?n=" + strconv.FormatInt(i, 10)}
				if i%int64(l.jobEvery) == 0 {
					id, err := clients[node].Submit(ctx, shot, rcv.URL+"/job")
					mu.Lock()
					switch {
					case err == nil:
						accepted.Add(1)
						jobIDs = append(jobIDs, id)
						labels["202 job"]++
					case strings.HasPrefix(err.Error(), "async render: status"):
						labels["job refused: "+err.Error()]++
						if strings.Contains(err.Error(), "status 503") {
							maybe.Add(1)
						}
					default:
						maybe.Add(1)
						labels["job: transport error"]++
					}
					mu.Unlock()
					if err != nil {
						time.Sleep(200 * time.Millisecond)
					}
					continue
				}
				inflight.Add(1)
				out := clients[node].Render(ctx, shot)
				if out.OK {
					oks.Add(1)
					served[node].Add(1)
				}
				mu.Lock()
				labels[out.Label]++
				if out.Label == "503 service_unavailable" {
					maybe.Add(1)
				}
				if out.Label == "transport error" {
					lost.Add(1)
				}
				if out.Label == "402 quota_exceeded" {
					// Refused for quota only when the successes so far, the renders in flight and
					// what the killed node may still hold (its concurrency) reach the quota.
					held := int64(0)
					if killed.Load() {
						held = int64(l.concurrency)
					}
					if oks.Load()+accepted.Load()+maybe.Load()+inflight.Load()-1+held < int64(l.quota) {
						early = append(early, fmt.Sprintf("attempt %d: %d ok, %d jobs, %d in flight", i, oks.Load(), accepted.Load(), inflight.Load()-1))
					}
				}
				mu.Unlock()
				inflight.Add(-1)
				switch out.Label {
				case "429 concurrency_limit", "503 service_unavailable", "503 renderer_busy", "transport error":
					time.Sleep(200 * time.Millisecond)
				case "402 quota_exceeded":
					time.Sleep(500 * time.Millisecond) // a dead node's reservations expire in a lease
				}
			}
		}()
	}
	work.Wait()
	close(doneA)
	workB.Wait()
	elapsed := time.Since(start)
	growing.Wait()
	if l.growAt > 0 {
		// The fourth node serves: it renders, and every live node serves a file it stored,
		// as it serves theirs.
		if !grown.Load() || !alive[n].Load() {
			t.Fatalf("the fourth node did not start (grown %v)", grown.Load())
		}
		if out := clientsB[n].Render(ctx, chaos.Shot{Format: "png", Width: 320, Height: 240, URL: page.URL + "/b"}); !out.OK {
			t.Errorf("the fourth node answers a render with %s", out.Label)
		} else {
			okB.Add(1)
			served[n].Add(1)
		}
		var liveSvcs []*chaos.Service
		for i := n; i >= 0; i-- { // the fourth node first: it stores the file
			if alive[i].Load() {
				liveSvcs = append(liveSvcs, svcs[i])
			}
		}
		checkFilesEverywhere(t, ctx, liveSvcs, keyB, page.URL+"/b")
		okB.Add(1)
	}

	// Every job ends (those of the killed node on another, after the ack wait), seen alike on
	// every node, with its webhook; the batch's counts are right everywhere.
	// A request whose answer was lost with the killed node may have queued its job: the admin
	// API lists every job of A, those the clients never heard of too, and all must end.
	live := func(i int) bool { return alive[i].Load() }
	admin := svcs[(victim.Load()+1)%n].Admin
	all := accountJobs(t, ctx, admin, accA)
	unheard := len(all) - len(jobIDs)
	for _, id := range jobIDs {
		if !slices.Contains(all, id) {
			t.Errorf("job %s answered 202 is not among the account's jobs", id)
			dumpJob(t, ctx, roots[(victim.Load()+1)%n], id)
		}
	}
	jobs := checkJobs(t, ctx, clients, live, all, batchID, rcv, 3*time.Minute)
	successes := oks.Load() + int64(jobs.succeeded)

	// After the leases of the killed node's reservations, every live node reports A's usage as
	// the 200s the clients counted and the jobs that succeeded, and no reservation is left.
	mu.Lock()
	sinceKill := time.Since(killedAt)
	mu.Unlock()
	time.Sleep(max(16*time.Second-sinceKill, 0))
	// A reservation handed back by a node that found its job ended meanwhile lives out a lease
	// of its own (15 s) from then: wait for such leases, bounded, so that one left for good
	// still fails below.
	drained := func() bool {
		for i, c := range clients {
			if !alive[i].Load() {
				continue
			}
			if u, err := usage(ctx, c); err != nil || u.Quota.Remaining != max(l.quota-u.Quota.Used, 0) {
				return false
			}
		}
		return true
	}
	// A reservation whose job record was never written (the killed node died inside a Submit)
	// is dropped by the cluster's sweeper after a grace of a minute, at its next pass (each
	// minute; a dead holder's sweeper lease first lapses): wait for that too, bounded.
	for deadline := time.Now().Add(3 * time.Minute); !drained() && time.Now().Before(deadline); {
		time.Sleep(time.Second)
	}
	for i, c := range clients {
		if !alive[i].Load() {
			continue
		}
		u, err := usage(ctx, c)
		if err != nil {
			t.Fatalf("node %d usage: %v", i+1, err)
		}
		// Every success the clients saw is billed; beyond them, only renders whose answer was
		// lost with the killed node may be.
		if u.Quota.Used < int(successes) || u.Quota.Used > int(successes+lost.Load()) || u.Quota.Used > l.quota {
			t.Errorf("node %d reports %d used; the clients got %d 200s and %d jobs succeeded, %d answers lost with the killed node, quota %d",
				i+1, u.Quota.Used, oks.Load(), jobs.succeeded, lost.Load(), l.quota)
		}
		ub, err := usage(ctx, clientsB[i])
		if err != nil {
			t.Fatalf("node %d usage of B: %v", i+1, err)
		}
		if want := int(okB.Load()) + okB0; ub.Quota.Used < want || ub.Quota.Used > want+int(lostB.Load()) {
			t.Errorf("node %d reports %d used by B; B's clients got %d 200s, %d answers lost with the killed node", i+1, ub.Quota.Used, want, lostB.Load())
		}
		if u.Quota.Remaining != max(l.quota-u.Quota.Used, 0) {
			t.Errorf("node %d: remaining %d with %d used of %d: a reservation is left", i+1, u.Quota.Remaining, u.Quota.Used, l.quota)
			dumpLedger(t, ctx, roots[i], accA)
		}
		if u.Quota.Used == l.quota {
			if out := c.Render(ctx, chaos.Shot{Format: "png", Width: 320, Height: 240, URL: page.URL + "/a?n=last" + strconv.Itoa(i)}); out.Label != "402 quota_exceeded" {
				t.Errorf("node %d after the quota: %s, want 429 quota_exceeded", i+1, out.Label)
			}
		}
	}
	if successes > int64(l.quota) {
		t.Errorf("%d 200s and %d succeeded jobs for a quota of %d", oks.Load(), jobs.succeeded, l.quota)
	}
	// Requests whose answers were lost (or 503s during the election) may have held a unit while
	// the load ran.
	if oks.Load()+accepted.Load()+lost.Load()+maybe.Load() < int64(l.quota) {
		t.Errorf("only %d 200s and %d jobs of a quota of %d in %d attempts: the cluster refused too much", oks.Load(), accepted.Load(), l.quota, attempts.Load())
	}
	if p := page.peak.Load(); p > int64(l.concurrency) {
		t.Errorf("%d of A's renders ran at once; its concurrency is %d", p, l.concurrency)
	}
	if len(early) > 0 {
		t.Errorf("quota_exceeded before the quota was used: %v", early)
	}
	if !killed.Load() {
		t.Error("the load ended before a node was killed")
	}
	if t.Failed() {
		for i, s := range svcs {
			if s != nil {
				t.Logf("node %d log tail:\n%s", i+1, s.Tail())
			}
		}
	}
	perNode := make([]int64, total)
	for i := range served {
		perNode[i] = served[i].Load()
	}
	figures := fmt.Sprintf("cluster run: %s; killed n%d; A: %d attempts in %v, %d 200s, %d jobs (%d succeeded, failed %v, %d whose 202 was lost), peak %d renders at once, answers %v; B: %d 200s; 200s by node %v",
		l, victim.Load()+1, attempts.Load(), elapsed.Round(time.Millisecond), oks.Load(), accepted.Load(), jobs.succeeded, jobs.codes, unheard,
		page.peak.Load(), labels, okB.Load()+int64(okB0), perNode)
	t.Log(figures)
	if os.Getenv("SHOTD_TEST_CLUSTER_LONG") != "" {
		fmt.Println(figures)
	}
}

// page is the fixture: a document that takes 300 to 800 ms and counts how many of its loads run
// at once.
type page struct {
	URL     string
	running atomic.Int64
	peak    atomic.Int64
}

func newPage(t *testing.T) *page {
	p := &page{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" { // another account's page: not counted
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html><title>b</title><h1>b</h1>")
			return
		}
		if r.URL.Path != "/a" {
			http.NotFound(w, r)
			return
		}
		n := p.running.Add(1)
		for old := p.peak.Load(); n > old && !p.peak.CompareAndSwap(old, n); old = p.peak.Load() {
		}
		time.Sleep(time.Duration(300+rand.IntN(500)) * time.Millisecond)
		p.running.Add(-1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>a</title><h1>%s</h1>", r.URL.Query().Get("n"))
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func freePort(t *testing.T) string { return freeport.Addr(t) }

// makeAccount creates an account on plan and an unsigned key for it; it returns the access key,
// its secret and the account's id.
func makeAccount(t *testing.T, ctx context.Context, admin, plan string) (string, string, string) {
	t.Helper()
	var acc struct {
		ID string `json:"id"`
	}
	adminDo(t, ctx, admin, "/admin/v1/accounts", map[string]any{"email": "a@example.test", "plan": plan, "email_verified": true}, &acc)
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	adminDo(t, ctx, admin, "/admin/v1/accounts/"+acc.ID+"/keys", map[string]any{"name": "load"}, &key)
	return key.AccessKey, key.SecretKey, acc.ID
}

func adminDo(t *testing.T, ctx context.Context, admin, path string, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, admin+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+chaos.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("POST %s: status %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// waitKey waits until every node knows the key (it travels by the accounts and keys watch).
func waitKey(t *testing.T, ctx context.Context, clients []*chaos.Client) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for i, c := range clients {
		for {
			if _, err := usage(ctx, c); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d does not know the key made on node 1 after a second", i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

type usageReport struct {
	Quota struct {
		Used      int `json:"used"`
		Remaining int `json:"remaining"`
	} `json:"quota"`
}

func usage(ctx context.Context, c *chaos.Client) (usageReport, error) {
	var u usageReport
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/api/v1/usage", nil)
	req.Header.Set("X-Access-Key", c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return u, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return u, fmt.Errorf("usage: status %d", resp.StatusCode)
	}
	return u, json.NewDecoder(resp.Body).Decode(&u)
}

// checkFilesEverywhere renders a JSON result through the first node and reads its file through
// every node's /api/v1/files/{id}.
func checkFilesEverywhere(t *testing.T, ctx context.Context, svcs []*chaos.Service, key, pageURL string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, svcs[0].Base+"/api/v1/screenshot?response_type=json&url="+url.QueryEscape(pageURL), nil)
	req.Header.Set("X-Access-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		FileID string `json:"file_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || res.FileID == "" {
		t.Fatalf("json render: status %d, %v, %+v", resp.StatusCode, err, res)
	}
	for i, s := range svcs {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/api/v1/files/"+res.FileID, nil)
		req.Header.Set("X-Access-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatalf("node %d serves file %s with %d (%d bytes), want 200 and the PNG", i+1, res.FileID, resp.StatusCode, len(b))
		}
	}
}

// ledgerLeader asks node 1 (or the next one alive) which node leads the quota ledger's stream,
// by shotd cluster status --json.
func ledgerLeader(t *testing.T, ctx context.Context, bin string, roots []*chaos.Root) int {
	for _, r := range roots {
		cmd := exec.CommandContext(ctx, bin, "cluster", "status", "--json", "--config", r.Config)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			continue
		}
		var st struct {
			Buckets []struct {
				Name, Leader string
			} `json:"buckets"`
		}
		if json.Unmarshal(out, &st) != nil {
			continue
		}
		for _, b := range st.Buckets {
			if b.Name == "shotd_ledger" && len(b.Leader) == 2 && b.Leader[0] == 'n' {
				if i := int(b.Leader[1] - '1'); i >= 0 && i < len(roots) {
					return i
				}
			}
		}
	}
	t.Log("no node named the ledger's leader; killing the last node")
	return len(roots) - 1
}
