package httpd_test

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
)

// snippetRunners run a signing snippet with a driver appended: "sign" prints the signed link of
// SHOTD_BASE, SHOTD_PATH and SHOTD_PARAMS ([[name, value], ...]) with SHOTD_SECRET; "verify"
// prints ok or refused for the delivery of SHOTD_TS, SHOTD_SIG and the body on stdin.
var snippetRunners = map[string]struct {
	fence, interpreter, ext, driver string
}{
	"sign.py": {"python", "python3", ".py", `
import json, os, sys
if sys.argv[1] == "sign":
    print(signed_url(os.environ["SHOTD_BASE"], os.environ["SHOTD_PATH"], json.loads(os.environ["SHOTD_PARAMS"]), os.environ["SHOTD_SECRET"]))
else:
    print("ok" if verify_webhook(os.environ["SHOTD_SECRET"], os.environ["SHOTD_TS"], os.environ["SHOTD_SIG"], sys.stdin.buffer.read()) else "refused")
`},
	"sign.js": {"js", "node", ".js", `
const e = process.env;
if (process.argv[2] === "sign") console.log(signedURL(e.SHOTD_BASE, e.SHOTD_PATH, JSON.parse(e.SHOTD_PARAMS), e.SHOTD_SECRET));
else console.log(verifyWebhook(e.SHOTD_SECRET, e.SHOTD_TS, e.SHOTD_SIG, require("node:fs").readFileSync(0)) ? "ok" : "refused");
`},
}

// TestSigningSnippets takes the Python and Node.js snippets from docs/api.md, checks that they
// are the files /docs/api shows, and runs each against this real service: the links it signs
// render on a key that requires signatures, and it accepts a real webhook delivery and refuses
// it altered.
func TestSigningSnippets(t *testing.T) {
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(do(t, "GET", env.base+"/docs/api", nil, nil).body)

	a := newAccount(t, "jobs", true)
	strict, err := env.st.CreateKey(a.acc.ID, "strict", true)
	if err != nil {
		t.Fatal(err)
	}
	// One real delivery, signed with a's secret.
	rc := newReceiver(t, a.key.SecretKey, 0)
	id := submit(t, a.key.AccessKey, map[string]any{"html": "<p>hook</p>", "viewport_width": 200, "viewport_height": 100, "webhook_url": rc.URL()})
	waitDelivered(t, a.key.AccessKey, id)
	ds := rc.Deliveries()
	if len(ds) != 1 || ds[0].Err != nil {
		t.Fatalf("deliveries %+v", ds)
	}
	d := ds[0]

	for _, s := range httpd.Snippets() {
		t.Run(s.File, func(t *testing.T) {
			run := snippetRunners[s.File]
			fenced := regexp.MustCompile("(?s)\n```" + run.fence + "\n(.*?)```\n").FindSubmatch(md)
			if fenced == nil {
				t.Fatalf("docs/api.md has no ```%s block", run.fence)
			}
			code := string(fenced[1])
			if code != s.Code {
				t.Fatalf("the %s block of docs/api.md is not httpd/snippets/%s: copy the file into it", run.fence, s.File)
			}
			shown := regexp.MustCompile(`(?s)<code class="snippet" data-file="` + regexp.QuoteMeta(s.File) + `">(.*?)</code>`).FindStringSubmatch(page)
			if shown == nil || html.UnescapeString(shown[1]) != code {
				t.Fatalf("/docs/api does not show %s as it is", s.File)
			}
			bin, err := exec.LookPath(run.interpreter)
			if err != nil {
				t.Fatalf("%s is not installed, and this test runs the %s snippet with it: run make deps (scripts/install-deps.sh installs it)", run.interpreter, s.Lang)
			}
			script := filepath.Join(t.TempDir(), "snippet"+run.ext)
			if err := os.WriteFile(script, []byte(code+run.driver), 0o600); err != nil {
				t.Fatal(err)
			}
			exe := func(mode string, stdin []byte, env ...string) string {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), bin, script, mode)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stdin = bytes.NewReader(stdin)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", run.interpreter, mode, err, stderr.Bytes())
				}
				return strings.TrimSpace(string(out))
			}

			// Signed links, with what must be encoded: spaces, &, =, +, /, a comma list, UTF-8.
			expires := strconv.FormatInt(time.Now().Add(5*time.Minute).Unix(), 10)
			params := [][2]string{
				{"access_key", strict.AccessKey}, {"html", "<p>Grüße & 100% = a+b / ~ it's (café)* ☕!</p>"},
				{"viewport_width", "200"}, {"viewport_height", "100"}, {"hide_selectors", "h1,.ad"}, {"expires", expires},
			}
			pj, _ := json.Marshal(params)
			for _, path := range []string{"/api/v1/screenshot", "/api/v1/take"} {
				link := exe("sign", nil, "SHOTD_BASE="+env.base, "SHOTD_PATH="+path, "SHOTD_PARAMS="+string(pj), "SHOTD_SECRET="+strict.SecretKey)
				if !strings.HasPrefix(link, env.base+path+"?") || !strings.Contains(link, "&signature=") {
					t.Fatalf("signed link %q", link)
				}
				r := do(t, http.MethodGet, link, nil, nil)
				if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
					t.Fatalf("%s: the signed link answered %d %s", path, r.status, r.body)
				}
				// The signature covers the parameters: one changed is refused.
				wantError(t, do(t, http.MethodGet, strings.Replace(link, "viewport_width=200", "viewport_width=201", 1), nil, nil),
					403, shotd.CodeSignatureInvalid)
			}

			verify := func(body []byte, ts, sig string) string {
				return exe("verify", body, "SHOTD_SECRET="+a.key.SecretKey, "SHOTD_TS="+ts, "SHOTD_SIG="+sig)
			}
			ts, sig := d.Header.Get("x-timestamp"), d.Header.Get("x-signature")
			if got := verify(d.Body, ts, sig); got != "ok" {
				t.Fatalf("the real delivery: %q, want ok", got)
			}
			altered := bytes.Replace(d.Body, []byte(`"succeeded"`), []byte(`"failed"`), 1)
			for name, c := range map[string][3]string{
				"altered body":      {string(altered), ts, sig},
				"other timestamp":   {string(d.Body), strconv.FormatInt(time.Now().Unix()+1, 10), sig},
				"no signature":      {string(d.Body), ts, ""},
				"garbled signature": {string(d.Body), ts, "zz" + sig[2:]},
			} {
				if got := verify([]byte(c[0]), c[1], c[2]); got != "refused" {
					t.Errorf("%s: %q, want refused", name, got)
				}
			}
		})
	}
}
