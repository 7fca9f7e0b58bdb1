package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A record larger than a NATS message carries (the server's max_payload,
// 1 MB by default; files' bytes are kept as they are, see record.go) is
// kept in the object store bucket blobs_B, in chunks, under a name of its
// own; its message in IN, OUT or DLQ is then empty but for the header
// Herald-Blob, which names the object. Whoever reads the record reads the
// object (Recover, a partition's consumer, a gateway, the dead letters),
// and whoever removes the record removes the object after it. An object
// whose record was never written (a crash in between) is removed by the
// next Recover that finds it older than blobGrace.

// hdrBlob names, on a record's message, the object holding its bytes.
const hdrBlob = "Herald-Blob"

// DefaultMaxRecord is the largest event or send a journal keeps, in bytes
// of its record (its JSON and the bytes of its files), when
// Config.MaxRecord is 0: 128 MiB, room for Telegram's 50 MB files.
const DefaultMaxRecord = 128 << 20

// blobGrace is how old an object no record names must be before Recover
// removes it: younger, its record may be being written.
const blobGrace = 10 * time.Minute

// putRecord records msg in its stream with the record pieces make (see
// encodeRecord): in its Data when it fits in a message, else in the object
// store, with the object's name in its header. It returns the
// acknowledgement and the object's name, "" for none. A record over
// Config.MaxRecord is refused with an error wrapping
// journal.ErrUnrecordable.
func (j *Journal) putRecord(ctx context.Context, what string, msg *nats.Msg, pieces [][]byte, id string) (*jetstream.PubAck, string, error) {
	if err := j.health.gate(); err != nil {
		return nil, "", err
	}
	size := piecesLen(pieces)
	if limit := j.cfg.MaxRecord; limit > 0 && size > limit {
		return nil, "", platform.Permanent(fmt.Errorf("cluster: %s: a record of %d bytes, over the journal's bound of %d bytes (Config.MaxRecord): %w",
			what, size, limit, journal.ErrUnrecordable))
	}
	var blob string
	if size > j.nc.MaxPayload()-partOverhead {
		blob = "r-" + nuid.Next()
		if _, err := j.blobs.Put(ctx, jetstream.ObjectMeta{Name: blob}, piecesReader(pieces)); err != nil {
			j.dropBlob(blob) // whatever chunks were written
			return nil, "", j.health.writeErr(ctx, what, err)
		}
		msg.Header.Set(hdrBlob, blob)
		j.reclaim.noteLarge()
	} else {
		msg.Data = joinPieces(pieces)
	}
	ack, err := publishRecord(ctx, j.nc, msg, id)
	if err != nil {
		if blob != "" && refused(err) {
			j.dropBlob(blob)
		}
		// Else the record may have been written all the same (its answer
		// lost, or late): its object stays, for it, and goes with it; if
		// it was not written, the next Recover removes the object.
		return nil, "", j.publishFailed(ctx, what, err)
	}
	j.health.ok()
	if ack.Duplicate && blob != "" {
		j.dropBlob(blob)
		blob = ""
	}
	return ack, blob, nil
}

// publishFailed returns the error of a record's publish that failed with
// err: the store's (health.writeErr), an unknownWrite when the server may
// have stored the record all the same (see maybeWritten).
func (j *Journal) publishFailed(ctx context.Context, what string, err error) error {
	err = j.health.writeErr(ctx, what, err)
	if !refused(err) {
		err = &unknownWrite{err}
	}
	return err
}

// unknownWrite wraps the error of a record's publish that the server may
// have stored all the same: its answer was lost, or came too late.
type unknownWrite struct{ err error }

func (u *unknownWrite) Error() string { return u.err.Error() }
func (u *unknownWrite) Unwrap() error { return u.err }

// maybeWritten reports whether err, putRecord's, leaves the record
// perhaps written.
func maybeWritten(err error) bool {
	var u *unknownWrite
	return errors.As(err, &u)
}

// refused reports whether err is the server's answer refusing a publish,
// or the client's refusal to send it: the message was surely not written.
func refused(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) || errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse)
}

