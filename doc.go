// Package shotd holds the domain of the screenshot service, shared by every other package:
//
//   - render options: the option table, their parsing from a query or a JSON body, defaults,
//     bounds and cross rules, device presets, the ScreenshotOne options and animate names,
//     the storage and proxy options, the render time budget and the response-cache key;
//   - signatures: the canonical query and HMAC of the api-v1 form, and ScreenshotOne's form;
//   - accounts, keys and plans, and admission: what a request asks of its account and the
//     answer that lets it in;
//   - jobs and batches with their states, stored files and render results, usage counts and
//     billing periods, and what the render pool reports of a browser;
//   - the error catalogue (code, HTTP status, retryable, one-line doc).
//
// It does no I/O; every other package depends on it and it depends on none of them.
package shotd
