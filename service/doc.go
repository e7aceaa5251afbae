// Package service wires shotd: Open starts everything that serving takes from a configuration
// (the preflight of the browser, ffmpeg and filter lists; the store and its first-start
// bootstrap of the admin token and default key; the sweep of what a killed run left; metrics;
// the egress guard and its proxy; the memory cgroups of Chrome; S3 storage; block lists; the
// browser pool; the account, job and webhook actors; the public and admin HTTP servers), Reload
// applies a new reading of the configuration (plans, log level), and Close stops it in order,
// each stage on a deadline of its own. It composes the one render pipeline: the browser pool,
// metered (metrics.Meter), then store=true's upload (objstore.Uploader.Wrap), for the public API
// and the job actor alike; the same uploaders store a response-cache hit of a store=true request
// (objstore.Uploader.UploadStored), which renders nothing. Options vary what a config file cannot
// say (logger, listeners, resolver, ...). `shotd serve`, the HTTP tests and the bench open the
// same Service, so that what they run and measure is what production runs.
package service
