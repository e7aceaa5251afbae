package httpd_test

import (
	"context"
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mafredri/cdp"
	"github.com/mafredri/cdp/protocol/network"
	cdppage "github.com/mafredri/cdp/protocol/page"
	"github.com/mafredri/cdp/protocol/runtime"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
)

// TestAPIDocsPage renders /docs/api and checks that it shows every operation of the document
// with its method and path, every option with its type, bounds and default, the error codes
// each operation lists, and that it loads nothing from anywhere: no script, no stylesheet or
// font link, no image, and a Content-Security-Policy that would block them. /docs links it.
func TestAPIDocsPage(t *testing.T) {
	_, served := openAPIValidator(t)
	ops := documentOperations(t, served)
	r := do(t, "GET", env.base+"/docs/api", nil, nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("/docs/api: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	page := string(r.body)
	section := func(id string) string {
		i := strings.Index(page, `<section class="op" id="`+id+`">`)
		if i < 0 {
			return ""
		}
		end := strings.Index(page[i:], "</section>")
		return page[i : i+end]
	}
	for id, op := range ops {
		s := section(id)
		if s == "" {
			t.Errorf("operation %s is not on the page", id)
			continue
		}
		if !strings.Contains(s, ">"+strings.ToLower(op.method)+"</span> <code>"+op.path+"</code>") {
			t.Errorf("operation %s: %s %s not shown", id, op.method, op.path)
		}
		for st, resp := range op.responses {
			if !strings.Contains(s, "<td>"+st+"</td>") {
				t.Errorf("operation %s: status %s not shown", id, st)
			}
			for _, c := range resp.Codes {
				if !strings.Contains(s, `href="/docs/errors#`+c+`"`) {
					t.Errorf("operation %s: code %s not shown", id, c)
				}
			}
		}
	}
	for _, hook := range []string{"jobEnded", "batchDone"} {
		if section(hook) == "" {
			t.Errorf("webhook %s is not on the page", hook)
		}
	}
	// Options: a row each, with the bounds and default of the table.
	for _, s := range option.OptionTable {
		if !strings.Contains(page, `<tr id="option-`+s.Name+`"><td><code>`+s.Name+`</code>`) {
			t.Errorf("option %s has no row", s.Name)
		}
	}
	row := regexp.MustCompile(`<tr id="option-viewport_width">.*</tr>`).FindString(page)
	if vw, _ := option.LookupOption("viewport_width"); !strings.Contains(row, "<td>integer</td>") || !strings.Contains(row, "<td>"+vw.Default+"</td>") ||
		!strings.Contains(row, " to ") {
		t.Errorf("viewport_width row without its type, bounds or default: %s", row)
	}
	// Examples of the render answer and of an error.
	if !strings.Contains(page, html.EscapeString(`"file_id": "f_8ZkqT3nWcQ2vR7xYbL1mAg"`)) ||
		!strings.Contains(page, html.EscapeString(`"error_code": "`+string(shotd.CodeAccessKeyRequired)+`"`)) {
		t.Error("the examples are not on the page")
	}
	// Self-contained: nothing that would load anything.
	// Text is escaped, so a tag here is markup.
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", " src=", "<style"} {
		if n := strings.Count(strings.ToLower(page), bad); n > 0 && (bad != "<style" || n > 1) {
			t.Errorf("the page contains %q", bad)
		}
	}
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	for _, bad := range []string{"@import", "url(", "@font-face"} {
		if len(style) < 2 || strings.Contains(style[1], bad) {
			t.Errorf("the style loads something (%s)", bad)
		}
	}
	idx := do(t, "GET", env.base+"/docs", nil, nil)
	if !strings.Contains(string(idx.body), `href="/docs/api"`) {
		t.Error("/docs does not link /docs/api")
	}
}

// TestAPIDocsInChromium opens /docs/api in real Chromium: the page is the only request it makes
// (it works offline), and the browser's DOM holds a section per operation of the document, the
// options table and the two signing snippets.
func TestAPIDocsInChromium(t *testing.T) {
	_, served := openAPIValidator(t)
	ops := documentOperations(t, served)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := launchBrowser(ctx, t)
	if err := c.Network.Enable(ctx, network.NewEnableArgs()); err != nil {
		t.Fatal(err)
	}
	sent, err := c.Network.RequestWillBeSent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sent.Close()
	loadPage(ctx, t, c, env.base+"/docs/api")
	const script = `JSON.stringify({
		ops: [...document.querySelectorAll("section.op")].map(s => s.id),
		options: document.querySelectorAll("#options + p + table tr[id^=option-]").length,
		snippets: [...document.querySelectorAll("pre code.snippet")].map(c => c.dataset.file),
		resources: performance.getEntriesByType("resource").length,
	})`
	res, err := c.Runtime.Evaluate(ctx, runtime.NewEvaluateArgs(script).SetReturnByValue(true))
	if err != nil || res.ExceptionDetails != nil {
		t.Fatalf("evaluate: %v %v", err, res.ExceptionDetails)
	}
	var text string
	var got struct {
		Ops       []string
		Options   int
		Snippets  []string
		Resources int
	}
	if err := json.Unmarshal(res.Result.Value, &text); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatal(err)
	}
	for id := range ops {
		if !slices.Contains(got.Ops, id) {
			t.Errorf("operation %s: no section in the DOM", id)
		}
	}
	if got.Options != len(option.OptionTable) || !slices.Equal(got.Snippets, []string{"sign.py", "sign.js"}) || got.Resources != 0 {
		t.Errorf("DOM: %d option rows (want %d), snippets %v, %d resources loaded", got.Options, len(option.OptionTable), got.Snippets, got.Resources)
	}
	// The page itself, and nothing else. Every request of the page is sent before its load
	// event, which came after them on the same connection: their events are buffered by now.
	var urls []string
	for {
		select {
		case <-sent.Ready():
			ev, err := sent.Recv()
			if err != nil {
				t.Fatal(err)
			}
			urls = append(urls, ev.Request.URL)
			continue
		default:
		}
		break
	}
	if !slices.Equal(urls, []string{env.base + "/docs/api"}) {
		t.Errorf("the page requested %v, want itself only", urls)
	}
}

// loadPage navigates c to u and returns once the page's load event fired.
func loadPage(ctx context.Context, t *testing.T, c *cdp.Client, u string) {
	t.Helper()
	loaded, err := c.Page.LoadEventFired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	if _, err := c.Page.Navigate(ctx, cdppage.NewNavigateArgs(u)); err != nil {
		t.Fatal(err)
	}
	if _, err := loaded.Recv(); err != nil {
		t.Fatal(err)
	}
}
