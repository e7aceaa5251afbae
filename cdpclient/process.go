package cdpclient

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/rpcc"
	"github.com/rs/zerolog"

	"github.com/shotd/shotd/internal/cgroup"
	"github.com/shotd/shotd/internal/proc"
)

const (
	defaultStartTimeout = 20 * time.Second
	defaultPrewarm      = 2
	defaultRenders      = 4
	browserCloseTimeout = 2 * time.Second        // Browser.close before the group is killed
	gracefulExitWait    = time.Second            // how long Chrome may take to exit after Browser.close
	reapTimeout         = 10 * time.Second       // bound of the waits after the SIGKILL, whatever Close's ctx
	disposeTimeout      = 5 * time.Second        // disposal of one browser context
	maxYield            = 200 * time.Millisecond // the longest background work waits for loads to end
	yieldPoll           = 5 * time.Millisecond
	disposeGrace        = 20 * time.Millisecond // before a used tab is disposed (release)
)

var (
	errBrowserStopped = errors.New("chrome stopped")
	errTabGone        = errors.New("the tab's connection closed")
	errClosed         = errors.New("process closed")
)

// Process is one running Chrome, owned by one actor.
type Process struct {
	cfg   Config
	log   zerolog.Logger
	group *proc.Group
	pid   int
	dir   string    // user-data dir, removed by Close
	pipe  *pipeConn // DevTools, every session

	conn    *rpcc.Conn // the browser's session
	browser *cdp.Client

	// life is cancelled when Chrome exits, its connection closes or Close starts; renders and the
	// pre-warmer stop with it.
	life       context.Context
	cancelLife context.CancelCauseFunc

	exited       chan struct{}
	disconnected chan struct{}
	stderr       *os.File
	stderrDone   chan struct{}

	tmpDir string        // Chrome's TMPDIR, removed with dir
	cgroup *cgroup.Child // Chrome's memory bound, removed by Close; nil: none

	mu      sync.Mutex // protects closing and wg.Add after Launch
	closing bool
	wg      sync.WaitGroup

	// pauseAll: the browser is not the headless shell. Full Chromium answers a challenge (401
	// with WWW-Authenticate) to a request Fetch does not pause with a login prompt that nobody
	// can answer: a document fails (net::ERR_INVALID_AUTH_CREDENTIALS), and an image or a
	// synchronous XMLHttpRequest holds the page's load until the timeout. Paused, every
	// challenge comes to the interceptor, which cancels it, so that the server's 401 answer is
	// what the page gets, as the headless shell gives it by itself.
	pauseAll bool

	ready   chan *tab     // tabs ready for a render: pre-warmed, or wiped after one
	readyMu sync.Mutex    // orders ready: held by putFirst and by acquire's take
	tabs    sync.Map      // browser.ContextID -> *tab, for the origins of watchTargets
	slots   chan struct{} // one token per pair the pre-warmer may create
	loading atomic.Int32  // renders between their start and the end of their wait step
	// background counts the tabs being wiped, disposed or created off the renders' path: work
	// on Chrome's UI thread that a render sent to this browser would wait behind.
	background atomic.Int32
	prio       *priority // the group's CPU priority while it only cleans up

	closeOnce sync.Once
	closeErr  error
}

// reap turns the end of Chrome's group (its leader reaped, the rest killed) into Exited.
func (p *Process) reap() {
	defer p.wg.Done()
	<-p.group.Exited()
	// Renders that saw the pipe close tell a dead browser by life: end it before logging.
	p.cancelLife(errBrowserStopped)
	p.log.Info().Err(p.group.Err()).Msg("chrome exited")
	close(p.exited)
}

// killGroup sends SIGKILL to Chrome's process group while its leader is unreaped.
func (p *Process) killGroup() { p.group.Kill() }

// readStderr drains Chrome's stderr, logging it at debug, so that Chrome never blocks on a full
// pipe.
func (p *Process) readStderr() {
	defer p.wg.Done()
	defer close(p.stderrDone)
	defer p.stderr.Close()
	br := bufio.NewReaderSize(p.stderr, 16<<10)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			if len(line) > 2000 {
				line = line[:2000]
			}
			p.log.Debug().Str("line", line).Msg("chrome stderr")
		}
		if err != nil {
			return
		}
	}
}

// watchConn turns the end of the browser connection into Disconnected.
func (p *Process) watchConn() {
	defer p.wg.Done()
	<-p.conn.Context().Done()
	p.log.Debug().Msg("chrome connection closed")
	p.cancelLife(errBrowserStopped)
	close(p.disconnected)
}

// ReadyTabs is how many tabs wait ready for a render: pre-warmed, or wiped after one.
func (p *Process) ReadyTabs() int { return len(p.ready) }

// Background is how many tabs this browser is wiping, disposing or creating off the renders'
// path. A scheduler that has the choice sends a render to the browser with the least of it.
func (p *Process) Background() int { return int(p.background.Load()) }

// PID is the process id of Chrome, which is also its process group id.
func (p *Process) PID() int { return p.pid }

// Exited is closed once the Chrome process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Disconnected is closed once the browser's DevTools websocket is gone.
func (p *Process) Disconnected() <-chan struct{} { return p.disconnected }

// spawn runs f on a goroutine that Close waits for; once Close has begun it runs nothing and
// reports false.
func (p *Process) spawn(f func()) bool { return proc.Go(&p.mu, &p.closing, &p.wg, f) }

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Probe asks the browser process for its version: an answer within ctx shows that its UI thread
// and DevTools connection work. Renders do not wait for it.
func (p *Process) Probe(ctx context.Context) error {
	if p.life.Err() != nil {
		return context.Cause(p.life)
	}
	_, err := p.browser.Browser.GetVersion(ctx)
	return err
}
