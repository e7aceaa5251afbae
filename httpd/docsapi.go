package httpd

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/valyala/fasthttp"
)

// /docs/api is the OpenAPI document as one readable page, rendered from the same data as
// /openapi.json (openAPIDoc), so the two cannot say different things. The page is self-contained:
// its style is inline and it loads nothing, no script, font or style from anywhere, so that it
// reads the same on an air-gapped host. It also carries the signing snippets of snippets/, the
// files that docs/api.md shows and that TestSigningSnippets runs.

//go:embed snippets/sign.py snippets/sign.js
var snippetFiles embed.FS

// Snippet is one signing snippet of the documentation.
type Snippet struct {
	Lang, File, Code string
}

// Snippets are the signing snippets, Python then Node.js.
func Snippets() []Snippet {
	var out []Snippet
	for _, s := range []struct{ lang, file string }{{"Python", "sign.py"}, {"Node.js", "sign.js"}} {
		b, err := snippetFiles.ReadFile("snippets/" + s.file)
		if err != nil {
			panic(err) // embedded at build time
		}
		out = append(out, Snippet{s.lang, s.file, string(b)})
	}
	return out
}

type apiPage struct {
	Title, Version, Description string
	Groups                      []apiGroup
	Webhooks                    []apiOp
	Options                     []apiParam
	Snippets                    []Snippet
}

type apiGroup struct {
	Tag, Description string
	Ops              []apiOp
}

type apiOp struct {
	ID, Method, Path, Summary, Description string
	Open                                   bool // no key needed
	Params                                 []apiParam
	Options                                []string // option parameters, as in the options table
	Body                                   *apiContent
	Responses                              []apiResponse
}

type apiParam struct {
	Anchor                                        string // the row's id, in the options table
	Name, In, Type, Allowed, Default, Description string
	Required                                      bool
}

type apiContent struct {
	Types   []string
	Schema  string
	Example string
}

type apiResponse struct {
	Status, Description string
	Content             *apiContent
	Codes               []shotd.CodeInfo
}

