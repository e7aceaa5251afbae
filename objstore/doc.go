// Package objstore keeps rendered files in S3-compatible object storage (Amazon S3, MinIO, Ceph
// RGW, SeaweedFS, Garage, versitygw ...) through minio-go.
//
// It owns:
//
//   - Client: one bucket on one endpoint, with path-style or virtual-host addressing, a region,
//     TLS with optional extra roots, and every connection dialled through the egress guard (the
//     Dialer is required), so an endpoint on a private address is refused unless
//     network.allow_private lists it. Put retries what another try may fix; Presign makes GET
//     links; Download and Remove serve the service-wide bucket (store.Remote).
//   - Uploader: store=true of one render, to the bucket, path and credentials its options name.
//   - ObjectKey: the storage_path placeholders.
//   - Sealer: the AES-GCM key in data_dir (KeyFile) that seals the storage credentials a job keeps
//     in its record, so that they are never stored in clear.
//
// Errors are *shotd.Error: storage_failed for the storage's refusals and for no answer,
// host_not_allowed for an endpoint the guard refuses. Messages never carry a credential.
package objstore
