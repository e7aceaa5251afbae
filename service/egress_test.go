package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/cdpclient"
	"github.com/shotd/shotd/config"
	"github.com/shotd/shotd/internal/s3test"
)

// openWithBucket opens the service on loopback with allowPrivate and the bucket of srv as its
// [storage.s3], and returns it with its first key, closed with the test.
func openWithBucket(t *testing.T, srv *s3test.Server, allowPrivate []string) (*Service, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Network.AllowPrivate = allowPrivate
	cfg.Storage.S3 = config.S3{Endpoint: srv.Endpoint(), Region: s3test.Region, Bucket: "results", Addressing: "path",
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}
	svc, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(context.Background()); err != nil {
			t.Error(err)
		}
		noChromeLeft(t, dir)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := svc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return svc, svc.FirstStart().AccessKey
}

type apiAnswer struct {
	status int
	code   string
	body   []byte
}

func render(t *testing.T, svc *Service, key string, q url.Values) apiAnswer {
	t.Helper()
	q.Set("access_key", key)
	resp, err := http.Get("http://" + svc.PublicAddr().String() + "/api/v1/screenshot?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Code string `json:"error_code"`
	}
	_ = json.Unmarshal(b, &e)
	if len(b) > 200 || e.Code == "" {
		b = fmt.Appendf(nil, "(%s, %d bytes)", resp.Header.Get("Content-Type"), len(b)) // not an error: no picture in the log
	}
	return apiAnswer{status: resp.StatusCode, code: e.Code, body: b}
}

// TestOwnPortsRefused: with allow_private = ["127.0.0.1"], the addresses where the service itself
// listens on loopback (the admin API with /metrics, the public API, the egress proxy) and its
// server-wide bucket are refused with host_not_allowed to a render's url, to a page that
// redirects there, to a webhook and to a storage_endpoint, while other loopback pages render.
func TestOwnPortsRefused(t *testing.T) {
	srv := s3test.Start(t, "results")
	svc, key := openWithBucket(t, srv, []string{"127.0.0.1"})
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, "<h1>a loopback page</h1>")
	}))
	defer fixture.Close()

	if a := render(t, svc, key, url.Values{"url": {fixture.URL + "/"}}); a.status != 200 {
		t.Fatalf("an allow-listed loopback page: %d %s", a.status, a.body)
	}
	targets := map[string]string{
		"admin metrics": "http://" + svc.AdminAddr().String() + "/metrics",
		"public api":    "http://" + svc.PublicAddr().String() + "/healthz",
		"egress proxy":  "http://" + svc.proxy.Addr() + "/",
		"bucket":        srv.Endpoint() + "/results/",
		"localhost":     "http://localhost:" + portOf(t, svc.AdminAddr()) + "/metrics",
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			for _, q := range []url.Values{
				{"url": {target}},
				{"url": {fixture.URL + "/?to=" + url.QueryEscape(target)}}, // a page that goes there
				{"url": {fixture.URL + "/"}, "async": {"true"}, "webhook_url": {target}},
			} {
				if a := render(t, svc, key, q); a.status != 403 || a.code != string(shotd.CodeHostNotAllowed) {
					t.Errorf("%v: %d %s, want 403 host_not_allowed", q, a.status, a.body)
				}
			}
		})
	}
	t.Run("storage_endpoint", func(t *testing.T) {
		a := render(t, svc, key, url.Values{"html": {"<h1>x</h1>"}, "store": {"true"}, "storage_endpoint": {srv.Endpoint()},
			"storage_bucket": {"results"}, "storage_access_key_id": {s3test.AccessKey}, "storage_secret_access_key": {s3test.SecretKey}})
		if a.status != 403 || a.code != string(shotd.CodeHostNotAllowed) {
			t.Errorf("%d %s, want 403 host_not_allowed", a.status, a.body)
		}
	})
}

// TestBucketNeedsNoAllowList: the server-wide bucket on loopback is reached by a dialer of its
// own, with allow_private empty, so that no page has to be let through to reach it.
func TestBucketNeedsNoAllowList(t *testing.T) {
	srv := s3test.Start(t, "results")
	svc, key := openWithBucket(t, srv, nil)
	a := render(t, svc, key, url.Values{"html": {"<h1>stored</h1>"}, "response_type": {"json"}})
	if a.status != 200 {
		t.Fatalf("a stored result: %d %s", a.status, a.body)
	}
	if a := render(t, svc, key, url.Values{"url": {srv.Endpoint() + "/results/"}}); a.status != 403 || a.code != string(shotd.CodeHostNotAllowed) {
		t.Errorf("a page at the bucket: %d %s, want 403 host_not_allowed", a.status, a.body)
	}
}

func portOf(t *testing.T, a net.Addr) string {
	t.Helper()
	_, port, err := net.SplitHostPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestChromeUser: browser.user "self" keeps Chrome as the service's user; "auto" as root is
// cdpclient.DefaultUser, made when absent; a name that does not exist stops the start.
func TestChromeUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs Chrome as another user")
	}
	log := zerolog.New(zerolog.NewTestWriter(t))
	if u, err := chromeUser("self", log); u != nil || err != nil {
		t.Errorf("self: %+v, %v", u, err)
	}
	if u, err := chromeUser("auto", log); err != nil || u == nil || u.Name != cdpclient.DefaultUser || u.UID == 0 {
		t.Errorf("auto as root: %+v, %v", u, err)
	}
	if u, err := chromeUser("no-such-user-shotd", log); err == nil {
		t.Errorf("a user that does not exist: %+v", u)
	}
}
