// Package actors holds shotd's protoactor-go actors and the handles the rest of the service
// talks to them through:
//
//   - the renderer: a supervisor that hands each render to the browser with the fewest renders
//     in flight and the least background work, queues renders for a free slot, and replaces a
//     browser whose renders time out while the others' succeed (supervisor.go); under it, one
//     actor per Chrome process, which alone launches, recycles, replaces and stops it, and a
//     health probe that replaces a Chrome that stops answering (browser.go, health.go);
//   - one actor per account, under a router: rate, quota reservation and billing, concurrency,
//     queue and failure limits (accounts.go, account.go);
//   - the job actor: queued jobs and batches in bbolt, their storage and proxy credentials
//     sealed (jobsecrets.go), dispatched as the account's concurrency allows, each state change
//     one transaction (jobs.go);
//   - the webhook actor: it schedules deliveries and their retries, every attempt recorded
//     before package webhook sends it (webhooks.go).
//
// An actor's state is touched only in its Receive. Nothing blocks a mailbox on a render, a disk
// write or a network call: slow work runs in a goroutine that reports back with a message, and
// whatever such a goroutine starts (a Chrome) it hands over by message too. Every actor is
// supervised the same, declared way (supervision.go).
package actors
