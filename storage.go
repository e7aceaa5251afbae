package shotd

import "fmt"

// StorageTarget is where store=true uploads a render: the storage_* options.
type StorageTarget struct {
	Bucket         string
	Path           string // a template; see StoragePlaceholders
	Endpoint       string // "" = DefaultStorageEndpoint
	ACL            string // a canned ACL; "" = the bucket's default
	Class          string // upper case; "" = the bucket's default
	ReturnLocation bool
	// Credentials are never marshalled: a job record keeps them in Sealed, encrypted with a key
	// that never leaves data_dir (objstore.Sealer), or in cluster mode the cluster's key.
	Credentials StorageCredentials `json:"-"`
	Sealed      []byte             `json:",omitempty"`
}

// StorageCredentials are the storage_access_key_id and storage_secret_access_key of a request.
type StorageCredentials struct {
	AccessKeyID     Secret
	SecretAccessKey Secret
}

// Secret is a credential. It prints as [redacted] with every fmt verb and as JSON, so that a log
// line or an answer that shows a value by mistake never shows this one.
type Secret string

// Format redacts s for every verb of fmt.
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// MarshalText redacts s in JSON and zerolog fields.
func (Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Reveal returns the secret itself, for the one place that signs with it.
func (s Secret) Reveal() string { return string(s) }

// DefaultStorageEndpoint is the endpoint of store=true without storage_endpoint: Amazon S3.
const DefaultStorageEndpoint = "https://s3.amazonaws.com"
