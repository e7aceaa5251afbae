// Package cluster makes several shotd nodes one service. It owns the NATS server that every node
// embeds (nats-server as a library, JetStream on, fsync on every write, routes to the peers with
// mutual TLS off loopback), the in-process connection to it, and the replicated key-value buckets
// that hold what must be shared and exact:
//
//   - accounts and keys (Book), watched so that a change on one node reaches every node's key
//     cache within a second;
//   - the quota ledger (Ledger): one record per account and billing period, changed only by
//     compare-and-swap, holding the billed count and the live reservations, each with a lease
//     that its node renews while it renders and that anyone drops once it has expired;
//   - the records of stored files (Files), so that any node serves a file that another stored
//     in the shared S3 bucket;
//   - the members (node records with a TTL), for `shotd cluster status` and for Healthy, which
//     /readyz asks: a node whose heartbeats no longer reach the quorum takes no traffic;
//   - job and batch records (Jobs), each change one compare-and-swap, with their work in a
//     work-queue stream: a message per job to render and per webhook to deliver, pulled by a
//     node only while it has free render slots, delivered again to another node when the one
//     holding it dies. A job's quota is reserved in the ledger when it is queued, its render
//     claims a concurrency slot there, and its success is billed before it is shown. The ended
//     job of a sync render with a webhook (RecordFinished) is written already ended, its
//     webhook's message queued first, and is never rendered.
//
// DeleteAccount removes an account with its keys, jobs, batches and file records.
//
// Sweeper runs on one node at a time (a lease): it deletes the objects of expired files, and
// sweeps the ledger (sweepReservations): it drops the reservations of jobs that ended or are
// gone, forgets their bills, queues again a job that never started, and ends failed the job of a
// request that failed whose undo could not remove its record. A job is rendered by one node at a
// time: another live node's claim of it (a second message) waits.
//
// Every record and work message carries a version; a record of an unknown version is refused with a log line,
// never a crash, so nodes of two versions can run side by side during a rolling restart.
//
// Rates shares each account's rate and failure counts: every node publishes its own every
// half second over core NATS (no stream) and keeps the others' last reports, which Gate adds to
// an admission, so the per-minute and per-day limits are the account's, not each node's, without
// a round trip on the request path.
//
// Gate wraps the single node's admission (the account actors) with the ledger, so that the actors
// keep their in-memory path unchanged and the cluster adds only the shared, exact part.
package cluster
