package egress

import (
	"net"
	"net/http"
	"strings"
	"sync"
)

// Trouble is a destination that a Route refused or could not reach: what tells its browser
// context's renders why Chrome got an error page, or the proxy's own answer, for a document.
type Trouble struct {
	// Target is the destination as "host:port", the host in lower case, the port always given.
	Target string
	// URL is the request's URL as Chrome sent it, for a plain-http request (the proxy answered
	// it with its own page); "" for a tunnel (https, wss), which Chrome sees fail.
	URL     string
	Refused bool   // the Guard refused it (host_not_allowed); else it was unreachable
	Reason  string // why it was unreachable: "connection refused", "no such host", ...
}

// maxTroubles bounds a route's log: a page can make any number of failing requests, and only
// its main frame's documents are looked for in it.
const maxTroubles = 64

// troubleLog keeps a route's latest troubles since its last Block.
type troubleLog struct {
	mu   sync.Mutex
	list []Trouble
}

func (l *troubleLog) add(t Trouble) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) == maxTroubles {
		l.list = append(l.list[:0], l.list[1:]...)
	}
	l.list = append(l.list, t)
}

func (l *troubleLog) clear() {
	l.mu.Lock()
	l.list = l.list[:0]
	l.mu.Unlock()
}

func (l *troubleLog) all() []Trouble {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Trouble(nil), l.list...)
}

// TroubleTarget is the Target of a Trouble for host and port as a URL gives them: the port
// defaults to defaultPort, the host is lower case.
func TroubleTarget(host, port, defaultPort string) string {
	if port == "" {
		port = defaultPort
	}
	return net.JoinHostPort(strings.ToLower(strings.Trim(host, "[]")), port)
}

// noteTrouble records, on a route, the destination of r as refused or unreachable (for reason).
// The record is made before the answer goes out: whatever Chrome makes of the answer, the
// route's renders can already tell why.
func (p *Proxy) noteTrouble(r *http.Request, refused bool, reason string) {
	if p.troubles == nil {
		return
	}
	t := Trouble{Refused: refused, Reason: reason}
	// r.Host first: a CONNECT's is its target; a request forwarded through a user's proxy has
	// the checked address in its URL and the name in Host; a directly forwarded one has Host
	// emptied and the name in its URL.
	hp, defaultPort := r.Host, "443"
	if r.Method != http.MethodConnect {
		defaultPort, t.URL = "80", r.RequestURI
		if hp == "" {
			hp = r.URL.Host
		}
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		host, port = hp, ""
	}
	t.Target = TroubleTarget(host, port, defaultPort)
	p.troubles.add(t)
}
