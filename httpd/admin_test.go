package httpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
	"github.com/shotd/shotd/internal/storetest"
)

func adminDo(t *testing.T, method, path, body, token string) answer {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	return do(t, method, env.admin+path, []byte(body), h)
}

func decodeJSON(t *testing.T, a answer, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("status %d: body is not JSON (%d bytes)", a.status, len(a.body))
	}
}

func TestAdminAPI(t *testing.T) {
	// Create an account, read it with usage, change it, then manage its keys.
	r := adminDo(t, "POST", "/admin/v1/accounts", `{"email":"admin-test@example.test","plan":"default","email_verified":false}`, adminToken)
	if r.status != 201 {
		t.Fatalf("create account: %d %s", r.status, r.body)
	}
	var acc shotd.Account
	decodeJSON(t, r, &acc)
	if acc.ID == "" || acc.Email != "admin-test@example.test" || acc.EmailVerified || acc.CreatedAt.IsZero() {
		t.Fatalf("account %+v", acc)
	}

	r = adminDo(t, "GET", "/admin/v1/accounts/"+acc.ID, "", adminToken)
	var got map[string]any
	decodeJSON(t, r, &got)
	usage, ok := got["usage"].(map[string]any)
	if r.status != 200 || !ok || usage["quota"] == nil {
		t.Fatalf("get account: %d, usage %v", r.status, got["usage"])
	}

	r = adminDo(t, "PATCH", "/admin/v1/accounts/"+acc.ID, `{"email_verified":true,"bonus_screenshots":5,"plan":"basic"}`, adminToken)
	decodeJSON(t, r, &acc)
	if r.status != 200 || !acc.EmailVerified || acc.BonusScreenshots != 5 || acc.Plan != "basic" {
		t.Fatalf("patch account: %d %+v", r.status, acc)
	}

	r = adminDo(t, "POST", "/admin/v1/accounts/"+acc.ID+"/keys", `{"name":"ci","require_signature":true}`, adminToken)
	var key shotd.Key
	decodeJSON(t, r, &key)
	if r.status != 201 || key.SecretKey == "" || key.AccessKey == "" || !key.RequireSignature || key.AccountID != acc.ID {
		t.Fatalf("create key: %d %+v", r.status, key)
	}

	r = adminDo(t, "GET", "/admin/v1/accounts/"+acc.ID+"/keys", "", adminToken)
	if r.status != 200 || bytes.Contains(r.body, []byte(key.SecretKey)) || !bytes.Contains(r.body, []byte(key.AccessKey)) {
		t.Fatalf("list keys: %d, secret shown or key missing", r.status)
	}

	r = adminDo(t, "PATCH", "/admin/v1/keys/"+key.AccessKey, `{"name":"deploy","require_signature":false}`, adminToken)
	var k2 shotd.Key
	decodeJSON(t, r, &k2)
	if r.status != 200 || k2.Name != "deploy" || k2.RequireSignature || k2.SecretKey != "" {
		t.Fatalf("patch key: %d %+v", r.status, k2)
	}
	// The key works on the public API (the plan change applies at once), then is revoked for good.
	if a := get(t, "/api/v1/usage", nil); a.status != 401 {
		t.Fatalf("usage without key: %d", a.status)
	}
	if a := do(t, "GET", env.base+"/api/v1/usage", nil, map[string]string{"X-Access-Key": key.AccessKey}); a.status != 200 {
		t.Fatalf("usage with new key: %d", a.status)
	}
	r = adminDo(t, "DELETE", "/admin/v1/keys/"+key.AccessKey, "", adminToken)
	if r.status != 204 {
		t.Fatalf("revoke: %d", r.status)
	}
	wantError(t, do(t, "GET", env.base+"/api/v1/usage", nil, map[string]string{"X-Access-Key": key.AccessKey}), 401, shotd.CodeAccessKeyInvalid)

	// The list comes in pages; the tests of the package made many accounts before this one.
	for after, found := "", false; !found; {
		r = adminDo(t, "GET", "/admin/v1/accounts?limit=20&after="+after, "", adminToken)
		var page struct {
			Accounts []struct{ ID string } `json:"accounts"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("list accounts: %d %s", r.status, r.body)
		}
		if len(page.Accounts) == 0 {
			t.Fatalf("account %s not listed", acc.ID)
		}
		for _, a := range page.Accounts {
			found = found || a.ID == acc.ID
		}
		after = page.Accounts[len(page.Accounts)-1].ID
	}
}

func TestAdminErrors(t *testing.T) {
	cases := []struct {
		name, method, path, body, token string
		status                          int
		code                            shotd.Code
	}{
		{"no token", "GET", "/admin/v1/accounts/x", "", "", 401, shotd.CodeAccessKeyRequired},
		{"empty bearer", "GET", "/admin/v1/accounts/x", "", " ", 401, shotd.CodeAccessKeyRequired},
		{"wrong token", "GET", "/admin/v1/accounts/x", "", "nope", 401, shotd.CodeAccessKeyInvalid},
		{"wrong token on a write", "POST", "/admin/v1/accounts", `{"email":"x@example.test","plan":"default"}`, "nope", 401, shotd.CodeAccessKeyInvalid},
		{"unknown account", "GET", "/admin/v1/accounts/acc_nope", "", adminToken, 404, shotd.CodeNotFound},
		{"unknown plan", "POST", "/admin/v1/accounts", `{"email":"x@example.test","plan":"gold"}`, adminToken, 400, shotd.CodeInvalidOptions},
		{"unknown field", "POST", "/admin/v1/accounts", `{"mail":"x@example.test"}`, adminToken, 400, shotd.CodeInvalidRequest},
		{"bad json", "PATCH", "/admin/v1/accounts/x", `{`, adminToken, 400, shotd.CodeInvalidRequest},
		{"negative bonus", "PATCH", "/admin/v1/accounts/default", `{"bonus_screenshots":-1}`, adminToken, 400, shotd.CodeInvalidOptions},
		{"key of unknown account", "POST", "/admin/v1/accounts/acc_nope/keys", `{"name":"x"}`, adminToken, 404, shotd.CodeNotFound},
		{"unknown key", "DELETE", "/admin/v1/keys/sk_nope", "", adminToken, 404, shotd.CodeNotFound},
		{"wrong method", "PUT", "/admin/v1/keys/sk_nope", "", adminToken, 405, shotd.CodeMethodNotAllowed},
		{"unknown path", "GET", "/admin/v2/nope", "", adminToken, 404, shotd.CodeNotFound},
		// Read by fasthttp before any handler: still the error shape, with a reference id.
		{"body over the limit", "POST", "/admin/v1/accounts", `{"email":"` + strings.Repeat("x", 1<<20) + `"}`, adminToken, 413, shotd.CodeContentTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := adminDo(t, c.method, c.path, c.body, c.token)
			wantError(t, r, c.status, c.code)
			if r.header.Get("X-Reference-Id") == "" {
				t.Error("no X-Reference-Id")
			}
		})
	}
}

func TestDashboard(t *testing.T) {
	r := do(t, http.MethodGet, env.admin+"/dashboard", nil, nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !bytes.Contains(r.body, []byte("/admin/v1/accounts")) {
		t.Fatalf("dashboard: %d %s", r.status, r.header.Get("Content-Type"))
	}
	if r.header.Get("X-Frame-Options") != "DENY" {
		t.Fatal("dashboard may be framed")
	}
}

func TestMetrics(t *testing.T) {
	get(t, "/api/v1/usage", nil) // one 401 at least
	r := do(t, http.MethodGet, env.admin+"/metrics", nil, nil)
	for _, want := range []string{`shotd_requests_total{route="/api/v1/usage",status="401"}`, "shotd_browsers_up 1"} {
		if r.status != 200 || !strings.Contains(string(r.body), want) {
			t.Fatalf("/metrics: %d, lacks %s", r.status, want)
		}
	}
}

// TestAdminAccountPages pages through 150 accounts of a store of their own: each page says where
// the next starts (next_after) until the last, and every account shows once.
func TestAdminAccountPages(t *testing.T) {
	st := storetest.Open(t, "")
	adm := httpd.NewAdmin(adminToken, "http://127.0.0.1", st, env.plans, nil, nil, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, adm.Serve, adm.Shutdown)
	base := "http://" + ln.Addr().String()
	for i := 0; i < 150; i++ {
		if _, err := st.CreateAccount(fmt.Sprintf("page%d@example.test", i), "default", true); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	after, pages := "", 0
	for {
		a := do(t, "GET", base+"/admin/v1/accounts?limit=60&after="+url.QueryEscape(after), nil, map[string]string{"Authorization": "Bearer " + adminToken})
		var page struct {
			Accounts  []shotd.Account `json:"accounts"`
			NextAfter *string         `json:"next_after"`
		}
		decodeJSON(t, a, &page)
		if a.status != 200 {
			t.Fatalf("page %d: %d %s", pages, a.status, a.body)
		}
		pages++
		for _, acc := range page.Accounts {
			if seen[acc.ID] {
				t.Fatalf("account %s on two pages", acc.ID)
			}
			seen[acc.ID] = true
		}
		if page.NextAfter == nil {
			break
		}
		if len(page.Accounts) != 60 || *page.NextAfter != page.Accounts[59].ID {
			t.Fatalf("page %d: %d accounts, next_after %q", pages, len(page.Accounts), *page.NextAfter)
		}
		after = *page.NextAfter
	}
	if pages != 3 || len(seen) != 150 {
		t.Fatalf("%d pages, %d accounts; want 3 pages of 150", pages, len(seen))
	}
	a := adminDo(t, "GET", "/admin/v1/plans", "", adminToken)
	var plans struct{ Plans []shotd.Plan }
	decodeJSON(t, a, &plans)
	if a.status != 200 || len(plans.Plans) != len(env.plans) || plans.Plans[0].Name == "" {
		t.Fatalf("plans: %d %s", a.status, a.body)
	}
}