var apiDocsTmpl = template.Must(template.New("api").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shotd API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>` + docsStyle + `
pre{background:#f6f6f6;padding:.6rem;overflow:auto;font-size:13px;max-height:28rem}
.op{border:1px solid #ddd;border-radius:6px;padding:.2rem 1rem 1rem;margin:1.2rem 0}
.m{display:inline-block;min-width:3.4rem;font-weight:700;text-transform:uppercase}.m.get{color:#0a6b2d}.m.post{color:#8a4b00}
nav li{margin:.1rem 0}td code{white-space:nowrap}summary{cursor:pointer}</style></head>
<body><h1>{{.Title}} API reference <small>{{.Version}}</small></h1>
<p>{{.Description}}</p>
<p>Rendered from <a href="/openapi.json">/openapi.json</a>, which says the same for tools. See also
<a href="/docs/options">options</a> and <a href="/docs/errors">error codes</a>. Authenticate with
<code>access_key</code> in the query, <code>X-Access-Key</code> or <code>Authorization: Bearer</code>;
sign links as <a href="#signing">below</a>.</p>
<nav><ul>{{range .Groups}}{{range .Ops}}<li><a href="#{{.ID}}"><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code></a> {{.Summary}}</li>
{{end}}{{end}}<li><a href="#webhooks">Webhooks</a></li><li><a href="#options">Render options</a></li><li><a href="#signing">Signing in Python and Node.js</a></li></ul></nav>
{{range .Groups}}<h2>{{.Tag}}</h2>{{if .Description}}<p>{{.Description}}</p>{{end}}
{{range .Ops}}{{template "op" .}}{{end}}{{end}}
<h2 id="webhooks">Webhooks</h2>
<p>What the service POSTs to a job's or a batch's <code>webhook_url</code>.</p>
{{range .Webhooks}}{{template "op" .}}{{end}}
<h2 id="options">Render options</h2>
<p>Query parameters of the GET renders, members of the JSON object of the POST ones.</p>
{{template "params" .Options}}
<h2 id="signing">Signing in Python and Node.js</h2>
<p>A signed link: <code>signature</code> is the hex HMAC-SHA256, keyed with the secret key, of
<code>&lt;path&gt;?&lt;canonical query&gt;</code> (every parameter but <code>signature</code>, RFC 3986
encoded, sorted by name then value). A webhook delivery: <code>x-signature</code> is the hex
HMAC-SHA256 of <code>&lt;x-timestamp&gt;.&lt;raw body&gt;</code>.</p>
{{range .Snippets}}<h3 id="snippet-{{.File}}">{{.Lang}} <small>({{.File}})</small></h3>
<pre><code class="snippet" data-file="{{.File}}">{{.Code}}</code></pre>
{{end}}</body></html>
{{define "op"}}<section class="op" id="{{.ID}}"><h3><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code></h3>
<p><b>{{.Summary}}</b>{{if .Open}} (no key){{end}}</p>{{if .Description}}<p>{{.Description}}</p>{{end}}
{{if .Params}}<h4>Parameters</h4>{{template "params" .Params}}{{end}}
{{if .Options}}<p>And the {{len .Options}} <a href="#options">render options</a>.</p>{{end}}
{{with .Body}}<h4>Request body</h4>{{template "content" .}}{{end}}
<h4>Responses</h4><table><tr><th>Status</th><th>Meaning</th></tr>
{{range .Responses}}<tr><td>{{.Status}}</td><td>{{if .Codes}}error_code is one of:<ul>{{range .Codes}}<li><a href="/docs/errors#{{.Code}}"><code>{{.Code}}</code></a>{{if .Retryable}} (retry){{end}}: {{.Doc}}</li>{{end}}</ul>{{else}}{{.Description}}{{end}}
{{with .Content}}{{template "content" .}}{{end}}</td></tr>
{{end}}</table></section>{{end}}
{{define "params"}}<table><tr><th>Name</th><th>In</th><th>Type</th><th>Allowed</th><th>Default</th><th>Meaning</th></tr>
{{range .}}<tr{{if .Anchor}} id="{{.Anchor}}"{{end}}><td><code>{{.Name}}</code>{{if .Required}} (required){{end}}</td><td>{{.In}}</td><td>{{.Type}}</td><td>{{.Allowed}}</td><td>{{.Default}}</td><td>{{.Description}}</td></tr>
{{end}}</table>{{end}}
{{define "content"}}<p>{{range $i, $t := .Types}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}{{if .Schema}}: {{.Schema}}{{end}}</p>
{{if .Example}}<details><summary>Example</summary><pre>{{.Example}}</pre></details>{{end}}{{end}}
`))

// tagOrder is the order of the page's sections.
var tagOrder = []string{"render", "status", "health"}

// apiDocs renders the page of the document for publicURL.
func apiDocs(publicURL string) []byte {
	return renderDocs(apiDocsTmpl, apiPageOf(openAPIDoc(publicURL)))
}

func apiPageOf(doc obj) apiPage {
	info := doc["info"].(obj)
	comps := doc["components"].(obj)
	shared := comps["parameters"].(obj)
	p := apiPage{Title: info["title"].(string), Version: info["version"].(string), Description: info["description"].(string), Snippets: Snippets()}
	tagDesc := map[string]string{}
	for _, t := range doc["tags"].([]any) {
		tm := t.(obj)
		d, _ := tm["description"].(string)
		tagDesc[tm["name"].(string)] = d
	}
	byTag := map[string][]apiOp{}
	paths := doc["paths"].(obj)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		for _, method := range []string{"get", "post"} {
			op, ok := paths[path].(obj)[method].(obj)
			if !ok {
				continue
			}
			tag := op["tags"].([]string)[0]
			byTag[tag] = append(byTag[tag], apiOpOf(comps, shared, method, path, op))
		}
	}
	for _, tag := range tagOrder {
		p.Groups = append(p.Groups, apiGroup{Tag: tag, Description: tagDesc[tag], Ops: byTag[tag]})
	}
	hooks := doc["webhooks"].(obj)
	for _, name := range slices.Sorted(maps.Keys(hooks)) {
		p.Webhooks = append(p.Webhooks, apiOpOf(comps, shared, "post", "webhook_url ("+name+")", hooks[name].(obj)["post"].(obj)))
	}
	for _, name := range optionOrder(shared) {
		ap := apiParamOf(shared[name].(obj))
		ap.Anchor = "option-" + name
		p.Options = append(p.Options, ap)
	}
	return p
}

// optionOrder is the option parameters in the option table's order.
func optionOrder(shared obj) []string {
	var out []string
	for _, spec := range option.OptionTable {
		if _, ok := shared[spec.Name]; ok {
			out = append(out, spec.Name)
		}
	}
	return out
}

func apiOpOf(comps, shared obj, method, path string, op obj) apiOp {
	o := apiOp{ID: op["operationId"].(string), Method: method, Path: path}
	o.Summary, _ = op["summary"].(string)
	o.Description, _ = op["description"].(string)
	if sec, ok := op["security"].([]any); ok && len(sec) == 0 {
		o.Open = true
	}
	params, _ := op["parameters"].([]any)
	for _, raw := range params {
		pm := resolve(comps, raw.(obj))
		name := pm["name"].(string)
		// An option as the shared table has it is listed by name only; one that differs (a
		// video's format) is shown in full.
		if sp, ok := shared[name].(obj); ok && pm["in"] == "query" && reflect.DeepEqual(sp["schema"], pm["schema"]) {
			o.Options = append(o.Options, name)
			continue
		}
		o.Params = append(o.Params, apiParamOf(pm))
	}
	if rb, ok := op["requestBody"].(obj); ok {
		o.Body = apiContentOf(rb["content"].(obj))
	}
	responses := op["responses"].(obj)
	for _, st := range slices.Sorted(maps.Keys(responses)) {
		r := resolve(comps, responses[st].(obj))
		ar := apiResponse{Status: st}
		ar.Description, _ = r["description"].(string)
		if codes, ok := r["x-error-codes"].([]string); ok {
			for _, c := range codes {
				ar.Codes = append(ar.Codes, shotd.Info(shotd.Code(c)))
			}
		} else if st, err := strconv.Atoi(st); err == nil && ar.Description == "" {
			ar.Description = fasthttp.StatusMessage(st)
		}
		if c, ok := r["content"].(obj); ok {
			ar.Content = apiContentOf(c)
		}
		o.Responses = append(o.Responses, ar)
	}
	return o
}

// resolve follows a $ref into components.
func resolve(comps, o obj) obj {
	r, ok := o["$ref"].(string)
	if !ok {
		return o
	}
	kind, name, _ := strings.Cut(strings.TrimPrefix(r, "#/components/"), "/")
	return comps[kind].(obj)[name].(obj)
}

func apiParamOf(pm obj) apiParam {
	sc, _ := pm["schema"].(obj)
	ap := apiParam{In: pm["in"].(string), Type: schemaType(sc)}
	ap.Name, _ = pm["name"].(string)
	ap.Description, _ = pm["description"].(string)
	ap.Required, _ = pm["required"].(bool)
	ap.Allowed = schemaAllowed(sc)
	if d, ok := sc["default"]; ok {
		ap.Default = jsonText(d)
	}
	return ap
}

func schemaType(sc obj) string {
	t, _ := sc["type"].(string)
	if t == "array" {
		if it, ok := sc["items"].(obj); ok {
			return "array of " + schemaType(it)
		}
	}
	if f, ok := sc["format"].(string); ok {
		t += " (" + f + ")"
	}
	return t
}

// schemaAllowed is a schema's enum or bounds, as text.
func schemaAllowed(sc obj) string {
	if it, ok := sc["items"].(obj); ok {
		sc = it
	}
	if e, ok := sc["enum"].([]string); ok {
		return strings.Join(e, ", ")
	}
	lo, hasLo := sc["minimum"]
	hi, hasHi := sc["maximum"]
	switch {
	case hasLo && hasHi:
		return fmt.Sprintf("%v to %v", lo, hi)
	case hasLo:
		return fmt.Sprintf("at least %v", lo)
	case hasHi:
		return fmt.Sprintf("at most %v", hi)
	}
	return ""
}

func apiContentOf(content obj) *apiContent {
	c := &apiContent{Types: slices.Sorted(maps.Keys(content))}
	// The JSON form's example when there is one: it shows the shape, a file's bytes do not.
	for _, t := range append([]string{"application/json"}, c.Types...) {
		m, ok := content[t].(obj)
		if !ok {
			continue
		}
		if s, ok := m["schema"].(obj); ok && c.Schema == "" {
			if r, ok := s["$ref"].(string); ok {
				c.Schema = strings.TrimPrefix(r, "#/components/schemas/")
			}
		}
		if ex, ok := m["example"]; ok {
			if s, ok := ex.(string); ok {
				c.Example = s
			} else {
				c.Example = jsonIndent(ex)
			}
			break
		}
	}
	return c
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonIndent(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// serveAPIDocs answers GET /docs/api with the page, made once per server.
func (s *Server) serveAPIDocs(ctx *fasthttp.RequestCtx) {
	s.apiDocsOnce.Do(func() { s.apiDocs = apiDocs(s.set.PublicURL) })
	ctx.SetContentType("text/html; charset=utf-8")
	// Nothing on the page loads anything: say so to the browser too.
	ctx.Response.Header.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	ctx.SetBody(s.apiDocs)
}
