package cdpclient

// Launch: from a Config to a running, connected Chrome.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/proc"
)

// Launch starts Chrome and connects to it. A failed Launch leaves no process and no directory.
func Launch(ctx context.Context, cfg Config) (*Process, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	path, err := FindBrowser(cfg.Path)
	if err != nil {
		return nil, err
	}
	warnAboutBrowser(path, cfg)
	// Everything made before Chrome runs is undone by one path on failure.
	var undo []func()
	fail := func(err error, msg string) (*Process, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, shotd.Wrap(shotd.CodeRendererUnavailable, err, msg)
	}
	dir, err := os.MkdirTemp(cfg.Dir, "shotd-chrome-")
	if err != nil {
		return fail(err, "cannot create the browser profile directory")
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	// Chrome writes outside --user-data-dir to $XDG_CONFIG_HOME (the crash database) and
	// $XDG_CACHE_HOME; keep all of it in the dir that Close removes. TMPDIR too: Chrome killed
	// with SIGKILL cannot remove the org.chromium.* dirs it makes there.
	// With a User, Chrome gets a directory of its own (its profile, home and TMPDIR) and dir,
	// the service's, keeps only the records.
	profile, tmp, env := dir, "", []string(nil)
	if cfg.User != nil {
		if tmp, err = cfg.User.makeDir(dir); err != nil {
			return fail(err, "cannot create the browser's directory for user "+cfg.User.Name)
		}
		profile = filepath.Join(tmp, "profile")
		env = []string{"HOME=" + tmp, "TMPDIR=" + filepath.Join(tmp, "tmp")}
	} else {
		if tmp, err = os.MkdirTemp(tmpParent(cfg.Dir)); err != nil {
			return fail(err, "cannot create the browser temp directory")
		}
		env = []string{"TMPDIR=" + tmp}
	}
	undo = append(undo, func() { os.RemoveAll(tmp) })
	// Three pipes: stderr, and DevTools' two (pipe.go). Chrome's ends are closed here once it
	// holds them; ours on failure, or by Close.
	var files [6]*os.File // stderr r, w; commands r, w; answers r, w
	for i := 0; i < len(files); i += 2 {
		if files[i], files[i+1], err = os.Pipe(); err != nil {
			return fail(err, "cannot start the browser")
		}
		undo = append(undo, func() { files[i].Close(); files[i+1].Close() })
	}
	stderrR, stderrW, cmdR, cmdW, ansR, ansW := files[0], files[1], files[2], files[3], files[4], files[5]

	flags := chromeFlags(path, profile, cfg)
	if err := writeProfilePrefs(profile, flags, cfg.User); err != nil {
		return fail(err, "cannot write the browser profile's preferences")
	}
	cmd := exec.Command(path, append(flags, "about:blank")...)
	if cfg.User != nil {
		// The pipes are inherited descriptors: they work across the switch of user.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cfg.User.credential()}
	}
	// Our own stderr pipe instead of cmd.StderrPipe: Wait must not close it under the reader,
	// which keeps draining so Chrome never blocks on a full pipe.
	cmd.Stderr = stderrW
	cmd.ExtraFiles = []*os.File{cmdR, ansW} // Chrome's fd 3 and 4 (--remote-debugging-pipe)
	// Ours last: exec keeps the last value of a repeated name.
	cmd.Env = append(append(chromeEnv(os.Environ()), env...),
		"XDG_CONFIG_HOME="+filepath.Join(profile, "xdg-config"),
		"XDG_CACHE_HOME="+filepath.Join(profile, "xdg-cache"))
	var memory *cgroup.Child
	if cfg.Cgroups != nil && cfg.MemoryLimitMB > 0 {
		if memory, err = cfg.Cgroups.New(int64(cfg.MemoryLimitMB) << 20); err != nil {
			return fail(err, "cannot bound the browser's memory")
		}
		undo = append(undo, func() { removeCgroup(memory) })
		if cfg.User != nil {
			if err := memory.AllowUser(int(cfg.User.UID), int(cfg.User.GID)); err != nil {
				return fail(err, "cannot bound the browser's memory")
			}
		}
		memory.Enter(cmd) // Chrome, and so every process it starts, is in it from the start
	}
	// Own group: Close kills Chrome and all its helpers at once.
	group, err := proc.Start(cmd)
	if err != nil {
		return fail(err, "cannot start the browser")
	}
	// As early as can be: what Chrome starts from now on inherits it.
	nice, err := group.Lower(cfg.Nice)
	if err != nil {
		cfg.Log.Warn().Err(err).Int("nice", nice).Msg("cannot lower the browser's CPU priority")
		nice = proc.Nice() // where it runs
	}
	// Chrome holds its ends now: EOF on ours comes when its whole group is gone.
	stderrW.Close()
	cmdR.Close()
	ansW.Close()
	if err := writeGroupRecord(dir, group.PID(), cfg.StartTimeout); err != nil {
		// Without the record a wrapper's Chrome could outlive a killed service unnoticed.
		group.Kill()
		<-group.Exited()
		return fail(err, "cannot record the browser's process group")
	}

	life, cancelLife := context.WithCancelCause(context.Background())
	p := &Process{
		cfg:          cfg,
		pauseAll:     filepath.Base(path) != filepath.Base(HeadlessShell),
		log:          cfg.Log.With().Int("pid", group.PID()).Logger(),
		group:        group,
		pid:          group.PID(),
		dir:          dir,
		tmpDir:       tmp,
		cgroup:       memory,
		life:         life,
		cancelLife:   cancelLife,
		exited:       make(chan struct{}),
		disconnected: make(chan struct{}),
		stderr:       stderrR,
		stderrDone:   make(chan struct{}),
		pipe:         newPipeConn(cmdW, ansR, func() { cancelLife(errBrowserStopped) }),
		prio:         newPriority(group.PID(), nice),
	}
	p.wg.Add(2)
	go p.reap()
	go p.readStderr()

	if err := p.connect(ctx); err != nil {
		// shutdown removes the dir and waits for both goroutines.
		if serr := p.shutdown(context.Background(), false); serr != nil {
			p.log.Warn().Err(serr).Msg("cleanup after failed launch")
		}
		return nil, err
	}

	// Again, for a process or thread that Chrome was making during the first call.
	if _, err := group.Lower(cfg.Nice); err != nil {
		p.log.Warn().Err(err).Msg("cannot lower the browser's CPU priority")
	}
	p.startPool()
	p.log.Info().Str("user_data_dir", dir).Msg("chrome started")
	return p, nil
}

// startPool starts watching the connection and pre-warming tabs: Prewarm of them, and with
// wipe isolation room for the tabs of the renders in flight, which rest in the pool between
// renders.
func (p *Process) startPool() {
	n := max(p.cfg.Prewarm, 0)
	if p.cfg.Isolation == IsolationWipe && n > 0 {
		n += p.cfg.Renders
	}
	p.ready = make(chan *tab, n)
	p.slots = make(chan struct{}, n)
	for range n {
		p.slots <- struct{}{}
	}
	p.wg.Add(1)
	go p.watchConn()
	for range prewarmWorkers(n) {
		p.wg.Add(1)
		go p.prewarm()
	}
}
