package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Errors with which a send's Future or a conversation step can end,
// besides the sender's own errors.
var (
	// ErrNoSender resolves the Future of a send to a platform the engine
	// has no adapter for (an event given to HandleEvent by hand, say).
	ErrNoSender = errors.New("engine: no adapter for the platform")
	// ErrSendPanicked is wrapped by the error of a send whose Sender
	// panicked; the panic then continues into the dispatcher, which
	// recovers and reports it.
	ErrSendPanicked = errors.New("engine: send panicked")
	// ErrSendAborted resolves the Future of a send whose Sender called
	// runtime.Goexit.
	ErrSendAborted = errors.New("engine: send aborted")
	// ErrNoChat resolves the Future of a Reply to an event that has no chat
	// (a Telegram inline-mode callback, say), or of a Send to a chat with
	// an empty ID, and is returned by Next for an event without a chat.
	// Nothing is sent.
	ErrNoChat = errors.New("engine: no chat to send to")
	// ErrPromptNotSent is wrapped by Prompt's error when its question
	// could not be sent.
	ErrPromptNotSent = errors.New("engine: prompt not sent")
)

// Context is what a handler receives for one event: read access to the
// event and what its matcher found, a logger, values shared by the
// handlers of the event, the send methods, and conversation steps (Next,
// Prompt).
//
// Each handler gets its own Context, holding what its matcher found; the
// Contexts of one event's handlers share the event, the logger and the
// values of Set and Get, so handlers that run later see what earlier ones
// stored. A Context never changes once given to a handler. The Futures it
// returns stay valid forever, and its methods are safe for concurrent use,
// also from goroutines the handler starts — but the handler's Context()
// is cancelled when this run of the handlers ends (after all of them
// returned, or once one waits: see Next).
//
// The engine creates every Context; the zero value is not usable.
type Context struct {
	ev    *eventState
	match match
	sc    *scope // the error hook's effects; nil: the run's
}

// scope returns the numbering of c's effects.
func (c *Context) scope() *scope {
	if c.sc != nil {
		return c.sc
	}
	return &c.ev.run.main
}

// eventState is what the Contexts of one run of a handling share.
type eventState struct {
	e       *Engine
	h       *handling
	run     *runState
	ctx     context.Context
	event   platform.Event
	chatKey string       // "" when the event has no chat
	sends   atomic.Int64 // sends made in this run, by all its handlers
	// recovered is set for an event taken up from the journal at start
	// (or by another process): its handlers run again, and their sends
	// may repeat delivered ones.
	recovered bool

	mu     sync.Mutex
	logger *zap.Logger
	values map[string]any

	// act is the run's chat action (chataction.go).
	act interactions
}

// match is what a matcher found in an event, for the handler it runs.
type match struct {
	command string   // the command's name as written, without prefix or @botname
	rawArgs string   // the text after the command or prefix, trimmed
	args    []string // rawArgs split like a shell splits words
	groups  []string // a regex matcher's submatches
}

// newEventState returns the state of a run of h, on h's start event, with
// ctx.
func (e *Engine) newEventState(ctx context.Context, h *handling, r *runState) *eventState {
	st := &eventState{e: e, h: h, run: r, ctx: ctx, event: h.start, recovered: h.redelivered}
	if h.start.Chat.ID != "" {
		st.chatKey = chatKey(h.start.Platform, h.start.Chat.ID)
	}
	return st
}

// newContext returns the Context of a first run of ev's handling, with no
// match yet.
func (e *Engine) newContext(ctx context.Context, ev platform.Event) *Context {
	return &Context{ev: e.newEventState(ctx, &handling{start: ev}, &runState{})}
}

// withMatch returns a Context for another handler of the same event, with
// what that handler's matcher found.
func (c *Context) withMatch(m match) *Context { return &Context{ev: c.ev, match: m} }

// chatKey returns the dispatchers' key of a chat: the platform name, a
// colon and the chat ID, so that two adapters never share a queue.
func chatKey(platformName, chatID string) string { return platformName + ":" + chatID }

// Event returns the inbound event.
func (c *Context) Event() platform.Event { return c.ev.event }

// Chat returns the chat the event happened in.
func (c *Context) Chat() platform.Chat { return c.ev.event.Chat }

// From returns the user who caused the event.
func (c *Context) From() platform.User { return c.ev.event.From }

// Text returns the event's text: a message's text, or a callback's data.
func (c *Context) Text() string { return c.ev.event.Text }

// Platform returns the name of the adapter the event came from.
func (c *Context) Platform() string { return c.ev.event.Platform }

