package httpd

import (
	"slices"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
	"github.com/valyala/fasthttp"
)

// s1Signed reports whether a render request carries a valid signature in ScreenshotOne's form
// (shotd.SignQueryS1), the fallback for their SDKs. Only GET: the form covers the query string
// alone, so a POST body's options would travel unsigned.
func s1Signed(ctx *fasthttp.RequestCtx, path, secret, sig string) bool {
	if !ctx.IsGet() || !slices.Contains(sign.RenderPaths, path) {
		return false
	}
	return sign.VerifyQueryS1(secret, string(ctx.URI().QueryString()), sig)
}

// animate serves GET and POST of /api/v1/animate, ScreenshotOne's animation endpoint, on the
// video engine of the screenshot endpoint: the same admission, limits and answers.
func (s *Server) animate(ctx *fasthttp.RequestCtx) { s.render(ctx, option.AnimateParams) }

// setAttachment writes the Content-Disposition of attachment_name on a file answer; the parser
// allowed only characters that need no escaping inside the quotes.
func setAttachment(ctx *fasthttp.RequestCtx, o *shotd.Options) {
	if n := o.AttachmentName; n != "" {
		ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+n+`"`)
	}
}
