package actors

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

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
	return compactJSON(o)
}

// compactJSON is o's JSON without its zero fields: a record's options are decoded into a zero
// Options, where a field left out reads as its zero value, so they read back the same. Most of
// the fields of a job's options are zero, and leaving them out makes a job record about a tenth
// of its 3 KB: an async accept waits for a commit whose cost grows with the pages it writes.
func compactJSON(o *shotd.Options) ([]byte, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	v := reflect.ValueOf(o).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous || !v.Field(i).IsZero() {
			continue // an embedded struct's fields are keys of their own: kept
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		delete(fields, name)
	}
	return json.Marshal(fields)
}
