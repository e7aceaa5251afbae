// Package store owns the bbolt database of the service (dataDir/shotd.db) and the rendered files
// beside it: accounts, keys, jobs, batches, files, the response cache, usage and small metadata,
// one file per bucket family. The records it reads and writes are the root package's types
// (shotd.Job, shotd.FileRecord, ...); where the stored form differs, as a job record keeps the
// webhook fields that shotd.Job leaves out of JSON, a private type is the stored one. Values are
// JSON. Every mutation is one bbolt Update, so a crash leaves either the old or the new record,
// never half of one.
//
// The KeyCache in front of the keys and accounts serves the authentication hot path from memory.
// Store mutations invalidate it synchronously after they commit, so a revoked key or a changed
// account is seen by the very next lookup; there is no TTL to wait for.
//
// Errors: ErrNotFound and ErrConflict (wrapped, test with errors.Is) are plain sentinels, not
// catalogue errors, because the code they map to depends on the caller: an unknown access key is
// access_key_invalid on the public API but not_found on the admin API.
package store
