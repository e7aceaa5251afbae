// Package s3test runs a real S3 server for tests: versitygw (github.com/versity/versitygw,
// Apache-2.0) with its posix backend, on 127.0.0.1 and a temporary directory, never a mock of
// the protocol. The binary is built once from the Go module proxy into the user cache directory
// (SHOTD_TEST_VERSITYGW names a ready binary instead), so the first test run takes a few minutes
// longer than the next ones.
package s3test
