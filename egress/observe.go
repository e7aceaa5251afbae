package egress

import "errors"

// ObserveRefusals makes the guard call f with the reason of every refusal ("loopback",
// "private", "denied port", "denied host name", ...) that reaches a caller: a URL check, a
// webhook dial, or a page's request through the proxy. For /metrics; the reasons are a small
// fixed set, the addresses never appear.
func (g *Guard) ObserveRefusals(f func(reason string)) { g.refusals.Store(&f) }

// observe reports err to the observer when it is a refusal, and returns it.
func (g *Guard) observe(err error) error {
	if err == nil {
		return nil
	}
	f := g.refusals.Load()
	if f == nil {
		return err
	}
	var r *RefusedError
	if errors.As(err, &r) {
		(*f)(r.Reason)
	} else if IsRefused(err) {
		(*f)("other")
	}
	return err
}
