// Package testkit holds the test fixtures that several packages share, all on loopback:
//
//   - Canary: listeners on addresses the egress guard must never reach, counting every
//     connection they accept.
//   - Receiver: a webhook receiver that records each delivery, checks its signature with code
//     of its own (VerifySignature: HMAC-SHA256 of "<x-timestamp>.<body>", written from the
//     documented scheme, not from sign.SignWebhook) and answers 500 on demand, for retries.
//   - Pages: a page server for renders, with a /slow page that holds its answer, counting loads.
//   - UpstreamProxy: an HTTP forward proxy that requires credentials and records what it is
//     asked for, standing in for a user's proxy (the proxy option).
//   - Leak checks: goroutines that outlive a test or a package (WaitGoroutines,
//     CheckGoroutines) and the Chrome processes and user-data dirs that must be gone after a
//     browser is closed (ProcessGone, GroupGone, DirEmpty).
//
// Pages and Receiver also serve internal/chaos, which drives the real service outside any test:
// NewPages and NewReceiver need no test, StartPages and StartReceiver close with theirs.
//
// It imports no package of the service but internal/proc, so that the internal tests of the
// service's packages can use it without an import cycle.
package testkit
