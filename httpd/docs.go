package httpd

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/valyala/fasthttp"
)

var docsStyle = `body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}
code{background:#f3f3f3;padding:0 .25rem;border-radius:3px}tr:target{background:#fff6d5}h2{margin-top:2rem}`

var errorDocsTmpl = template.Must(template.New("errors").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shotd error codes</title><style>` + docsStyle + `</style></head>
<body><h1>Error codes</h1>
<p>Every failed request answers a JSON object with <code>error_code</code>, <code>error_message</code>,
<code>documentation_url</code> and, for <code>invalid_options</code>, an <code>errors</code> list with one item per option.
Compare on <code>error_code</code>; the message may change. Answers with status 429 carry <code>Retry-After</code>.</p>
<table><tr><th>Code</th><th>Status</th><th>Retry</th><th>Meaning</th></tr>
{{range .}}<tr id="{{.Code}}"><td><a href="#{{.Code}}"><code>{{.Code}}</code></a></td><td>{{.Status}}</td><td>{{if .Retryable}}yes{{else}}no{{end}}</td><td>{{.Doc}}</td></tr>
{{end}}</table></body></html>`))

var optionDocsTmpl = template.Must(template.New("options").Funcs(template.FuncMap{
	"join": func(s []string) string { return strings.Join(s, ", ") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shotd options</title><style>` + docsStyle + `</style></head>
<body><h1>Render options</h1><p>Send them as query parameters (GET) or as a JSON object (POST) to <code>/api/v1/screenshot</code>.</p>
<table><tr><th>Name</th><th>Group</th><th>Type</th><th>Allowed</th><th>Default</th><th>Meaning</th></tr>
{{range .}}<tr id="{{.Name}}"><td><code>{{.Name}}</code></td><td>{{.Group}}</td><td>{{.Kind}}</td><td>{{if .Enum}}{{join .Enum}}{{else if .HasMax}}{{.Min}}..{{.Max}}{{else if .HasMin}}min {{.Min}}{{end}}</td><td>{{.Default}}</td><td>{{.Doc}}</td></tr>
{{end}}</table></body></html>`))

func renderDocs(t *template.Template, data any) []byte {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		panic(err) // the templates are static; a failure is a programming error caught by tests
	}
	return b.Bytes()
}

var (
	errorDocs  = renderDocs(errorDocsTmpl, shotd.Catalogue)
	optionDocs = renderDocs(optionDocsTmpl, option.OptionTable)
)

// docsIndex is the page at /docs: what documentation the service serves.
const docsIndex = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shotd documentation</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:760px;margin:2rem auto;padding:0 1rem}</style></head>
<body><h1>shotd documentation</h1>
<ul>
<li><a href="/docs/options">Options</a>: every render option, its type, bounds and default.</li>
<li><a href="/docs/errors">Errors</a>: every error code, its HTTP status, and whether to retry.</li>
<li><a href="/docs/api">API reference</a>: every endpoint with its parameters, answers, error codes and examples,
the webhooks, and signing in Python and Node.js; one page that loads nothing else.</li>
<li><a href="/openapi.json">OpenAPI 3.1 document</a>: the same for tools; load it into any OpenAPI viewer or code generator.</li>
<li><a href="/pressure">Pressure</a>: how loaded this node is (200 with room, 503 when full).</li>
</ul></body></html>
`

func serveDocsIndex(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString(docsIndex)
}

func serveErrorDocs(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(errorDocs)
}

func serveOptionDocs(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBody(optionDocs)
}
