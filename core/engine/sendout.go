package engine

import (
	"fmt"
	"sync"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/platform"
)

// A SendOption configures one send of [Engine.Send] or [Engine.Edit].
type SendOption interface {
	applySend(*sendOptions)
}

type sendOptions struct {
	id string
}

type sendOptionFunc func(*sendOptions)

func (f sendOptionFunc) applySend(o *sendOptions) { f(o) }

// SendID names a send for the journal (see [WithJournal]), so that making
// it again — a job run again after a crash, a notification repeated by
// the system that asked for it — sends it once: a send whose id the
// journal saw within its duplicate window (an hour by default) is not
// made again, also after a restart of the process and its server (the
// journal looks up the first's delivered mark: a named send costs a
// request more), and its Future resolves with the result of the
// first when the engine has it, or an empty result, with
// platform.SendResult's Duplicate set either way (while the first is
// being made after a restart, with its outcome). Ids are the bot's
// own: choose them so that two different sends never share one. Without
// a journal, SendID does nothing. Repeated use keeps the last; "" means
// none.
func SendID(id string) SendOption {
	return sendOptionFunc(func(o *sendOptions) { o.id = id })
}

// Send queues msg for chat of the adapter platformName (its Name, such as
// telegram.DefaultName) and returns at once, for code outside handlers:
// notifications, jobs (see Every), or a goroutine of the bot's own. It
// has Context.Reply's guarantees and goes the same way: through the
// OutboundDispatcher, after every send queued before it for the same chat
// (replies included), and through the whole sender chain — rate limits,
// retries, dead letters — and, with a journal (WithJournal), into the
// journal before Send returns.
//
// The Future is never nil and is always resolved: with the sender's result
// or error, or at once with ErrNoChat for a chat without an ID, a
// permanent error wrapping platform.ErrInvalidMessage for a message
// that cannot be sent (see platform.OutboundMessage.Validate),
// ErrNoSender for an adapter the engine does not have, an error wrapping
// ErrJournal when the journal refuses, or the dispatcher's refusal
// (ErrQueueFull; ErrDispatcherClosed once Shutdown drained the handlers).
//
// In a handler, prefer Context.Send: a handler run again on its event after
// a restart repeats Context.Send's sends under the same ids, so they are
// not made twice, while an Engine.Send there is (unless it has a SendID).
// Sends made before Run starts are queued at once — with a journal of one
// process, once Run took up the sends the journal held (else they would
// be taken up too, and made twice): their Futures resolve after that, and
// they are recorded then. Shutdown without Run resolves them with
// ErrDispatcherClosed.
func (e *Engine) Send(platformName string, chat platform.Chat, msg platform.OutboundMessage, opts ...SendOption) *future.Future[platform.SendResult] {
	var o sendOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applySend(&o)
		}
	}
	f, _ := e.sendOut(platformName, chat, msg, o.id)
	return f
}

// Edit queues an edit of the bot's message messageID in chat of the
// adapter platformName, as Context.Edit does in a handler: the message's
// text and buttons become msg's. It has Send's guarantees, and its Future
// fails at once with a permanent error wrapping platform.ErrInvalidMessage
// for an empty messageID; platforms that cannot edit fail it with
// platform.ErrUnsupported.
func (e *Engine) Edit(platformName string, chat platform.Chat, messageID string, msg platform.OutboundMessage, opts ...SendOption) *future.Future[platform.SendResult] {
	if messageID == "" {
		return future.Resolved(platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: Edit without a message ID", platform.ErrInvalidMessage)))
	}
	msg.EditID = messageID
	return e.Send(platformName, chat, msg, opts...)
}

// sendOut queues a send made outside handlers, named id for the journal
// (none if ""), and returns its Future and, if it was not queued, why.
func (e *Engine) sendOut(platformName string, chat platform.Chat, msg platform.OutboundMessage, id string) (*future.Future[platform.SendResult], error) {
	if chat.ID == "" {
		return future.Resolved(platform.SendResult{}, ErrNoChat), ErrNoChat
	}
	if err := msg.Validate(); err != nil {
		err = platform.Permanent(err) // refused at once, as SendAt does: never a dead letter
		return future.Resolved(platform.SendResult{}, err), err
	}
	f := future.New[platform.SendResult]()
	if e.early.hold(earlySend{platform: platformName, chat: chat, msg: msg, id: id, f: f}) {
		return f, nil
	}
	return e.sendOutTo(f, platformName, chat, msg, id)
}

// sendOutTo is sendOut's queueing of a valid send, resolving f.
func (e *Engine) sendOutTo(f *future.Future[platform.SendResult], platformName string, chat platform.Chat, msg platform.OutboundMessage, id string) (*future.Future[platform.SendResult], error) {
	s := journal.Send{Request: platform.SendRequest{Platform: platformName, Target: chat, Message: msg}}
	key := handling.ChatKey(platformName, chat.ID)
	if id != "" && !e.relayed && e.out.x.Full(key) {
		// Refused before its record is written: the journal would keep
		// its id as made, and a retry under it would be a duplicate.
		err := e.out.x.RejectFull(key)
		f.Resolve(platform.SendResult{}, err)
		return f, err
	}
	if id != "" {
		s.ID = "out/" + id // a handler's is platform:event/n, and no adapter name holds a "/"
		// Made again maybe after the server forgot the id (a server
		// started again knows only the ids of the messages it still
		// holds): the journal looks up its delivered mark.
		s.Repeat = true
	}
	return e.queueSendTo(f, key, s, nil)
}

// earlySends holds the sends made outside handlers before Run took up the
// sends a journal of one process held (Journal.Recover): recorded and made
// at once, such a send would be taken up there too, and made twice. Run
// makes them once it has, in order, before the scheduled ones
// (makeEarly).
// Without a journal, or with one that relays sends to a gateway, nothing
// is held (a nil *earlySends).
type earlySends struct {
	mu   sync.Mutex
	done bool
	list []earlySend
}

// earlySend is a send made before Run took up the journal's.
type earlySend struct {
	platform string
	chat     platform.Chat
	msg      platform.OutboundMessage
	id       string
	f        *future.Future[platform.SendResult]
}

// hold keeps s for Run and reports whether it did: not once Run made
// those held.
func (h *earlySends) hold(s earlySend) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return false
	}
	h.list = append(h.list, s)
	return true
}

// take returns the sends held, and once there are none left marks the
// holding over, so that later sends go at once, after them.
func (h *earlySends) take() []earlySend {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.list
	h.list = nil
	if len(list) == 0 {
		h.done = true
	}
	return list
}

// makeEarly makes the sends held before Run took up the journal's, in
// order. Sends made meanwhile are held too, behind them, until none is
// left.
func (e *Engine) makeEarly() {
	for list := e.early.take(); len(list) > 0; list = e.early.take() {
		for _, s := range list {
			if e.closed.Load() {
				// Shutdown came while Run took up the journal's: refused
				// before its record, as a send after Shutdown would have
				// been after it (a named one's id stays unused).
				s.f.Resolve(platform.SendResult{}, ErrDispatcherClosed)
				continue
			}
			_, _ = e.sendOutTo(s.f, s.platform, s.chat, s.msg, s.id) // its Future tells
		}
	}
}

// dropEarly resolves the sends still held with err: the engine stops
// without Run having made them.
func (e *Engine) dropEarly(err error) {
	for list := e.early.take(); len(list) > 0; list = e.early.take() {
		for _, s := range list {
			s.f.Resolve(platform.SendResult{}, err)
		}
	}
}
