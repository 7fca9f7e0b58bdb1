package cluster

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// ensureStream creates the stream sc describes, or updates it where it
// differs. A create of a stream that exists as configured changes
// nothing on the server, where an update rewrites its store's
// configuration under the feet of consumers being added (nats-server
// reads it unlocked there), so several processes starting at once only
// update what needs it.
func ensureStream(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.CreateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return js.UpdateStream(ctx, sc)
	}
	return s, err
}

// ensureKeyValue is ensureStream for a key-value bucket.
func ensureKeyValue(ctx context.Context, js jetstream.JetStream, kc jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, kc)
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.UpdateKeyValue(ctx, kc)
	}
	return kv, err
}
