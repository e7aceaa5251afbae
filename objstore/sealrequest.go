package objstore

import (
	"encoding/json"

	"github.com/shotd/shotd"
)

// request is what sealRequest encrypts: the options that go with the page's requests, any of
// which may be a credential (an Authorization or API-key header, a session cookie).
type request struct {
	Headers       []shotd.Header `json:"h,omitempty"`
	Cookies       []shotd.Cookie `json:"c,omitempty"`
	Authorization string         `json:"a,omitempty"`
}

// sealRequest moves the headers, cookies and authorization of c, a copy of the caller's
// options, into c.SealedRequest.
func (s *Sealer) sealRequest(c *shotd.Options) error {
	if !c.HasRequestSecrets() {
		return nil
	}
	plain, err := json.Marshal(request{Headers: c.Headers, Cookies: c.Cookies, Authorization: c.Authorization})
	if err != nil {
		return err
	}
	b, err := s.seal(sealed{Secret: string(plain)})
	if err != nil {
		return err
	}
	c.SealedRequest, c.Headers, c.Cookies, c.Authorization = b, nil, nil, ""
	return nil
}

// openRequest restores in o what sealRequest sealed; another key is internal_error, as for a
// proxy's credentials.
func (s *Sealer) openRequest(o *shotd.Options) error {
	if o.SealedRequest == nil {
		return nil
	}
	const msg = "the headers, cookies and authorization of this job could not be read (the service's key changed); send the request again"
	v, err := s.open(o.SealedRequest)
	if err != nil {
		return shotd.Wrap(shotd.CodeInternalError, err, msg)
	}
	var r request
	if err := json.Unmarshal([]byte(v.Secret), &r); err != nil {
		return shotd.Wrap(shotd.CodeInternalError, err, msg)
	}
	o.Headers, o.Cookies, o.Authorization, o.SealedRequest = r.Headers, r.Cookies, r.Authorization, nil
	return nil
}
