package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shotd/shotd/internal/freeport"
	"github.com/shotd/shotd/internal/proc"
)

// AdminToken is the admin token of every run's config.
const AdminToken = "chaos-admin-token-0123456789abcdef"

// Root is one run's directory: the service's TMPDIR, data_dir and config live below it, so
// every process of the run names it in its environment.
type Root struct {
	Dir, TmpDir, DataDir, Config string
	Listen, AdminListen          string
}

// NewRoot makes the directories and writes the config. extra is appended to it (plans,
// webhooks). Ports are fixed for the run so that a restarted service answers where the
// clients already talk.
func NewRoot(extra string) (*Root, error) {
	// Short path: Chrome's unix sockets live below it and may not exceed 108 bytes.
	dir, err := os.MkdirTemp("", "shotd-chaos-")
	if err != nil {
		return nil, err
	}
	r := &Root{Dir: dir, TmpDir: filepath.Join(dir, "tmp"), DataDir: filepath.Join(dir, "data"), Config: filepath.Join(dir, "shotd.toml")}
	for _, d := range []string{r.TmpDir, r.DataDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	if r.Listen, err = freePort(); err != nil {
		return nil, err
	}
	if r.AdminListen, err = freePort(); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`listen = %q
admin_listen = %q
admin_token = %q
data_dir = %q
public_url = "http://%s"
shutdown_timeout_seconds = 20

[network]
allow_private = ["127.0.0.1/32"]

[log]
format = "json"
level = "info"
`, r.Listen, r.AdminListen, AdminToken, r.DataDir, r.Listen) + extra
	return r, os.WriteFile(r.Config, []byte(cfg), 0o600)
}

func freePort() (string, error) { return freeport.Get() }

// Build builds cmd/shotd into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "shotd")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/shotd/shotd/cmd/shotd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// Service is one run of `shotd serve`.
type Service struct {
	root   *Root
	cmd    *exec.Cmd
	exited chan struct{}
	Base   string // public API
	Admin  string // admin API

	mu        sync.Mutex
	accessKey string
	secretKey string
	tail      []string // last log lines
}

// Start runs the binary on root's config and waits until /readyz answers 200.
func Start(ctx context.Context, bin string, root *Root) (*Service, error) {
	s := &Service{root: root, exited: make(chan struct{}), Base: "http://" + root.Listen, Admin: "http://" + root.AdminListen}
	cmd := exec.Command(bin, "serve", "--config", root.Config)
	// Chrome as the service's user: the run's processes are found by this TMPDIR, private to
	// the run (0700), which a user of Chrome's own could not reach (browser.user "auto", root).
	env := []string{"TMPDIR=" + root.TmpDir, "SHOTD_BROWSER_USER=self"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SHOTD_") && !strings.HasPrefix(e, "TMPDIR=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.cmd = cmd
	var reading sync.WaitGroup
	reading.Add(2)
	go s.read(stdout, &reading)
	go s.read(stderr, &reading)
	go func() { reading.Wait(); _ = cmd.Wait(); close(s.exited) }()
	for end := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(s.Base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("shotd exited before it was ready:\n%s", s.Tail())
		case <-ctx.Done():
			s.Kill()
			return nil, ctx.Err()
		default:
		}
		if time.Now().After(end) {
			s.Kill()
			return nil, fmt.Errorf("shotd not ready in 90 s:\n%s", s.Tail())
		}
	}
}

