package httpd

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// TestParseErrorLogged: a request fasthttp could not read gets the error shape, and its
// X-Reference-Id appears in a log line, as every answer's does.
func TestParseErrorLogged(t *testing.T) {
	var buf bytes.Buffer
	s := &Server{log: zerolog.New(&buf), set: Settings{PublicURL: "http://shotd.test"}}
	var ctx fasthttp.RequestCtx
	s.parseError(&ctx, errors.New("cannot parse the request line"))
	ref := string(ctx.Response.Header.Peek("X-Reference-Id"))
	if ref == "" || ctx.Response.StatusCode() != 400 || !bytes.Contains(ctx.Response.Body(), []byte(`"invalid_request"`)) {
		t.Fatalf("answer %d ref %q: %s", ctx.Response.StatusCode(), ref, ctx.Response.Body())
	}
	if line := buf.String(); !strings.Contains(line, `"ref":"`+ref+`"`) || !strings.Contains(line, `"status":400`) {
		t.Fatalf("log %q lacks the reference id %s or the status", line, ref)
	}
}
