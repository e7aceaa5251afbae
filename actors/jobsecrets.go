package actors

import (
	"encoding/json"
	"errors"

	"github.com/shotd/shotd"
)

// Secrets seals and opens the credentials of a job's options (storage, proxy);
// objstore.Sealer implements it.
type Secrets interface {
	SealOptions(o *shotd.Options) (*shotd.Options, error)
	OpenOptions(o *shotd.Options) error
}

// marshalOptions is the JSON of o for the job record, its credentials sealed: a record never
// holds them in clear (their fields are left out of JSON).
func marshalOptions(secrets Secrets, o *shotd.Options) ([]byte, error) {
	if o.HasSecrets() {
		if secrets == nil {
			return nil, errors.New("actors: a job with credentials but no sealer for them")
		}
		sealed, err := secrets.SealOptions(o)
		if err != nil {
			return nil, err
		}
		o = sealed
	}
	return json.Marshal(o)
}
