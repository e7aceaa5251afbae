package httpd

import (
	"bytes"
	"errors"
	"strings"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/option"
	"github.com/shotd/shotd/sign"
	"github.com/valyala/fasthttp"
)

// principal is who a request acts for.
type principal struct {
	key     shotd.Key
	account shotd.Account
	plan    shotd.Plan
}

// queryParams reads the query string into Params, one entry per name with its values in order.
// Bytes are copied: fasthttp reuses its buffers after the handler returns.
func queryParams(args *fasthttp.Args) option.Params {
	var ps option.Params
	index := map[string]int{}
	args.VisitAll(func(k, v []byte) {
		name := string(k)
		if i, ok := index[name]; ok {
			ps[i].Values = append(ps[i].Values, string(v))
			return
		}
		index[name] = len(ps)
		ps = append(ps, option.Param{Name: name, Values: []string{string(v)}})
	})
	return ps
}

// accessKey finds the key in its three places; the query (or JSON body) value wins.
func accessKey(ctx *fasthttp.RequestCtx, ps option.Params) string {
	if v, ok := ps.Get("access_key"); ok && v != "" {
		return v
	}
	return headerKey(ctx)
}

// headerKey is the key of the X-Access-Key or Authorization: Bearer header.
func headerKey(ctx *fasthttp.RequestCtx) string {
	if v := ctx.Request.Header.Peek("X-Access-Key"); len(v) > 0 {
		return string(bytes.TrimSpace(v))
	}
	if v := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(v) > 7 && strings.EqualFold(string(v[:7]), "bearer ") {
		return string(bytes.TrimSpace(v[7:]))
	}
	return ""
}

// authenticate checks the key, the account, the signature and expires, in that order. ps is every
// parameter of the request (query and JSON body), as the signature covers them all.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx, ps option.Params) (*principal, error) {
	who, err := s.identify(accessKey(ctx, ps))
	if err != nil {
		return nil, err
	}
	if err := s.verify(ctx, who, ps); err != nil {
		return nil, err
	}
	return who, nil
}

// identify finds the key ak and its account and plan: the checks that need no parameter but
// the key, so that a request is refused before its body is parsed.
func (s *Server) identify(ak string) (*principal, error) {
	if ak == "" {
		return nil, shotd.Errorf(shotd.CodeAccessKeyRequired, "send your access key as access_key, X-Access-Key or Authorization: Bearer")
	}
	key, account, err := s.keys.Lookup(ak)
	switch {
	case errors.Is(err, shotd.ErrNotFound):
		return nil, shotd.Errorf(shotd.CodeAccessKeyInvalid, "the access key is unknown or revoked")
	case err != nil:
		return nil, shotd.Wrap(shotd.CodeServiceUnavailable, err, "the key store did not answer")
	case key.Revoked:
		return nil, shotd.Errorf(shotd.CodeAccessKeyInvalid, "the access key is unknown or revoked")
	case !account.EmailVerified:
		return nil, shotd.Errorf(shotd.CodeEmailNotVerified, "verify the account's email address before using its keys")
	}
	plan, ok := s.plans.Get(account.Plan)
	if !ok {
		return nil, shotd.Wrap(shotd.CodeInternalError, errors.New("account plan "+account.Plan+" is not configured"), "the account's plan is not configured")
	}
	return &principal{key: key, account: account, plan: plan}, nil
}

// verify checks the signature and expires of an identified request against all its parameters.
func (s *Server) verify(ctx *fasthttp.RequestCtx, who *principal, ps option.Params) error {
	var expires int64
	hasExpires := false
	for _, p := range ps {
		if p.Name != "expires" {
			continue
		}
		v, ferr := option.ParseOption(p)
		if ferr != nil {
			return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "expires: " + ferr.Message, Fields: []shotd.FieldError{*ferr}}
		}
		expires, hasExpires = int64(v.(int)), true
	}

	sig, signed := ps.Get("signature")
	// The path as sent, which the router matched: fasthttp's Path() is decoded and cleaned, and
	// /api/v1/files/..%2fjobs%2fx would verify a signature made for /api/v1/jobs/x.
	switch path := string(ctx.URI().PathOriginal()); {
	case signed && !sign.VerifySignature(who.key.SecretKey, path, ps, sig) && !s1Signed(ctx, path, who.key.SecretKey, sig):
		return shotd.Errorf(shotd.CodeSignatureInvalid, "the signature does not match this endpoint, its parameters and the key's secret")
	case !signed && who.key.RequireSignature:
		return shotd.Errorf(shotd.CodeSignatureRequired, "this key requires signed requests")
	}
	if hasExpires && s.now().Unix() > expires {
		return shotd.Errorf(shotd.CodeRequestExpired, "the request expired at %d", expires)
	}
	ctx.SetUserValue(verifiedKey, who.key.AccessKey) // its later refusals count against the key
	ctx.SetUserValue(accountKey, who.account.ID)
	return nil
}

// statusParams validates the query of a status endpoint: only the authentication parameters.
func statusParams(ps option.Params) error {
	var errs []shotd.FieldError
	for _, p := range ps {
		switch p.Name {
		case "access_key", "signature", "expires":
			if len(p.Values) > 1 {
				errs = append(errs, shotd.FieldError{Field: p.Name, Message: "given more than once"})
			}
		default:
			errs = append(errs, shotd.FieldError{Field: p.Name, Message: "not accepted by this endpoint; it takes access_key, signature and expires"})
		}
	}
	if len(errs) > 0 {
		return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: "invalid option " + errs[0].Field + ": " + errs[0].Message, Fields: errs}
	}
	return nil
}