// Command returns the name of the command that matched, without prefix or
// @botname ("echo" for "/echo@MyBot hi"), or "" if no command matcher ran
// the handler.
func (c *Context) Command() string { return c.match.command }

// Args returns the command's arguments split like a shell splits words:
// quotes group words and are removed ("/say 'hello world' x" gives
// ["hello world", "x"]).
func (c *Context) Args() []string { return c.match.args }

// RawArgs returns the text after the command (or an OnPrefix prefix),
// with surrounding space trimmed.
func (c *Context) RawArgs() string { return c.match.rawArgs }

// Matches returns a regex matcher's submatches: Matches()[0] is the text
// the expression matched, then one entry per group. It is nil for other
// matchers.
func (c *Context) Matches() []string { return c.match.groups }

// Context returns the handler's context. It is cancelled when the handling
// of the event ends, when its time limit passes, or when the engine is
// force-closed.
func (c *Context) Context() context.Context { return c.ev.ctx }

// Logger returns the engine's logger with the event's platform, chat and
// event ID as fields.
func (c *Context) Logger() *zap.Logger {
	ev := c.ev
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.logger == nil {
		ev.logger = ev.e.log.With(
			zap.String("platform", ev.event.Platform),
			zap.String("chat", ev.event.Chat.ID),
			zap.String("event", ev.event.ID),
		)
	}
	return ev.logger
}

// Set stores a value for the handlers of this event that run after this one.
func (c *Context) Set(key string, value any) {
	ev := c.ev
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.values == nil {
		ev.values = make(map[string]any)
	}
	ev.values[key] = value
}

// Get returns the value Set stored under key, and whether there was one.
func (c *Context) Get(key string) (any, bool) {
	ev := c.ev
	ev.mu.Lock()
	defer ev.mu.Unlock()
	v, ok := ev.values[key]
	return v, ok
}

// Reply queues msg for the event's chat and returns at once.
//
// When Reply returns, the send is in the outbound dispatcher and will be
// made even after the handler returns, after every send queued before it
// for the same chat. Reply does not wait for the send and does not promise
// delivery: wait on the returned Future for the result (the platform's
// message ID) or the error. The Future is never nil and is always resolved:
// with the sender's result or error, with the context's error if the send
// timed out or the engine was force-closed, with an error wrapping
// ErrSendPanicked if the sender panicked, or at once with the dispatcher's
// error (such as ErrQueueFull) if the send could not be queued.
func (c *Context) Reply(msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	if c.ev.chatKey == "" {
		return future.Resolved(platform.SendResult{}, ErrNoChat)
	}
	f, _ := c.ev.e.send(c, c.ev.chatKey, c.ev.event.Chat, msg, false)
	return f
}

// ReplyText is shorthand for Reply(platform.TextMessage(text)).
func (c *Context) ReplyText(text string) *future.Future[platform.SendResult] {
	return c.Reply(platform.TextMessage(text))
}

// ReplySuccess replies with text marked as a success ("✅ " + text).
func (c *Context) ReplySuccess(text string) *future.Future[platform.SendResult] {
	return c.Reply(platform.TextMessage("✅ " + text))
}

// ReplyError tells the user that something went wrong, without showing
// them err: the reply is err's [UserError] text if it has one, and a
// generic apology otherwise. Called in a handler, it logs err at warn
// level (info for a UserError); in the WithOnError function it logs
// nothing, as the engine logged err before calling it: an error is logged
// once.
func (c *Context) ReplyError(err error) *future.Future[platform.SendResult] {
	text := "⚠️ Sorry, something went wrong."
	var ue *UserError
	if errors.As(err, &ue) && ue.Text != "" {
		text = "⚠️ " + ue.Text
	}
	switch {
	case c.scope().errs > 0: // the error hook's: logged by the engine
	case ue != nil:
		c.Logger().Info("user error reported to the user", zap.Error(err))
	default:
		c.Logger().Warn("handler error reported to the user", zap.Error(err))
	}
	return c.Reply(platform.TextMessage(text))
}

