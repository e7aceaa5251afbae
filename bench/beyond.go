package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// beyond holds the figures beyond the floor: a cache hit, the async accept rate, the warm start
// and the service's own memory.
type beyond struct {
	renders int    // the service's renders in all before the second RSS (issue 31: 5,000)
	accepts int    // async accepts by acceptClients
	hits    int    // cache hits
	rssIdle memory // taken after the warm start, before anything else
}

// acceptClients send the async requests at once.
const acceptClients = 16

// measure prints the figures beyond the floor, target being the small page. The async accepts
// come last: their jobs render in the background until the service closes.
func (b beyond) measure(svc *service, target string) error {
	fmt.Println()
	fmt.Printf("beyond the floor: warm start to ready %.0f ms\n", ms(svc.ready))
	if b.hits > 0 {
		d, err := cacheHits(svc, target, b.hits)
		if err != nil {
			return err
		}
		fmt.Printf("beyond the floor: cache hit p50 %.2f ms, p95 %.2f ms (%d hits, 1 client)\n", ms(pct(d, 50)), ms(pct(d, 95)), len(d))
	}
	if more := b.renders - int(svc.renders.Load()); more > 0 {
		small := scenarios["small"]
		if _, _, err := measureService(svc, target, row{scenario: small, conc: 4}, more); err != nil {
			return err
		}
	}
	fmt.Printf("beyond the floor: service RSS (Chrome excluded, the bench's own clients included) %v idle, %v after %d renders\n",
		b.rssIdle, rss(), svc.renders.Load())
	if b.accepts > 0 {
		d, wall, err := asyncAccepts(svc, target, b.accepts)
		if err != nil {
			return err
		}
		fmt.Printf("beyond the floor: async accepts %.0f/s with %d clients, p50 %.2f ms, p95 %.2f ms (%d accepts, each durable before its 202)\n",
			float64(len(d))/wall.Seconds(), acceptClients, ms(pct(d, 50)), ms(pct(d, 95)), len(d))
	}
	return nil
}

// cacheHits renders target once with cache=true, then asks for it n times, one at a time, each
// answer a stored copy.
func cacheHits(svc *service, target string, n int) ([]time.Duration, error) {
	u := svc.base + "/api/v1/screenshot?" + url.Values{"access_key": {svc.key}, "url": {target}, "cache": {"true"}}.Encode()
	client := &http.Client{}
	get := func(want string) error {
		return fetch(client, u, func(resp *http.Response) error {
			if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != want {
				return fmt.Errorf("cache: service answered %d, X-Cache %q, want 200 %s", resp.StatusCode, resp.Header.Get("X-Cache"), want)
			}
			svc.renders.Add(1)
			return nil
		})
	}
	if err := get("MISS"); err != nil {
		return nil, err
	}
	d, _, err := parallel(1, n, 0, func() error { return get("HIT") })
	return d, err
}

// asyncAccepts sends n async renders of target, acceptClients at a time, each answered 202.
func asyncAccepts(svc *service, target string, n int) ([]time.Duration, time.Duration, error) {
	u := svc.base + "/api/v1/screenshot?" + url.Values{"access_key": {svc.key}, "url": {target}, "async": {"true"}}.Encode()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: acceptClients}}
	return parallel(acceptClients, n, 0, func() error {
		return fetch(client, u, func(resp *http.Response) error {
			if resp.StatusCode != http.StatusAccepted {
				return fmt.Errorf("async: service answered %d", resp.StatusCode)
			}
			return nil
		})
	})
}

// fetch GETs u, reads the whole answer and judges it with check.
func fetch(client *http.Client, u string, check func(*http.Response) error) error {
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	return check(resp)
}

// memory is a resident set: all of it, and the part that is not file-backed (the binary's own
// pages are file-backed: the bench's binary holds more than the service).
type memory struct{ rss, anon int64 }

func (m memory) String() string {
	return fmt.Sprintf("%.1f MB (%.1f MB anonymous)", mb(m.rss), mb(m.anon))
}

// rss is this process's resident set after a collection that returns what it can to the
// system; Chrome runs in processes of its own and is not in it.
func rss() memory {
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return memory{}
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for field, to := range map[string]*int64{"VmRSS:": &m.rss, "RssAnon:": &m.anon} {
			if v, ok := strings.CutPrefix(sc.Text(), field); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				*to = kb << 10
			}
		}
	}
	return m
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