func (s *Service) read(r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.keyLine(line)
		var m struct {
			Message string `json:"message"`
			Status  int    `json:"status"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Message != "request" || m.Status >= 400 {
			s.tail = append(s.tail, line)
			if len(s.tail) > 60 {
				s.tail = s.tail[len(s.tail)-60:]
			}
		}
		s.mu.Unlock()
	}
}

// Keys are the access and secret key of the first start ("" on later starts), as printed.
// When stdout is not a terminal serve writes them to data_dir/credentials alone.
func (s *Service) Keys() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accessKey == "" {
		if b, err := os.ReadFile(filepath.Join(s.root.DataDir, "credentials")); err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				s.keyLine(line)
			}
		}
	}
	return s.accessKey, s.secretKey
}

// keyLine takes the access or secret key from a line of the first start's message.
func (s *Service) keyLine(line string) {
	if v, ok := strings.CutPrefix(strings.TrimSpace(line), "access key:"); ok {
		s.accessKey = strings.TrimSpace(v)
	}
	if v, ok := strings.CutPrefix(strings.TrimSpace(line), "secret key:"); ok {
		s.secretKey = strings.TrimSpace(v)
	}
}

// Tail is the end of the service's log, for error messages.
func (s *Service) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// PID is the service's process id.
func (s *Service) PID() int { return s.cmd.Process.Pid }

// Kill9 kills the service process alone, as an operator's kill -9 would, and waits for it.
func (s *Service) Kill9() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Kill kills the service's own process group (not Chrome's: those are groups of their own and
// die by Pdeathsig) and waits.
func (s *Service) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// Stop asks for a graceful stop and waits for the exit; it kills after timeout.
func (s *Service) Stop(timeout time.Duration) error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("shotd exited with %d after SIGTERM", code)
		}
		return nil
	case <-time.After(timeout):
		s.Kill()
		return fmt.Errorf("shotd did not stop within %v of SIGTERM", timeout)
	}
}

// Proc is one process below the service.
type Proc struct {
	proc.Stat
	Cmdline string
}

// Chrome kinds by their --type flag; the browser's main process has none.
const (
	KindBrowser  = "browser"
	KindRenderer = "renderer"
	KindGPU      = "gpu-process"
)

// Kind is the Chrome process type, "" for a process that is not Chrome.
func (p Proc) Kind() string {
	if !strings.Contains(p.Cmdline, "--user-data-dir=") && !strings.Contains(p.Cmdline, "--type=") {
		return ""
	}
	for _, f := range strings.Fields(p.Cmdline) {
		if v, ok := strings.CutPrefix(f, "--type="); ok {
			return v
		}
	}
	return KindBrowser
}

// Descendants lists the live processes below the service, found by their parent links.
func (s *Service) Descendants() []Proc {
	select {
	case <-s.exited:
		return nil
	default:
	}
	all := proc.All()
	children := map[int][]proc.Stat{}
	for _, st := range all {
		children[st.PPID] = append(children[st.PPID], st)
	}
	var out []Proc
	queue := []int{s.PID()}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.PID) + "/cmdline")
			out = append(out, Proc{Stat: c, Cmdline: strings.ReplaceAll(string(b), "\x00", " ")})
			queue = append(queue, c.PID)
		}
	}
	return out
}

// Chrome lists the Chrome processes below the service of the given kind ("" for all).
func (s *Service) Chrome(kind string) []Proc {
	var out []Proc
	for _, p := range s.Descendants() {
		if k := p.Kind(); k != "" && (kind == "" || k == kind) && p.State != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// Zombies counts the service's own children that ended and were not reaped. Chrome's helpers
// are Chrome's to reap (a stopped browser cannot, until it is killed), so they do not count.
func (s *Service) Zombies(within time.Duration) int {
	type id struct {
		pid   int
		start uint64
	}
	zombies := func() map[id]bool {
		m := map[id]bool{}
		for _, p := range s.Descendants() {
			if p.State == 'Z' && p.PPID == s.PID() {
				m[id{p.PID, p.Start}] = true
			}
		}
		return m
	}
	// A child killed a moment ago is a zombie until the service reaps it: only one still
	// unreaped after within counts.
	first := zombies()
	if len(first) == 0 {
		return 0
	}
	time.Sleep(within)
	n := 0
	for p := range zombies() {
		if first[p] {
			n++
		}
	}
	return n
}

// Same reports whether p is still the very process that was listed (not a reuse of its pid),
// so that a signal never reaches a process the run did not start.
func Same(p Proc) bool {
	st, ok := proc.Read(p.PID)
	return ok && st.Start == p.Start && st.State != 'Z'
}

// Leftovers lists what the run left behind: processes that name the run's root in their
// environment or command line, and entries in its TMPDIR and in data_dir/chrome.
func (r *Root) Leftovers() (procs []int, dirs []string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cmdline), r.Dir) || strings.Contains(string(environ), "TMPDIR="+r.TmpDir+"\x00") {
			procs = append(procs, pid)
		}
	}
	for _, d := range []string{r.TmpDir, filepath.Join(r.DataDir, "chrome")} {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			dirs = append(dirs, filepath.Join(d, e.Name()))
		}
	}
	return procs, dirs
}

// Remove kills, by pid, what is left of this run's processes and removes its directory.
func (r *Root) Remove() {
	procs, _ := r.Leftovers()
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	os.RemoveAll(r.Dir)
}
