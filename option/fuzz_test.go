package option_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
)

// decodeQuery reads a raw query string the way a server does: pairs split on '&', name and value
// on the first '=', percent-decoded (a bad escape keeps its raw text), repeated names grouped
// into one Param in order of first appearance.
func decodeQuery(raw string) option.Params {
	var ps option.Params
	index := map[string]int{}
	for _, pair := range splitPairs(raw) {
		name, value := pair[0], pair[1]
		if i, ok := index[name]; ok {
			ps[i].Values = append(ps[i].Values, value)
			continue
		}
		index[name] = len(ps)
		ps = append(ps, option.Param{Name: name, Values: []string{value}})
	}
	return ps
}

// splitPairs returns the decoded name and value of every non-empty pair of raw.
func splitPairs(raw string) [][2]string {
	var out [][2]string
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		out = append(out, [2]string{unescape(k), unescape(v)})
	}
	return out
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// checkParsed holds the contract of ParseOptions for any input: options or a catalogue error of
// one of three codes, never both, never neither; the same input gives the same answer.
func checkParsed(t *testing.T, ps option.Params, lim option.Limits) {
	t.Helper()
	o, err := option.ParseOptions(ps, lim)
	o2, err2 := option.ParseOptions(ps, lim)
	if !reflect.DeepEqual(o, o2) || !reflect.DeepEqual(err, err2) {
		t.Fatalf("ParseOptions is not deterministic: %v / %v", err, err2)
	}
	if err != nil {
		if o != nil {
			t.Fatalf("ParseOptions returned options and an error: %v", err)
		}
		var e *shotd.Error
		if !errors.As(err, &e) {
			t.Fatalf("error %T is not a *shotd.Error: %v", err, err)
		}
		switch e.Code {
		case shotd.CodeInvalidOptions:
			if len(e.Fields) == 0 {
				t.Fatalf("invalid_options without fields: %v", e)
			}
		case shotd.CodeInvalidURL:
			if len(e.Fields) != 1 || e.Fields[0].Field != "url" {
				t.Fatalf("invalid_url does not name url: %+v", e.Fields)
			}
		case shotd.CodeContentTooLarge:
			if lim.MaxSourceBytes <= 0 {
				t.Fatalf("content_too_large without a limit: %v", e)
			}
		default:
			t.Fatalf("unexpected code %s: %v", e.Code, e)
		}
		if e.Message == "" {
			t.Fatalf("%s without a message", e.Code)
		}
		return
	}
	if o == nil {
		t.Fatal("ParseOptions returned neither options nor an error")
	}
	// A successful parse satisfies the cross rules.
	sources := 0
	for _, s := range []string{o.URL, o.HTML, o.Markdown} {
		if s != "" {
			sources++
		}
	}
	if sources != 1 {
		t.Fatalf("%d sources set; exactly one must be", sources)
	}
	if _, ok := shotd.ContentTypes[o.Format]; !ok {
		t.Fatalf("format %q has no content type", o.Format)
	}
	for _, s := range []string{o.HTML, o.Markdown, o.Styles, o.Scripts} {
		if lim.MaxSourceBytes > 0 && len(s) > lim.MaxSourceBytes {
			t.Fatalf("a %d-byte source passed a limit of %d", len(s), lim.MaxSourceBytes)
		}
	}
	for _, name := range o.Given {
		if !ps.Has(name) {
			t.Fatalf("Given lists %q, which was not sent", name)
		}
	}
	if o.HasClip && o.Selector == "" && (o.ClipWidth == 0 || o.ClipHeight == 0) {
		t.Fatalf("a clip without its size: %+v", o)
	}
	if o.Selector != "" && o.ClipWidth != 0 {
		t.Fatalf("selector with clip_width: %+v", o)
	}
	if o.Format == shotd.FormatGIF && o.VideoFPS > 15 {
		t.Fatalf("gif at %d fps", o.VideoFPS)
	}
}

