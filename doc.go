// Package shotd holds the nouns and contracts of the screenshot service, shared by every other
// package:
//
//   - Options, one validated render request (package option builds it), and Output, what a
//     render returns, with its Metadata and Slices;
//   - accounts, keys and plans, and admission: what a request asks of its account and the
//     answer that lets it in;
//   - jobs and batches with their states, stored files and render results, usage counts and
//     billing periods, the render time budget, and what the render pool reports of a browser;
//   - the error catalogue (code, HTTP status, retryable, one-line doc).
//
// It does no I/O and no parsing; every other package depends on it and it depends on none of
// them.
package shotd