// recordData returns a record's bytes: data, or the object its header
// names. A record whose object is gone gives an error wrapping
// errBlobGone.
func (j *Journal) recordData(ctx context.Context, h nats.Header, data []byte) ([]byte, string, error) {
	blob := h.Get(hdrBlob)
	if blob == "" {
		return data, "", nil
	}
	// The object store's client gives a whole read its context's
	// deadline, or, without one, the JetStream API timeout (5 s): too
	// little for a large file on a loaded machine, and a read that fails
	// for it is only tried again from its start. Each read gets a
	// deadline for its size instead.
	info, err := j.blobs.GetInfo(ctx, blob)
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, blobReadTime(info.Size))
		var b []byte
		b, err = j.readObject(rctx, blob, info.Size)
		cancel()
		if err == nil {
			return b, blob, nil
		}
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, blob, fmt.Errorf("cluster: the object %s of a record: %w", blob, errBlobGone)
	}
	return nil, blob, fmt.Errorf("cluster: the object %s of a record: %w", blob, err)
}

// maxPrealloc is the largest size of an object, by its info, that
// readObject reads into a buffer made at once: a larger one (a record of a
// Config.MaxRecord above 2 GiB, or an info gone wrong) is read as the
// client reads it, its buffer growing with the bytes that come.
const maxPrealloc = math.MaxInt32

// readObject reads the object name, of size bytes by its info, into one
// buffer of that size. The client's GetBytes grows its buffer from empty,
// which copies a file's bytes about twice more and holds up to three
// times them at once. The object's digest is checked as the read reaches
// its end; an object shorter or longer than size is an error.
func (j *Journal) readObject(ctx context.Context, name string, size uint64) ([]byte, error) {
	if size > maxPrealloc {
		return j.blobs.GetBytes(ctx, name)
	}
	res, err := j.blobs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	b := make([]byte, size)
	if _, err := io.ReadFull(res, b); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %w", size, err)
	}
	var more [1]byte
	for {
		n, err := res.Read(more[:])
		if n > 0 {
			return nil, fmt.Errorf("an object longer than its %d bytes", size)
		}
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// blobReadTime is how long reading an object of size bytes may take:
// opTimeout, and a second for each MiB, a pace any store that answers at
// all keeps.
func blobReadTime(size uint64) time.Duration {
	return opTimeout + time.Duration(size>>20)*time.Second
}

// errBlobGone is wrapped by the error of a record whose object is gone:
// it can never be read.
var errBlobGone = errors.New("cluster: the record's object is gone")

// dropBlob removes the object blob, or, the store refusing, keeps its
// removal for when it is back.
func (j *Journal) dropBlob(blob string) {
	if blob == "" {
		return
	}
	j.reclaim.noteLarge()
	remove := func(ctx context.Context) error {
		err := j.blobs.Delete(ctx, blob)
		if err == nil || errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil
		}
		return outage("remove a record's object", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := remove(ctx); err != nil {
		j.health.later(remove, err)
	}
}

// sweepBlobs removes the objects older than blobGrace that no record
// names; refs returns the names records hold, and is called only when
// there is such an object.
func (j *Journal) sweepBlobs(ctx context.Context, refs func() (map[string]bool, error)) error {
	infos, err := j.blobs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: list the records' objects: %w", err)
	}
	var old []string
	for _, info := range infos {
		if !info.Deleted && time.Since(info.ModTime) > j.blobGrace {
			old = append(old, info.Name)
		}
	}
	if len(old) == 0 {
		return nil
	}
	named, err := refs()
	if err != nil {
		return err
	}
	for _, name := range old {
		if !named[name] {
			j.limited.Info("cluster: removing an object no record names (a crash came between the two)", zap.String("object", name))
			j.dropBlob(name)
		}
	}
	return nil
}

// blobRefs returns the objects the records of IN, OUT and DLQ name.
func (j *Journal) blobRefs(ctx context.Context) (map[string]bool, error) {
	named := map[string]bool{}
	for _, s := range []jetstream.Stream{j.in, j.out, j.dlq} {
		err := j.each(ctx, s, func(m *jetstream.RawStreamMsg) error {
			if b := m.Header.Get(hdrBlob); b != "" {
				named[b] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: the records' objects: %w", err)
		}
	}
	return named, nil
}
