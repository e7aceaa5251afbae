// Package store owns the bbolt database of the service (dataDir/shotd.db) and the rendered files:
// accounts, keys, jobs (with what a restart needs to resume them and their webhook deliveries),
// batches, files, the response cache, usage per billing period and per day, and small metadata,
// one source file per bucket family. Files live beside the database in data_dir/files, or in the
// service's own S3 bucket once UseRemote is set. The sweeper deletes what expired (files, cache
// entries, finished jobs and batches past their retention) and what a crash left behind; Backup
// streams a consistent copy of the database, BackupArchive one with the stored files, and
// Restore installs either into a stopped data directory (restore.go).
//
// The database records its SchemaVersion in the meta bucket (schema.go); Open refuses one written
// by a newer shotd (ErrNewerSchema) before writing anything to it.
//
// The records it reads and writes are the root package's types (shotd.Job, shotd.FileRecord,
// ...); where the stored form differs, as a job record keeps the webhook fields that shotd.Job
// leaves out of JSON, a private type is the stored one. Values are JSON. Every mutation is one
// bbolt Update, so a crash leaves either the old or the new record, never half of one. Updates
// may be shared: new jobs, job updates, a render's file records and usage counts written while
// another of them commits share the next commit (group.go), each returning once it is on disk,
// so that async accepts are not one fsync each, one at a time, nor wait for the renders' own.
//
// The KeyCache in front of the keys and accounts serves the authentication hot path from memory.
// Store mutations invalidate it synchronously after they commit, so a revoked key or a changed
// account is seen by the very next lookup; there is no TTL to wait for.
//
// Errors: shotd.ErrNotFound (the module's one not-found error), ErrConflict, ErrRevoked,
// ErrLocked, ErrNewerSchema and ErrBadBackup are plain sentinels, returned wrapped (test with
// errors.Is), not catalogue errors, because the code they map to depends on the caller: an
// unknown access key is access_key_invalid on the public API but not_found on the admin API.
package store