// FuzzParseOptionsQuery feeds raw query strings, as httpd reads them, to ParseOptions.
func FuzzParseOptionsQuery(f *testing.F) {
	f.Fuzz(func(t *testing.T, query string, maxSource uint16) {
		checkParsed(t, decodeQuery(query), option.Limits{MaxSourceBytes: int(maxSource)})
	})
}

// FuzzParseOptionsJSON feeds raw POST bodies to ParamsFromJSON and then ParseOptions.
func FuzzParseOptionsJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, maxSource uint16) {
		lim := option.Limits{MaxSourceBytes: int(maxSource)}
		ps, err := option.ReadJSONParams(body, lim)
		if err != nil {
			var e *shotd.Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Fatalf("ReadJSONParams error is not a catalogue error: %v", err)
			}
			switch e.Code {
			case shotd.CodeInvalidRequest:
				if json.Valid(body) && len(body) > 0 && strings.TrimSpace(string(body))[0] == '{' {
					t.Fatalf("valid object refused as invalid_request: %v", err)
				}
			case shotd.CodeInvalidOptions, shotd.CodeContentTooLarge: // a limit of the stream
				if len(e.Fields) == 0 {
					t.Fatalf("%s without fields", e.Code)
				}
			default:
				t.Fatalf("ReadJSONParams error %v", err)
			}
			if ps != nil {
				t.Fatalf("ReadJSONParams returned params and an error")
			}
			return
		}
		if want, ok := referenceParams(body); !ok || !reflect.DeepEqual(ps, want) {
			t.Fatalf("ReadJSONParams = %+v, want %+v as encoding/json reads it", ps, want)
		}
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			if p.Invalid == "" && len(p.Values) == 0 && !p.Array {
				t.Fatalf("member %q has no value", p.Name)
			}
			names = append(names, p.Name)
		}
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("member names not sorted and unique: %q", names)
		}
		checkParsed(t, ps, option.Limits{MaxSourceBytes: int(maxSource)})
	})
}