// Edit queues an edit of the bot's message messageID in the event's chat:
// the message's text and buttons become msg's (a nil Buttons removes them;
// see [platform.OutboundMessage] EditID). It has Reply's guarantees: it is
// made after every send queued before it for the chat, and the Future is
// always resolved — with a result naming the edited message, or an error:
// a permanent one wrapping platform.ErrUnsupported on a platform that
// cannot edit messages, or wrapping platform.ErrInvalidMessage for an empty
// messageID or an edit with attachments. For a button press
// (EventCallback), c.Event().MessageID is the message the button is under,
// so Edit(c.Event().MessageID, …) updates a menu in place.
func (c *Context) Edit(messageID string, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	if messageID == "" {
		return future.Resolved(platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: Edit without a message ID", platform.ErrInvalidMessage)))
	}
	msg.EditID = messageID
	return c.Reply(msg)
}

// Send queues msg for another chat of the event's platform, with the same
// guarantees as Reply: per-chat order among sends to that chat, and a Future
// that is always resolved.
func (c *Context) Send(chat platform.Chat, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	if chat.ID == "" {
		return future.Resolved(platform.SendResult{}, ErrNoChat)
	}
	f, _ := c.ev.e.send(c, chatKey(c.ev.event.Platform, chat.ID), chat, msg, false)
	return f
}

// Next returns the next event from the user in this chat that accept
// accepts: a conversation step, written as plain Go. A nil accept takes
// the user's next message. The event Next returns is the handler's: the
// matchers do not see it (it does go through the handler middleware).
//
// A conversation holds nothing while it waits — no goroutine, no handler
// slot, no place in the chat's queue: when no such event has arrived yet,
// Next returns ErrWaiting, which the handler returns, and the engine runs
// the handler again, from the top, when the user's next event in the chat
// arrives. That run gets back everything the runs before it did instead
// of doing it again — every send (with its Future), answer, session read
// and write, Once result and earlier Next — up to this Next, which then
// offers the new event to accept: taken, it is returned and the handler
// goes on; refused, the handler waits again and the event goes to the
// matchers. So a handler that waits must do the same things in the same
// order each time it runs up to its wait: keep what varies (time, random
// numbers, outside calls) in Once, and do not start goroutines that make
// effects. A run that does otherwise ends the conversation with an error
// wrapping ErrDiverged, to the WithOnError function and the log.
//
// Meanwhile the chat's other users, and the user's events accept refuses,
// are handled by the matchers as usual, at once. accept may be called for
// events it refused before, and must not block.
//
// Next returns ctx's error when ctx has ended; a wait ends with
// context.DeadlineExceeded at ctx's deadline, as it was when the handler
// first waited, or, for a ctx without one, after WithConversationWait (an
// hour by default). It returns ErrNoChat for an event without a chat.
// With a journal that keeps records, a conversation survives restarts: its
// events stay in the journal until its handling ended, and are handed
// over again, in order, at the next start or to the next process.
func (c *Context) Next(ctx context.Context, accept func(platform.Event) bool) (platform.Event, error) {
	return c.wait(ctx, accept, -1, false)
}

// NextInChat is Next for a conversation with the whole chat: it returns
// the next event from anyone in this chat that accept accepts (a nil
// accept takes the next message) — a quiz that the first right answer
// wins, a vote. Everything Next says holds for it, but for whose events
// it takes.
func (c *Context) NextInChat(ctx context.Context, accept func(platform.Event) bool) (platform.Event, error) {
	return c.wait(ctx, accept, -1, true)
}

// wait is Next (NextInChat when anyone); question is the place of
// Prompt's question, or -1.
func (c *Context) wait(ctx context.Context, accept func(platform.Event) bool, question int, anyone bool) (platform.Event, error) {
	st := c.ev
	e, h, r := st.e, st.h, st.run
	if st.event.Chat.ID == "" {
		return platform.Event{}, ErrNoChat
	}
	if c.scope().errs > 0 || c.scope().anon {
		return platform.Event{}, errNoWait
	}
	if err := st.ctx.Err(); err != nil {
		return platform.Event{}, err // the run is over: a goroutine it left cannot wait
	}
	user := st.event.From.ID
	messages := accept == nil
	switch {
	case messages && anyone:
		accept = func(ev platform.Event) bool { return ev.Kind == platform.EventMessage }
	case messages:
		accept = func(ev platform.Event) bool { return ev.Kind == platform.EventMessage && ev.From.ID == user }
	case !anyone:
		inner := accept
		accept = func(ev platform.Event) bool { return ev.From.ID == user && inner(ev) }
	}
	what := "a wait"
	if anyone {
		what = "a wait in the chat"
	}
	fx, pos, err := c.take(fxWait, sum(what), what)
	switch {
	case err != nil:
		return platform.Event{}, err
	case fx != nil && fx.done:
		if got, ok := fx.v.(*platform.Event); ok {
			return *got, nil
		}
		return platform.Event{}, fx.error()
	}
	end := func(got *platform.Event, err error) (platform.Event, error) {
		fx := effect{kind: fxWait, sum: sum(what), what: what, done: true, v: err}
		if got != nil {
			fx.v = got
		}
		st.record(pos, fx)
		h.mu.Lock()
		h.wait = nil
		h.mu.Unlock()
		if got != nil {
			return *got, nil
		}
		return platform.Event{}, err
	}
	if err := ctx.Err(); err != nil && fx == nil {
		return end(nil, err)
	}
	switch {
	case r.offer != nil && !r.offerTaken && e.isCancel(r.offer, user):
		r.offerTaken = true
		h.mu.Lock()
		if r.offerRec != nil {
			h.extraLocked().taken = append(h.extraLocked().taken, r.offerRec)
		}
		h.mu.Unlock()
		return end(nil, ErrCancelled)
	case r.offer != nil && !r.offerTaken:
		if e.accepts(accept, *r.offer) {
			r.offerTaken = true
			got := *r.offer
			h.mu.Lock()
			if r.offerRec != nil {
				h.extraLocked().taken = append(h.extraLocked().taken, r.offerRec)
			}
			if got.Kind == platform.EventCallback {
				h.extraLocked().presses = append(h.extraLocked().presses, got)
			}
			h.mu.Unlock()
			return end(&got, nil)
		}
	case r.resume != nil:
		reason := r.resume
		r.resume = nil
		return end(nil, reason)
	}
	if question >= 0 {
		if err := h.questionError(question); err != nil {
			return end(nil, fmt.Errorf("%w: %w", ErrPromptNotSent, err))
		}
	}
	// Nothing to take: the handling waits, until the deadline it had when
	// it first waited here.
	h.mu.Lock()
	w := h.wait
	h.mu.Unlock()
	if fx == nil || w == nil {
		deadline := time.Now().Add(e.opts.conversationWait)
		if d, ok := ctx.Deadline(); ok {
			deadline = d
		}
		w = &waitSpec{h: h, deadline: deadline, question: question, index: -1, messages: messages, anyone: anyone}
		if fx == nil {
			st.record(pos, effect{kind: fxWait, sum: sum(what), what: what})
		}
	}
	h.mu.Lock()
	r.waiting = true
	w.ended = nil
	h.wait = w
	h.mu.Unlock()
	if hc, ok := st.ctx.(*handlerContext); ok {
		hc.end(ErrWaiting) // the run is over: what it left waiting ends
	}
	return platform.Event{}, ErrWaiting
}

// errNoWait is what Next returns in the error hook.
var errNoWait = errors.New("engine: the error hook cannot wait for events")

// questionError returns the error of the Prompt question at place q if it
// failed, or nil.
func (h *handling) questionError(q int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.x != nil && h.x.question != nil && h.x.question.at == q {
		return h.x.question.err
	}
	if q >= 0 && q < len(h.log) && h.log[q].kind == fxSend {
		return h.log[q].error()
	}
	return nil
}

// Prompt replies with msg and waits for the user's answer: the next
// message from the same user in this chat, as Next(ctx, nil) returns it.
// If the reply fails, the user cannot answer: Prompt then returns an error
// wrapping ErrPromptNotSent and the reply's error, at once or (while the
// handler waits) by running the handler again.
func (c *Context) Prompt(ctx context.Context, msg platform.OutboundMessage) (platform.Event, error) {
	st := c.ev
	if st.chatKey == "" {
		return platform.Event{}, ErrNoChat
	}
	f, q := st.e.send(c, st.chatKey, st.event.Chat, msg, true)
	if f.IsDone() {
		_, err := f.Result()
		switch {
		case errors.Is(err, ErrWaiting) || errors.Is(err, ErrDiverged):
			return platform.Event{}, err
		case q < 0 && err != nil: // refused before it was queued: no question to answer
			return platform.Event{}, fmt.Errorf("%w: %w", ErrPromptNotSent, err)
		}
	}
	return c.wait(ctx, nil, q, false)
}

// UserError is an error whose Text may be shown to the user, for
// [Context.ReplyError]. Err is the cause, for the log. A handler that
// returns one has answered its user ("no such note"): the engine logs it
// at info level and does not count it among the handler errors.
type UserError struct {
	Text string
	Err  error
}

// NewUserError returns a *UserError with the given user-facing text and
// cause (which may be nil).
func NewUserError(text string, cause error) error { return &UserError{Text: text, Err: cause} }

// Error returns the text, followed by the cause if there is one.
func (e *UserError) Error() string {
	if e.Err == nil {
		return e.Text
	}
	return e.Text + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *UserError) Unwrap() error { return e.Err }

// isUserError reports whether err is a *UserError: a handler's answer to
// its user, not a failure of the handler.
func isUserError(err error) bool {
	var ue *UserError
	return errors.As(err, &ue)
}
