package httpd_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestScreenshotOneContentArrays: fail_if_content_contains and fail_if_content_missing with
// several texts, as their JSON arrays and as repeated query parameters, rendered with Chrome:
// any one text found (contains) or absent (missing) fails the render with their code.
func TestScreenshotOneContentArrays(t *testing.T) {
	a := newAccount(t, "default", true)
	const html = "<p>Hello world, Access Denied</p>"
	cases := []struct {
		name   string
		kv     map[string]any
		status int
		code   string // their error_code; "" for a render
	}{
		{"contains the second", map[string]any{"fail_if_content_contains": []string{"captcha", "access denied"}}, 500, "content_contains_specified_string"},
		{"contains none", map[string]any{"fail_if_content_contains": []string{"captcha", "maintenance"}}, 200, ""},
		{"misses the second", map[string]any{"fail_if_content_missing": []string{"hello", "welcome"}}, 500, "content_missing_specified_string"},
		{"misses none", map[string]any{"fail_if_content_missing": []string{"HELLO", "world"}}, 200, ""},
		{"both pass", map[string]any{"fail_if_content_missing": []string{"hello", "world"}, "fail_if_content_contains": []string{"captcha", "blocked"}}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"access_key": a.key.AccessKey, "html": html, "viewport_width": 200, "viewport_height": 150, "format": "png"}
			for k, v := range c.kv {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			r := do(t, http.MethodPost, env.base+"/take", b, map[string]string{"Content-Type": "application/json"})
			if c.code != "" {
				wantS1Error(t, r, c.status, c.code)
				return
			}
			if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
				t.Fatalf("status %d %s: %.300s", r.status, r.header.Get("Content-Type"), r.body)
			}
		})
	}
	t.Run("repeated query parameters", func(t *testing.T) {
		q := s1Query(a.key.SecretKey, a.key.AccessKey, "html", html, "viewport_width", "200", "viewport_height", "150",
			"fail_if_content_contains", "captcha", "fail_if_content_contains", "Access Denied")
		wantS1Error(t, do(t, http.MethodGet, env.base+"/take?"+q, nil, nil), 500, "content_contains_specified_string")
	})
}
