package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// Headers of a gateway's answers to interactions.
const (
	hdrMore  = "Herald-More"  // another part of the answer follows
	hdrError = "Herald-Error" // the answer is this error, a JSON wireError
)

const (
	// interactTimeout bounds an interaction whose context has no
	// deadline.
	interactTimeout = 30 * time.Second
	// interactSlots bounds the interactions a gateway makes at once; more
	// are refused as busy (retryable).
	interactSlots = 64
	// partOverhead is what an answer's part leaves of the server's
	// largest message for headers.
	partOverhead = 1 << 10
)

// errNoGateway is the error of an interaction no gateway answered;
// errGatewayBusy a gateway's refusal of one while it makes interactSlots.
var (
	errNoGateway   = errors.New("cluster: no gateway for the account")
	errGatewayBusy = errors.New("cluster: the gateway is busy; try again")
)

// untaken reports whether err says no gateway made the interaction:
// none heard it, or the one that did refused it before making it (its
// lease unsure, or busy). Such an interaction is asked again.
func untaken(err error) bool {
	return errors.Is(err, errNoGateway) || errors.Is(err, ErrLeaseLost) || errors.Is(err, errGatewayBusy)
}

// gatewaySubject is the subject the gateway of adapter hears
// interactions on.
func (s *Shared) gatewaySubject(adapter string) string {
	return "herald." + s.Journal.cfg.Bot + ".gw." + token(adapter)
}

// Interact makes in through the gateway of adapter's account, and
// implements journal.Journal: a request to the member that holds the
// lease (this one, if it does), whose answer may come in several parts
// (a download larger than the server's largest message). While no
// gateway takes it — none is there, the lease moves, or the gateway is
// busy — it is asked again, with a growing pause, until ctx ends (or
// interactTimeout, for a ctx without a deadline); it then fails with a
// retryable error, as when the gateway does not answer in time (an error
// that wraps both ctx's and the last refusal when ctx ends as a try waits
// for its answer).
func (s *Shared) Interact(ctx context.Context, adapter string, in journal.Interaction) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("cluster: %s through the gateway of %s: %w", in.Op, adapter, err)
	}
	data, err := json.Marshal(in)
	if err != nil {
		return fail(platform.Permanent(err))
	}
	if int64(len(data)) > s.nc.MaxPayload() {
		return fail(platform.Permanent(fmt.Errorf("%w: a request of %d bytes, over the server's %d", platform.ErrInvalidMessage, len(data), s.nc.MaxPayload())))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, interactTimeout)
		defer cancel()
	}
	var last error // the last try's error that said no gateway took it
	for try := 0; ; try++ {
		out, err := s.interact(ctx, adapter, in, data)
		switch {
		case err == nil:
			return out, nil
		case last != nil && ctx.Err() != nil && !untaken(err):
			// ctx ended as a try waited for its answer: say also why
			// the tries before did not make it.
			return fail(fmt.Errorf("%w (before that: %w)", err, last))
		case !untaken(err):
			return fail(err)
		}
		last = err
		pause := backoff.EqualJitter(backoff.Exponential(try, 20*time.Millisecond, s.cfg.Heartbeat), rand.Float64())
		if !backoff.Sleep(ctx, pause) {
			return fail(err)
		}
	}
}

// interact asks adapter's gateway once to make in, of JSON data.
func (s *Shared) interact(ctx context.Context, adapter string, in journal.Interaction, data []byte) ([]byte, error) {
	inbox := s.nc.NewInbox() // not under the connection's request inboxes, whose handler would see each part too
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishMsg(&nats.Msg{Subject: s.gatewaySubject(adapter), Reply: inbox, Data: data}); err != nil {
		return nil, err
	}
	limit := int64(-1)
	if in.Op == journal.OpDownload {
		limit = in.MaxBytes
		if limit <= 0 {
			limit = platform.DefaultMaxDownload
		}
	}
	var out []byte
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return nil, errNoGateway
		case err != nil:
			return nil, err
		case msg.Header.Get(hdrError) != "":
			var w wireError
			if jerr := json.Unmarshal([]byte(msg.Header.Get(hdrError)), &w); jerr != nil {
				return nil, fmt.Errorf("an undecodable error from the gateway: %w", jerr)
			}
			return nil, decodeError(w)
		}
		out = append(out, msg.Data...)
		if limit >= 0 && int64(len(out)) > limit {
			return nil, platform.Permanent(fmt.Errorf("%w: the gateway sent more than %d bytes", platform.ErrFileTooLarge, limit))
		}
		if msg.Header.Get(hdrMore) == "" {
			return out, nil
		}
	}
}

// interactions serves the interactions of a gateway's account: at most
// interactSlots at once, each bounded by interactTimeout and by the
// lease.
type interactions struct {
	l     *lead
	sub   *nats.Subscription
	slots chan struct{}
	wg    sync.WaitGroup
}

// serveInteractions starts serving l's interactions.
func (l *lead) serveInteractions() error {
	in := &interactions{l: l, slots: make(chan struct{}, interactSlots)}
	sub, err := l.s.nc.QueueSubscribe(l.s.gatewaySubject(l.name), "gateway", in.serve)
	if err != nil {
		return fmt.Errorf("interactions: %w", err)
	}
	in.sub = sub
	l.calls = in
	return nil
}

// stop stops taking interactions and waits for those under way.
func (in *interactions) stop() {
	if in == nil {
		return
	}
	_ = in.sub.Unsubscribe()
	in.wg.Wait()
}

// serve takes one interaction and makes it on a goroutine of its own.
func (in *interactions) serve(msg *nats.Msg) {
	if msg.Reply == "" {
		return
	}
	select {
	case in.slots <- struct{}{}:
	default:
		in.l.s.warn.Warn("cluster: the gateway is busy with interactions; refused one", zap.String("adapter", in.l.name), zap.Int("slots", interactSlots))
		in.answer(msg.Reply, nil, errGatewayBusy)
		return
	}
	in.wg.Go(func() {
		defer func() { <-in.slots }()
		var call journal.Interaction
		if err := json.Unmarshal(msg.Data, &call); err != nil {
			in.answer(msg.Reply, nil, platform.Permanent(fmt.Errorf("cluster: an undecodable interaction: %w", err)))
			return
		}
		if err := in.l.sure(); err != nil {
			in.answer(msg.Reply, nil, err) // asked again: the next gateway makes it
			return
		}
		ctx, cancel := context.WithTimeout(in.l.conn, interactTimeout)
		defer cancel()
		data, err := in.l.m.Interact(ctx, in.l.name, call)
		in.answer(msg.Reply, data, err)
	})
}

// answer sends the answer to an interaction: err, or data in parts that
// each fit in a message of the server.
func (in *interactions) answer(reply string, data []byte, err error) {
	nc := in.l.s.nc
	if err != nil {
		b, _ := json.Marshal(encodeError(err)) // strings, bools and numbers always encode
		msg := nats.NewMsg(reply)
		msg.Header.Set(hdrError, string(b))
		_ = nc.PublishMsg(msg)
		return
	}
	part := max(int(nc.MaxPayload())-partOverhead, 1)
	for {
		msg := nats.NewMsg(reply)
		n := min(len(data), part)
		msg.Data = data[:n]
		data = data[n:]
		if len(data) > 0 {
			msg.Header.Set(hdrMore, "1")
		}
		if perr := nc.PublishMsg(msg); perr != nil || len(data) == 0 {
			return
		}
	}
}
