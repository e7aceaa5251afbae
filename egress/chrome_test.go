package egress

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shotd/shotd/internal/testkit"
)

const chromePath = "/usr/bin/chromium"

// runChrome loads url in headless Chromium behind the proxy and returns the DOM after the page
// settled. Chrome runs in its own process group, which is killed and reaped before returning.
func runChrome(t *testing.T, proxyAddr, url string) string {
	t.Helper()
	return runChromeWebRTC(t, proxyAddr, url, "disable_non_proxied_udp")
}

// runChromeWebRTC is runChrome with the WebRTC IP handling policy given, as the service sets it:
// the switch (the headless shell reads it) and the profile's preference (full Chromium reads
// that one alone).
func runChromeWebRTC(t *testing.T, proxyAddr, url, policy string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	udd := t.TempDir()
	if err := os.MkdirAll(udd+"/Default", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(udd+"/Default/Preferences", []byte(`{"webrtc":{"ip_handling_policy":"`+policy+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, chromePath,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+udd,
		// The flags under test: every connection, loopback included, goes through the proxy, and
		// WebRTC may not send UDP around it.
		"--proxy-server=http://"+proxyAddr,
		"--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy="+policy,
		// Let the page's fetches, XHR and websockets settle before the DOM is printed.
		"--virtual-time-budget=5000",
		"--dump-dom", url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	pgid := cmd.Process.Pid
	err := cmd.Wait()
	// Chrome's helpers share the group; make sure none outlives the test.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(-pgid, 0) == nil; {
		if time.Now().After(deadline) {
			t.Fatalf("chromium process group %d still alive", pgid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return out.String()
}

// TestChromeThroughProxy runs real Chromium behind the proxy: a page on the allowed backend tries
// to reach the canary (a loopback address that is not allowed) by every route a page has, and the
// canary must see nothing while the allowed subresource loads.
func TestChromeThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if _, err := os.Stat(chromePath); err != nil {
		t.Skip("no chromium")
	}
	testkit.CheckGoroutines(t, 5*time.Second)
	e := newProxyEnv(t)
	p := e.port
	before := e.proxy.Refused()
	dom := runChrome(t, e.proxy.Addr(), "http://127.0.0.1:"+p+"/page")
	want := "fetch blocked,fetch6 blocked,xhr blocked,ws blocked,allowed ok"
	if !strings.Contains(dom, want) {
		t.Fatalf("page results not %q in:\n%s\nproxy log:\n%s", want, dom, e.logs)
	}
	if n := e.proxy.Refused() - before; n < 10 {
		t.Errorf("the proxy refused %d attempts, want one per canary route (10); log:\n%s", n, e.logs)
	}

	// A main document on the canary: the proxy answers the refusal page.
	before = e.proxy.Refused()
	dom = runChrome(t, e.proxy.Addr(), "http://2130706435:"+p+"/")
	if !strings.Contains(dom, "host not allowed") || e.proxy.Refused() == before {
		t.Fatalf("main document on the canary was not refused:\n%s", dom)
	}
	e.canary.CheckUntouched(t)
}

// chromePage is served at /page of the proxy tests' backend. Everything aimed at the canary
// (127.0.0.3 on the backend's port) must fail; the same-origin fetch must work.
func chromePage(p string) string {
	can := func(host, path string) string { return fmt.Sprintf("http://%s:%s%s", host, p, path) }
	return `<!doctype html><html><body>
<img src="` + can("127.0.0.3", "/img") + `">
<img src="` + can("0x7f.0.0.3", "/img2") + `">
<script src="` + can("2130706435", "/script.js") + `"></script>
<iframe src="` + can("0177.0.0.3", "/frame") + `"></iframe>
<iframe src="/redirect"></iframe>
<iframe src="` + can("canary.test", "/frame2") + `"></iframe>
<div id="out">pending</div>
<script>
const tries = [
  fetch("` + can("127.3", "/fetch") + `").then(() => "fetch reached", () => "fetch blocked"),
  fetch("` + can("[::ffff:7f00:3]", "/fetch6") + `").then(() => "fetch6 reached", () => "fetch6 blocked"),
  new Promise(done => {
    const x = new XMLHttpRequest();
    x.open("GET", "` + can("127.0.0.3", "/xhr") + `");
    x.onload = () => done(x.status === 403 ? "xhr blocked" : "xhr reached");
    x.onerror = () => done("xhr blocked");
    x.send();
  }),
  new Promise(done => {
    const ws = new WebSocket("ws://127.0.0.3:` + p + `/ws");
    ws.onopen = () => done("ws reached");
    ws.onerror = () => done("ws blocked");
  }),
  fetch("/hello").then(r => r.text()).then(t => t === "hello from backend" ? "allowed ok" : "allowed wrong", () => "allowed failed"),
];
Promise.all(tries).then(r => { document.getElementById("out").textContent = r.join(","); });
</script></body></html>`
}

// webrtcPage gathers ICE candidates with a STUN server (UDP) and a TURN server over TCP, both
// on the canary (127.0.0.3 on port p), and shows "webrtc gathered" once done or after 3 s.
func webrtcPage(p string) string {
	return `<!doctype html><html><body><div id="out">pending</div><script>
const pc = new RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.3:` + p + `"},
  {urls: "turn:127.0.0.3:` + p + `?transport=tcp", username: "u", credential: "p"}]});
pc.createDataChannel("d");
const done = () => { document.getElementById("out").textContent = "webrtc gathered"; };
pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") done(); };
pc.createOffer().then(o => pc.setLocalDescription(o));
setTimeout(done, 3000);
</script></body></html>`
}

// TestChromeWebRTC: behind the proxy, with the service's WebRTC policy, a page's ICE gathering
// sends nothing to a STUN server on a refused address (UDP would go around the proxy) and its
// TURN over TCP goes through the proxy, which refuses it. Without the policy the same page
// reaches the STUN server: the test can fail.
func TestChromeWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	if _, err := os.Stat(chromePath); err != nil {
		t.Skip("no chromium")
	}
	e := newProxyEnv(t)
	udp := testkit.NewUDPCanary(t, "127.0.0.3:"+e.port)
	page := "http://127.0.0.1:" + e.port + "/webrtc"
	if dom := runChrome(t, e.proxy.Addr(), page); !strings.Contains(dom, "webrtc gathered") {
		t.Fatalf("the page did not gather:\n%s", dom)
	}
	time.Sleep(500 * time.Millisecond)
	if n := udp.Packets(); n != 0 {
		t.Fatalf("%d UDP packets reached the canary past the proxy", n)
	}
	runChromeWebRTC(t, e.proxy.Addr(), page, "default")
	for end := time.Now().Add(3 * time.Second); udp.Packets() == 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if udp.Packets() == 0 {
		t.Fatal("without the policy no STUN packet reached the canary either: the test sees nothing")
	}
}
