// Package view holds the JSON shapes of jobs, batches and render results as clients see them:
// the public API's answers (httpd) and the body of a webhook (package webhook), which is the job
// record exactly as GET /api/v1/jobs/{id} shows it. Links to files are built from the public URL
// of the moment, never stored.
package view
