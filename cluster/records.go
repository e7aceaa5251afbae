package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/shotd/shotd"
)

// recordVersion is the version of every record this build writes. A node reads only the
// versions it knows; a newer node that changes a record's meaning writes a new version, which
// older nodes refuse (with a log line) rather than misread.
const recordVersion = 1

// ErrUnknownVersion: a record written by a node of another version that this one cannot read.
var ErrUnknownVersion = errors.New("cluster: record of an unknown version")

// versioned is the part of every record that decode checks first.
type versioned struct {
	V int `json:"v"`
}

// decode reads a record of kind from data into v after checking its version. A record of an
// unknown version, or one that does not parse, is an error and a log line, never a panic.
func decode(log zerolog.Logger, kind, key string, data []byte, v any) error {
	var head versioned
	if err := json.Unmarshal(data, &head); err != nil {
		log.Error().Err(err).Str("record", kind).Str("key", key).Msg("cluster record unreadable; refused")
		return fmt.Errorf("cluster: %s %s: %w", kind, key, err)
	}
	if head.V != recordVersion {
		log.Error().Int("version", head.V).Int("known", recordVersion).Str("record", kind).Str("key", key).
			Msg("cluster record of an unknown version; refused")
		return fmt.Errorf("cluster: %s %s: version %d: %w", kind, key, head.V, ErrUnknownVersion)
	}
	if err := json.Unmarshal(data, v); err != nil {
		log.Error().Err(err).Str("record", kind).Str("key", key).Msg("cluster record unreadable; refused")
		return fmt.Errorf("cluster: %s %s: %w", kind, key, err)
	}
	return nil
}

// nodeRecord is a member's entry in the nodes bucket.
type nodeRecord struct {
	V       int       `json:"v"`
	Name    string    `json:"name"`
	Version string    `json:"version,omitempty"`
	Listen  string    `json:"listen"`
	Started time.Time `json:"started"`
	Seen    time.Time `json:"seen"`
	Plans   string    `json:"plans,omitempty"` // digest of the node's plans
}

// PlansDigest is a short digest of a node's plans, which cluster status compares across nodes.
func PlansDigest(plans map[string]shotd.Plan) string {
	data, _ := json.Marshal(plans) // map keys in order: equal plans, equal digests
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}
