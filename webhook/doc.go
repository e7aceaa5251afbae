// Package webhook is one delivery of a job's webhook: the body (the job record as the public API
// shows it, plus the event), the headers, the signature and the POST through the egress guard,
// which follows no redirect. When to attempt, how often to retry and the record of every
// attempt belong to the webhook actor (actors.Webhooks), which calls Sender.Send.
package webhook
