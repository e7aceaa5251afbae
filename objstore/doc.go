// Package objstore keeps rendered files in S3-compatible object storage (Amazon S3, MinIO, Ceph
// RGW, SeaweedFS, Garage, versitygw ...) through minio-go.
//
// It owns:
//
//   - Client: one bucket on one endpoint, with path-style or virtual-host addressing, a region,
//     TLS with optional extra roots, and every connection dialled by the Dialer it is given
//     (required): the egress guard for a request's storage_endpoint, which refuses a private
//     address unless network.allow_private lists it; a dialer of the endpoint alone for the
//     service-wide bucket. Put retries what another try may fix; Presign makes GET
//     links; Download and Remove serve the service-wide bucket (store.Remote).
//   - Uploader: store=true of one render, to the bucket, path and credentials its options name.
//   - ObjectKey: the storage_path placeholders.
//   - Sealer: the AES-GCM key in data_dir (KeyFile) that seals the storage credentials a job keeps
//     in its record, so that they are never stored in clear.
//
// Errors are *shotd.Error: storage_failed for the storage's refusals and for no answer,
// host_not_allowed for an endpoint the guard refuses. Messages never carry a credential.
package objstore
