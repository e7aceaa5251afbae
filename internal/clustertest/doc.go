// Package clustertest runs shotd as a cluster of three processes of the built binary on
// loopback, with the S3 test server, and checks the cluster's promises under load while a node
// is killed: an account never gets more successes than its quota, every node reports the same
// usage, its renders never exceed its concurrency at once, and no reservation is left after.
//
// `go test` runs a short load; with SHOTD_TEST_CLUSTER_LONG=1 (make cluster-test) it runs a longer
// one and prints its figures.
package clustertest
