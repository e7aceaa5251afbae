// Package config owns the service configuration: the TOML file, the embedded defaults, the
// SHOTD_* environment overrides and the one validation pass that runs before anything starts.
//
// The file is decoded in strict mode: an unknown key stops the service with its name and line,
// because a misspelled limit that silently keeps its default is worse than a refusal. Every
// error names the key and the problem, e.g. "browser.pool_size: must be between 1 and 64, got 0".
//
// example.toml (embedded as Example) is the annotated file of every key at its default; a test
// keeps it equal to Default. Every key is optional. The keys in brief: the listeners, admin
// token, data_dir, public_url, shutdown_timeout_seconds and metrics_auth at the top level;
// [browser] the Chrome pool (binary, size, renders per process, recycling, prewarm, isolation,
// sandbox, memory and heap bounds, slot wait, deadline grace); [network] the private addresses
// the egress guard lets through; [storage] the file lifetime and an optional S3 bucket;
// [limits] source, output and bulk sizes and the per-client allowances; [webhooks] retry delays
// and timeout; [blocking] the block lists and the consent script; [media] ffmpeg; [log] level
// and format; [plans.NAME] the plans.
//
// Plans: the embedded plans.default always exists; a [plans.NAME] table in the file overrides it
// or adds a plan, and every key the table omits takes the value of the embedded plans.default
// (features omitted: all features; features = []: none).
//
// Environment: SHOTD_<SECTION>_<KEY> (SHOTD_BROWSER_POOL_SIZE), SHOTD_<KEY> for top-level keys
// (SHOTD_LISTEN, SHOTD_DATA_DIR, SHOTD_SHUTDOWN_TIMEOUT_SECONDS) and SHOTD_PLANS_<NAME>_<KEY>
// (SHOTD_PLANS_DEFAULT_MONTHLY_QUOTA; NAME lower-cased, a new name adds a plan) override the file.
// Lists are comma-separated ("" is the empty list). An unknown variable under a known section
// prefix (SHOTD_BROWSER_POOLSIZE) is refused like an unknown file key; other SHOTD_* variables
// are left alone for tools that share the prefix.
package config
