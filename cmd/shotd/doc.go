// Command shotd is the screenshot service: `shotd serve` runs it (readiness reported to systemd,
// plans and log level reloaded on SIGHUP); `shotd admin` is a client of its admin API, backup of
// the database (and the stored files) included, and restores a backup into a stopped data_dir
// itself; `shotd config print|check` shows or checks a configuration before
// serve uses it; `shotd openapi` prints the OpenAPI document; `shotd version` prints the build.
package main
