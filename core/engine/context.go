package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
// is cancelled when the handling of the event ends (after all its
// handlers returned).
//
// The engine creates every Context; the zero value is not usable.
type Context struct {
	ev    *eventState
	match match
}

// eventState is what the Contexts of one event share.
type eventState struct {
	e       *Engine
	ctx     context.Context
	event   platform.Event
	chatKey string       // "" when the event has no chat
	sends   atomic.Int64 // sends made for the event so far, by all its handlers
	// interrupted is set when a conversation step ended because the engine
	// stops: the handling did not end as the handler meant it to, and a
	// journal keeps the event for the next start.
	interrupted atomic.Bool
	// recovered is set for an event taken up from the journal at start:
	// its handlers run again, and their sends may repeat delivered ones.
	recovered bool
	// settled is set once the handling ended and the journal has the
	// event done: it will not run again, nor its sends repeat.
	settled atomic.Bool

	mu     sync.Mutex
	logger *zap.Logger
	values map[string]any

	// act is what the handling does besides sending: answers, presses
	// Next took, the chat action (callback.go, chataction.go).
	act interactions
}

// match is what a matcher found in an event, for the handler it runs.
type match struct {
	command string   // the command's name as written, without prefix or @botname
	rawArgs string   // the text after the command or prefix, trimmed
	args    []string // rawArgs split like a shell splits words
	groups  []string // a regex matcher's submatches
}

// newEventState returns the state of ev's handling with ctx.
func (e *Engine) newEventState(ctx context.Context, ev platform.Event) *eventState {
	st := &eventState{e: e, ctx: ctx, event: ev}
	if ev.Chat.ID != "" {
		st.chatKey = chatKey(ev.Platform, ev.Chat.ID)
	}
	return st
}

// newContext returns the Context for ev's handling, with no match yet.
func (e *Engine) newContext(ctx context.Context, ev platform.Event) *Context {
	return &Context{ev: e.newEventState(ctx, ev)}
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
	return c.ev.e.send(c.ev, c.ev.chatKey, c.ev.event.Chat, msg)
}

// nextSendID returns the id of the event's next send for the journal: the
// platform, the event's ID and the send's number, the same when the
// handlers run again on the event; "" for an event without an ID.
func (ev *eventState) nextSendID() string {
	n := ev.sends.Add(1)
	if ev.event.ID == "" {
		return ""
	}
	return ev.event.Platform + ":" + ev.event.ID + "/" + strconv.FormatInt(n, 10)
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
// generic apology otherwise. err itself goes to the log, at warn level.
func (c *Context) ReplyError(err error) *future.Future[platform.SendResult] {
	text := "⚠️ Sorry, something went wrong."
	var ue *UserError
	if errors.As(err, &ue) && ue.Text != "" {
		text = "⚠️ " + ue.Text
	}
	c.Logger().Warn("handler error reported to user", zap.Error(err))
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
	return c.ev.e.send(c.ev, chatKey(c.ev.event.Platform, chat.ID), chat, msg)
}

// Next waits for the next event of this event's chat that accept accepts
// and returns it: a conversation step, written as plain Go. A nil accept
// takes the next message from the same user. The event Next returns is
// the handler's: the matchers do not see it.
//
// The chat is in conversation from the handler's first Next until the
// event's handling ends, and Next takes the first accepted event that
// arrived in that time, even one that arrived while the handler was busy
// between two Nexts; events that arrived before the first Next are not
// offered. Events of a chat are handled one at a time, so the chat's other
// events (those accept refuses, such as other group members' messages)
// are handled by the matchers after the handler returns, in their order.
// accept runs on the handler's goroutine and may be called for events it
// refused before. A waiting handler holds none of the engine's handler
// slots (WithHandlerConcurrency) and its wait does not count against the
// handler timeout: thousands of users may be in a conversation at once
// while the other chats' events are handled. Once its event arrived, it
// takes a slot again (waiting for one to free, before events not yet
// started) and goes on.
//
// Next returns ctx's error when ctx ends first. A ctx without a deadline
// (c.Context() has none) is bounded by WithConversationWait, an hour by
// default: the user may never answer. It returns the handler's own
// Context()'s error once that ends (when the
// event's handling ends: a goroutine the handler left cannot take the
// chat's events from the matchers); an error wrapping ErrQueueFull when
// the chat's queue filled up meanwhile (the answer may be stuck behind a
// refused event); ErrEngineClosed once the engine shuts down; and
// ErrNoChat for an event without a chat.
func (c *Context) Next(ctx context.Context, accept func(platform.Event) bool) (platform.Event, error) {
	ev, err := c.next(ctx, accept, nil)
	if err != nil {
		return platform.Event{}, err
	}
	return *ev, nil
}

func (c *Context) next(ctx context.Context, accept func(platform.Event) bool, start func(*wait)) (*platform.Event, error) {
	ev := c.ev
	if ev.event.Chat.ID == "" {
		return nil, ErrNoChat
	}
	if err := ev.ctx.Err(); err != nil {
		return nil, err
	}
	if accept == nil {
		from := ev.event.From.ID
		accept = func(e platform.Event) bool { return e.Kind == platform.EventMessage && e.From.ID == from }
	}
	w := ev.newWait(ctx)
	defer w.end()
	var got *pendingEvent
	conv, err := ev.e.converse(&ev.event)
	if err == nil {
		if start != nil {
			start(w) // the chat is in conversation: no answer slips past
		}
		got, err = ev.e.await(w.ctx, ev, conv, accept)
	}
	if err != nil {
		return nil, ev.waitFailed(w.ctx, err)
	}
	ev.tookPress(&got.ev) // answered at the end of the handling, unless answered
	return &got.ev, nil
}

// wait is the context of one wait in Next: ctx's, ended too by the
// handling's end and, for a ctx without a deadline, by the conversation's
// bound.
type wait struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func() bool
	timer  *time.Timer
}

