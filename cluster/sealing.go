package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shotd/shotd/objstore"
)

// sealingKey is the key, in the secrets bucket, of the cluster's sealing key.
const sealingKey = "sealing"

// OpenSealer returns the sealer of the credentials that async jobs keep in their records
// (store=true, a proxy, request headers), with the cluster's one key: a job queued on one node
// is opened by whichever node renders it. The first node to ask creates the key, with create-only
// semantics, so that nodes starting together still agree on one; the others read it.
func OpenSealer(ctx context.Context, n *Node) (*objstore.Sealer, error) {
	for {
		e, err := n.Secrets.Get(ctx, sealingKey)
		if err == nil {
			if len(e.Value()) != 32 {
				return nil, fmt.Errorf("cluster: the sealing key in %s is %d bytes, want 32", BucketSecrets, len(e.Value()))
			}
			return objstore.NewSealer(e.Value())
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("cluster: read the sealing key: %w", err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		_, err = n.Secrets.Create(ctx, sealingKey, key)
		if err == nil {
			return objstore.NewSealer(key)
		}
		if !conflict(err) {
			return nil, fmt.Errorf("cluster: create the sealing key: %w", err)
		}
		// Another node created it first: read theirs (a read may lag the create a moment).
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: the sealing key was created by another node but could not be read: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
