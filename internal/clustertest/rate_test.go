package clustertest

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/chaos"
)

// ratedAllowance is the status_requests_per_minute of the plan "rated".
const ratedAllowance = 30

// checkStatusRateAcrossNodes: an account's status allowance is the account's across the nodes,
// not each node's. Its key is fresh: waitKey's polls are its first status requests (one a node),
// the rest of the allowance is spread evenly, then each node is polled until it refuses: the
// nodes hear of each other's counts within a second, so they admit few more, where nodes that
// counted alone would admit twice the allowance more.
func checkStatusRateAcrossNodes(t *testing.T, ctx context.Context, svcs []*chaos.Service, key string) {
	t.Helper()
	clients := make([]*chaos.Client, len(svcs))
	for i, s := range svcs {
		clients[i] = &chaos.Client{Base: s.Base, Key: key, HTTP: &http.Client{Timeout: 30 * time.Second}}
	}
	waitKey(t, ctx, clients)
	for i, c := range clients {
		for range ratedAllowance/len(clients) - 1 {
			if code, _ := statusRequest(t, ctx, c); code != http.StatusOK {
				t.Fatalf("node %d: status %d within the allowance", i+1, code)
			}
		}
	}
	extra := 0
	for i, c := range clients {
		for {
			code, h := statusRequest(t, ctx, c)
			if code == http.StatusTooManyRequests {
				if h.Get("X-RateLimit-Limit") != strconv.Itoa(ratedAllowance) || h.Get("X-RateLimit-Remaining") != "0" || h.Get("Retry-After") == "" {
					t.Fatalf("node %d: 429 with limit %q, remaining %q, Retry-After %q", i+1,
						h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("Retry-After"))
				}
				break
			}
			if code != http.StatusOK {
				t.Fatalf("node %d: status %d", i+1, code)
			}
			if extra++; extra >= ratedAllowance {
				t.Fatalf("the nodes admitted %d status requests past the account's %d a minute: each counts its own", extra, ratedAllowance)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t.Logf("status allowance of %d: %d more admitted while the nodes' reports travelled", ratedAllowance, extra)
}

// statusRequest is a GET /api/v1/usage: its status and headers.
func statusRequest(t *testing.T, ctx context.Context, c *chaos.Client) (int, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/api/v1/usage", nil)
	req.Header.Set("X-Access-Key", c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
