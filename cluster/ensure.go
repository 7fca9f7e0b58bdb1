package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
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

// ensureObjectStore is ensureStream for an object store bucket.
func ensureObjectStore(ctx context.Context, js jetstream.JetStream, oc jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	return js.CreateOrUpdateObjectStore(ctx, oc)
}

// repairEvery bounds how often assets are looked at again after a
// failure that says one is missing: failures of many calls at once make
// one repair.
const repairEvery = time.Second

// assets are the streams and buckets a journal (or a state store) needs,
// as it created them: when one is found missing — the server restarted
// without it (a memory-backed bucket, a new store, a new cluster), or
// someone deleted it — repair creates it again as it was. Safe for
// concurrent use.
type assets struct {
	js jetstream.JetStream

	mu      sync.Mutex
	streams []jetstream.StreamConfig
	kvs     []jetstream.KeyValueConfig
	objs    []jetstream.ObjectStoreConfig
	last    time.Time // when repair last looked

	// recreated counts the repairs that created an asset again: consumers
	// of the old one are gone with it.
	recreated atomic.Uint64
}

func (a *assets) addStream(sc jetstream.StreamConfig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.streams = append(a.streams, sc)
}

func (a *assets) addKeyValue(kc jetstream.KeyValueConfig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kvs = append(a.kvs, kc)
}

func (a *assets) addObjectStore(oc jetstream.ObjectStoreConfig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objs = append(a.objs, oc)
}

// repair creates again the assets that are missing, if cause says one may
// be (see missing) or is a timeout (a publish to a stream that is gone is
// tried again until it times out), and no repair looked within
// repairEvery; it reports whether it created any. Its error is the first
// failure to look or create.
func (a *assets) repair(ctx context.Context, cause error) (bool, error) {
	if !missing(cause) && !errors.Is(cause, context.DeadlineExceeded) && !errors.Is(cause, nats.ErrTimeout) {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.last) < repairEvery {
		return false, nil
	}
	a.last = time.Now()
	created := false
	try := func(name string, exists func() error, create func() error) error {
		err := exists()
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound):
			return fmt.Errorf("cluster: look for %s: %w", name, err)
		}
		if err := create(); err != nil {
			return fmt.Errorf("cluster: create %s again: %w", name, err)
		}
		created = true
		return nil
	}
	var errs []error
	for _, sc := range a.streams {
		errs = append(errs, try("stream "+sc.Name,
			func() error { _, err := a.js.Stream(ctx, sc.Name); return err },
			func() error { _, err := ensureStream(ctx, a.js, sc); return err }))
	}
	for _, kc := range a.kvs {
		errs = append(errs, try("bucket "+kc.Bucket,
			func() error { _, err := a.js.KeyValue(ctx, kc.Bucket); return err },
			func() error { _, err := ensureKeyValue(ctx, a.js, kc); return err }))
	}
	for _, oc := range a.objs {
		errs = append(errs, try("object store "+oc.Bucket,
			func() error { _, err := a.js.ObjectStore(ctx, oc.Bucket); return err },
			func() error { _, err := ensureObjectStore(ctx, a.js, oc); return err }))
	}
	if created {
		a.recreated.Add(1)
	}
	return created, errors.Join(errs...)
}

// missing reports whether err may say that a stream or bucket is not on
// the server (or that the server has no JetStream now, which a repair
// then finds): the assets are worth looking at.
func missing(err error) bool {
	if err == nil {
		return false
	}
	switch code := apiCode(err); code {
	case jetstream.JSErrCodeStreamNotFound, jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
		return true
	}
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}

// apiCode returns the JetStream API error code err carries, or 0.
func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode
	}
	return 0
}
