package httpd

import (
	"encoding/json"
	"strconv"

	"github.com/shotd/shotd"
	"github.com/valyala/fasthttp"
)

// errorBody is the error object of every failed request: code, message, documentation link
// and, for invalid_options only, one item per invalid option.
type errorBody struct {
	ErrorCode        shotd.Code         `json:"error_code"`
	ErrorMessage     string             `json:"error_message"`
	DocumentationURL string             `json:"documentation_url"`
	Errors           []shotd.FieldError `json:"errors,omitempty"`
}

// writeError answers err in the error shape. The catalogue decides the status; the cause is
// logged, never sent.
func writeError(ctx *fasthttp.RequestCtx, publicURL string, err error) {
	e := shotd.AsError(err)
	info := shotd.Info(e.Code)
	ctx.SetUserValue(errorCodeKey, string(info.Code))
	if isS1(ctx) {
		defer func() { // the same headers, log and count; their body and status
			st, b := newS1Error(publicURL, err)
			writeJSON(ctx, st, b)
		}()
	}
	msg := e.Message
	if msg == "" {
		msg = info.Doc
	}
	body := errorBody{
		ErrorCode:        info.Code,
		ErrorMessage:     msg,
		DocumentationURL: publicURL + "/docs/errors#" + string(info.Code),
	}
	if info.Code == shotd.CodeInvalidOptions {
		body.Errors = e.Fields
		if body.Errors == nil {
			body.Errors = []shotd.FieldError{}
		}
	}
	if info.Status == fasthttp.StatusTooManyRequests {
		ra := e.RetryAfter
		if ra < 1 {
			ra = 1
		}
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(ra))
	}
	ctx.Response.Header.Del("Content-Disposition")
	ctx.SetUserValue(codeKey, info.Code)
	writeJSON(ctx, info.Status, body)
	if e.Cause != nil {
		logOf(ctx).Warn().Err(e.Cause).Str("code", string(info.Code)).Msg("request failed")
	}
}

// writeJSON answers v as JSON with status.
func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = fasthttp.StatusInternalServerError, []byte(`{"error_code":"internal_error","error_message":"internal error","documentation_url":""}`)
	}
	ctx.Response.ResetBody()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}
