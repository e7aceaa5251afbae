package httpd_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/shotd/shotd"
	"github.com/shotd/shotd/httpd"
)

// notBilledGate is the account actors with a settle that cannot bill a success, as the cluster's
// Gate answers when its quota ledger lost the render's reservation.
type notBilledGate struct{ httpd.Gate }

type notBilled struct{ error }

func (notBilled) NotBilled() bool { return true }
func (e notBilled) Unwrap() error { return e.error }

func (g notBilledGate) Settle(accountID string, ticket uint64, o shotd.Outcome) (shotd.LimitsSnapshot, error) {
	l, err := g.Gate.Settle(accountID, ticket, o)
	if err == nil && o == shotd.OutcomeSucceeded {
		err = notBilled{shotd.Wrap(shotd.CodeServiceUnavailable, errors.New("ledger"), "the quota reservation of this render was lost")}
	}
	return l, err
}

// TestSuccessNotBilled: a render whose success the gate could not bill is answered with the
// gate's error, never with the file: no success goes out unbilled.
func TestSuccessNotBilled(t *testing.T) {
	base := startServer(t, httpd.Settings{PublicURL: "http://shotd.test", MaxSourceBytes: 64 << 10, FileTTL: time.Hour},
		httpd.Deps{Keys: env.st.KeyCache(), Plans: env.plans, Renderer: env.renderer, Gate: notBilledGate{env.accounts},
			Files: env.st, Records: env.st})
	a := newAccount(t, "default", true)
	for _, rt := range []string{"by_format", "json"} {
		t.Run(rt, func(t *testing.T) {
			r := do(t, http.MethodGet, base+"/api/v1/screenshot?"+tiny(a, "response_type", rt).Encode(), nil, nil)
			wantError(t, r, 503, shotd.CodeServiceUnavailable)
		})
	}
}