//go:noinline
func (ev *eventState) newWait(ctx context.Context) *wait {
	w := &wait{}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	if ctx != ev.ctx {
		w.stop = context.AfterFunc(ev.ctx, func() { w.cancel(ev.ctx.Err()) })
	}
	if _, ok := ctx.Deadline(); !ok {
		w.timer = time.AfterFunc(ev.e.opts.conversationWait, func() { w.cancel(context.DeadlineExceeded) })
	}
	return w
}

func (w *wait) end() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.stop != nil {
		w.stop()
	}
	w.cancel(nil)
}

// waitFailed returns the error a wait in Next reports.
//
//go:noinline
func (ev *eventState) waitFailed(ctx context.Context, err error) error {
	if errors.Is(err, ErrEngineClosed) {
		ev.interrupted.Store(true)
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		err = cause
	}
	return err
}

// Prompt replies with msg and waits for the user's answer: the next
// message from the same user in this chat, as Next(ctx, nil) returns it.
// The chat is in conversation before the question goes out, so no answer
// can slip past. If the reply fails, the user cannot answer: Prompt then
// returns at once with an error wrapping ErrPromptNotSent and the reply's
// error.
func (c *Context) Prompt(ctx context.Context, msg platform.OutboundMessage) (platform.Event, error) {
	ev, err := c.prompt(ctx, &msg)
	if err != nil {
		return platform.Event{}, err
	}
	return *ev, nil
}

func (c *Context) prompt(ctx context.Context, msg *platform.OutboundMessage) (*platform.Event, error) {
	return c.next(ctx, nil, func(w *wait) { c.ask(w, msg) })
}

// ask sends the question of Prompt, the chat in conversation; when it
// fails, the wait ends with ErrPromptNotSent. It is a function of its own
// so that a waiting handler's goroutine does not keep its frame.
//
//go:noinline
func (c *Context) ask(w *wait, msg *platform.OutboundMessage) {
	f := c.Reply(*msg)
	go func() { // ends when the reply is resolved or the wait ends
		select {
		case <-f.Done():
			if _, err := f.Result(); err != nil {
				w.cancel(fmt.Errorf("%w: %w", ErrPromptNotSent, err))
			}
		case <-w.ctx.Done():
		}
	}()
}

// UserError is an error whose Text may be shown to the user, for
// [Context.ReplyError]. Err is the cause, for the log.
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
