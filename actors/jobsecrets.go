package actors

import (
	"encoding/json"
	"errors"

	"github.com/shotd/shotd"
)

// Secrets seals and opens the storage credentials of a job's options; objstore.Sealer
// implements it.
type Secrets interface {
	SealOptions(o *shotd.Options) (*shotd.Options, error)
	OpenOptions(o *shotd.Options) error
}

// marshalOptions is the JSON of o for the job record, its storage credentials sealed: a record
// never holds them in clear (shotd.StorageTarget leaves them out of JSON).
func (a *jobActor) marshalOptions(o *shotd.Options) ([]byte, error) {
	if o.Store {
		if a.cfg.Secrets == nil {
			return nil, errors.New("actors: store=true job without a sealer for its credentials")
		}
		sealed, err := a.cfg.Secrets.SealOptions(o)
		if err != nil {
			return nil, err
		}
		o = sealed
	}
	return json.Marshal(o)
}