// FuzzCanonicalQuery: the canonical query does not depend on the order of parameters or of
// repeated values, nor on how repeated values are grouped; it leaves out signature, uses only
// unreserved characters and escapes, and decodes back to the same pairs. Sign and
// VerifySignature agree, and any change to the secret, the signature or the parameters breaks
// the match.
func FuzzCanonicalQuery(f *testing.F) {
	f.Fuzz(func(t *testing.T, query, secret string, seed uint64) {
		pairs := splitPairs(query)
		grouped := decodeQuery(query)
		rng := rand.New(rand.NewPCG(seed, seed>>7|1))

		// Every pair on its own, shuffled.
		var flat option.Params
		for _, p := range pairs {
			flat = append(flat, option.Param{Name: p[0], Values: []string{p[1]}})
		}
		rng.Shuffle(len(flat), func(i, j int) { flat[i], flat[j] = flat[j], flat[i] })
		// Grouped, with params and each one's values shuffled, and a signature added.
		mixed := slices.Clone(grouped)
		for i := range mixed {
			vs := slices.Clone(mixed[i].Values)
			rng.Shuffle(len(vs), func(a, b int) { vs[a], vs[b] = vs[b], vs[a] })
			mixed[i].Values = vs
		}
		rng.Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
		mixed = append(mixed, option.Param{Name: "signature", Values: []string{"deadbeef"}})

		want := sign.CanonicalQuery(grouped)
		for name, ps := range map[string]option.Params{"flat": flat, "shuffled": mixed} {
			if got := sign.CanonicalQuery(ps); got != want {
				t.Fatalf("%s: canonical query %q, want %q", name, got, want)
			}
		}

		// Only unreserved characters, %XX escapes and the separators.
		for i := 0; i < len(want); i++ {
			c := want[i]
			switch {
			case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', strings.IndexByte("-._~&=", c) >= 0:
			case c == '%' && i+2 < len(want) && isUpperHex(want[i+1]) && isUpperHex(want[i+2]):
				i += 2
			default:
				t.Fatalf("canonical query %q has %q at %d", want, c, i)
			}
		}
		// It decodes back to the same multiset of pairs, signature left out.
		var sent, back []string
		for _, p := range pairs {
			if p[0] != "signature" {
				sent = append(sent, p[0]+"\x00"+p[1])
			}
		}
		if want != "" {
			for _, part := range strings.Split(want, "&") {
				k, v, ok := strings.Cut(part, "=")
				if !ok {
					t.Fatalf("pair %q without '='", part)
				}
				k, kerr := url.PathUnescape(k)
				v, verr := url.PathUnescape(v)
				if kerr != nil || verr != nil {
					t.Fatalf("pair %q does not decode", part)
				}
				back = append(back, k+"\x00"+v)
			}
		}
		slices.Sort(sent)
		slices.Sort(back)
		if !slices.Equal(sent, back) {
			t.Fatalf("canonical query %q decodes to %q, sent %q", want, back, sent)
		}

		const path = "/api/v1/screenshot"
		sig := sign.Sign(secret, path, grouped)
		if len(sig) != 64 || strings.Trim(sig, "0123456789abcdef") != "" {
			t.Fatalf("signature %q is not 64 lower-case hex digits", sig)
		}
		if sign.Sign(secret, "/api/v1/take", flat) != sig {
			t.Fatal("a screenshot signature does not hold on /api/v1/take")
		}
		for name, ok := range map[string]bool{
			"same params":        sign.VerifySignature(secret, path, grouped, sig),
			"reordered params":   sign.VerifySignature(secret, path, mixed, sig),
			"upper-case hex":     sign.VerifySignature(secret, path, flat, strings.ToUpper(sig)),
			"other secret":       !sign.VerifySignature(secret+"x", path, grouped, sig),
			"other path":         !sign.VerifySignature(secret, "/api/v1/usage", grouped, sig),
			"changed signature":  !sign.VerifySignature(secret, path, grouped, flipHex(sig)),
			"truncated":          !sign.VerifySignature(secret, path, grouped, sig[:63]),
			"param added":        !sign.VerifySignature(secret, path, append(slices.Clone(grouped), option.Param{Name: "x", Values: []string{""}}), sig),
			"empty signature":    !sign.VerifySignature(secret, path, grouped, ""),
			"signature excluded": sign.VerifySignature(secret, path, append(slices.Clone(flat), option.Param{Name: "signature", Values: []string{sig}}), sig),
		} {
			if !ok {
				t.Fatalf("signature check failed: %s", name)
			}
		}
	})
}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

// flipHex changes the first hex digit of sig.
func flipHex(sig string) string {
	c := byte('0')
	if sig[0] == '0' {
		c = '1'
	}
	return string(c) + sig[1:]
}

// referenceParams reads a JSON object of options with encoding/json, as ParamsFromJSON did before
// it became a bounded stream: the fuzz target checks that both agree below the limits.
func referenceParams(body []byte) (option.Params, bool) {
	var raw map[string]json.RawMessage
	if !json.Valid(body) || json.Unmarshal(body, &raw) != nil || raw == nil {
		return nil, false
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	slices.Sort(names)
	var ps option.Params
	for _, name := range names {
		v := bytes.TrimSpace(raw[name])
		p := option.Param{Name: name}
		scalar := func(v []byte) (string, bool) {
			var x any
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if d.Decode(&x) != nil {
				return "", false
			}
			switch x := x.(type) {
			case string:
				return x, true
			case json.Number:
				return x.String(), true
			case bool:
				return string(v), true
			}
			return "", false
		}
		switch {
		case string(v) == "null":
			continue
		case v[0] == '[':
			p.Array = true
			var items []json.RawMessage
			_ = json.Unmarshal(v, &items)
			for _, it := range items {
				s, ok := scalar(it)
				if !ok || it[0] != '"' {
					p.Invalid, p.Values = "must be an array of strings", nil
					break
				}
				p.Values = append(p.Values, s)
			}
		default:
			s, ok := scalar(v)
			if !ok {
				p.Invalid = "must be a string, number or boolean"
				break
			}
			p.Values = []string{s}
		}
		ps = append(ps, p)
	}
	return ps, true
}
