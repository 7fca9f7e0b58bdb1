package context

import (
	stdctx "context"
	"errors"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/platform"
)

// Errors with which a send's Future or a conversation step can end,
// besides the sender's own errors and package engine's (ErrNoSender,
// ErrSendPanicked, ErrSendAborted, ErrQueueFull, ErrJournal).
var (
	// ErrNoChat resolves the Future of a Reply to an event that has no chat
	// (a Telegram inline-mode callback, say), or of a Send to a chat with
	// an empty ID, and is returned by Next for an event without a chat.
	// Nothing is sent.
	ErrNoChat = handling.ErrNoChat
	// ErrPromptNotSent is wrapped by Prompt's error when its question
	// could not be sent.
	ErrPromptNotSent = handling.ErrPromptNotSent
	// ErrWaiting is what Next and Prompt return when the handler must wait
	// for an event that has not arrived: return it, as any error, and the
	// engine runs the handler again, from the top, when the event comes
	// (see Context.Next). It is no failure: the engine neither logs it nor
	// gives it to the WithOnError function, and handler middleware should
	// pass it on as it is. What a handler does after it got ErrWaiting —
	// sends, answers, writes — is not done.
	ErrWaiting = handling.ErrWaiting
	// ErrDiverged is wrapped by the error given to the WithOnError
	// function when a handler run again did not take the effects its
	// first run took, in the same order (see Context.Next): its
	// conversation ends there.
	ErrDiverged = handling.ErrDiverged
	// ErrCancelled is what Prompt, Next and NextInChat return when the
	// user left the conversation with the engine's cancel command
	// (engine.WithCancelCommand). A handler returns it as any error; the
	// engine takes that return as a clean end of the conversation, not a
	// failure.
	ErrCancelled = handling.ErrCancelled
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
// Package engine creates every Context; the zero value is not usable.
type Context struct {
	x handling.Ctx
}

// New returns the Context of the handler view x. It is meant for package
// engine, which makes every Context: a bot author is given Contexts and
// never makes one.
func New(x handling.Ctx) *Context { return &Context{x: x} }

// Event returns the inbound event.
func (c *Context) Event() platform.Event { return *c.x.Event() }

// Chat returns the chat the event happened in.
func (c *Context) Chat() platform.Chat { return c.x.Event().Chat }

// From returns the user who caused the event.
func (c *Context) From() platform.User { return c.x.Event().From }

// Text returns the event's text: a message's text, or a callback's data.
func (c *Context) Text() string { return c.x.Event().Text }

// Platform returns the name of the adapter the event came from.
func (c *Context) Platform() string { return c.x.Event().Platform }

// Attachments returns the files the event's message carries, in the
// platform's order (see platform.Attachment): photos with their sizes,
// documents, videos, voice notes and the rest; nil when it has none. The
// slice is the event's: do not change it.
func (c *Context) Attachments() []platform.Attachment { return c.x.Event().Attachments }

// Command returns the name of the command that matched, without prefix or
// @botname ("echo" for "/echo@MyBot hi"), or "" if no command matcher ran
// the handler.
func (c *Context) Command() string { return c.x.Match().Command }

// Args returns the command's arguments split like a shell splits words:
// quotes group words and are removed ("/say 'hello world' x" gives
// ["hello world", "x"]).
func (c *Context) Args() []string { return c.x.Match().Args }

// RawArgs returns the text after the command (or an OnPrefix prefix),
// with surrounding space trimmed.
func (c *Context) RawArgs() string { return c.x.Match().RawArgs }

// Matches returns a regex matcher's submatches: Matches()[0] is the text
// the expression matched, then one entry per group. It is nil for other
// matchers.
func (c *Context) Matches() []string { return c.x.Match().Groups }

// Context returns the handler's context. It is cancelled when this run of
// the event's handlers ends, when its time limit passes, or when the
// engine is force-closed.
func (c *Context) Context() stdctx.Context { return c.x.Context() }

// Logger returns the engine's logger with the event's platform, chat and
// event ID as fields.
func (c *Context) Logger() *zap.Logger { return c.x.Logger() }

// Set stores a value for the handlers of this event that run after this one.
func (c *Context) Set(key string, value any) { c.x.Set(key, value) }

// Get returns the value Set stored under key, and whether there was one.
func (c *Context) Get(key string) (any, bool) { return c.x.Get(key) }

// Reply queues msg for the event's chat and returns at once — unless the
// chat already has its dispatcher's QueueSize sends waiting (a user
// writing faster than the chat takes replies): then Reply first waits for
// room, until the handler's context ends, so that the chat's flood slows
// its own handling instead of losing replies (Stats.RoomWaits counts
// such waits). At most half the engine's handlers wait so at once (the
// others keep the other chats going), and a handler run again after a
// restart does not wait (its sends are mostly the duplicates of those
// made before).
//
// When Reply returns, the send is in the outbound dispatcher and will be
// made even after the handler returns, after every send queued before it
// for the same chat. Reply does not wait for the send and does not promise
// delivery: wait on the returned Future for the result (the platform's
// message ID) or the error. The Future is never nil and is always resolved:
// with the sender's result or error, with the context's error if the send
// timed out or the engine was force-closed, with an error wrapping
// engine.ErrSendPanicked if the sender panicked, at once with a permanent
// error wrapping platform.ErrInvalidMessage for a message that cannot be
// sent, or at once with the dispatcher's error (such as
// engine.ErrQueueFull, once the wait for room ended with the handler's
// context) if the send could not be queued.
func (c *Context) Reply(msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	return c.x.Reply(msg)
}

// ReplyText is shorthand for Reply(platform.TextMessage(text)).
func (c *Context) ReplyText(text string) *future.Future[platform.SendResult] {
	return c.x.Reply(platform.TextMessage(text))
}

// ReplyTexts are the words ReplySuccess and ReplyError add to a reply
// (engine.WithReplyTexts sets them): Success before ReplySuccess's text,
// Error before a [UserError]'s text, and Apology, ReplyError's whole reply
// to an error without one. The engine's are [DefaultReplyTexts]; an empty
// Apology means DefaultReplyTexts' without its prefix.
type ReplyTexts struct {
	Success, Error, Apology string
}

// DefaultReplyTexts are the words ReplySuccess and ReplyError add unless
// the engine is given others.
var DefaultReplyTexts = ReplyTexts{Success: "✅ ", Error: "⚠️ ", Apology: "⚠️ Sorry, something went wrong."}

// ReplySuccess replies with text marked as a success: after the engine's
// ReplyTexts Success ("✅ " by default).
func (c *Context) ReplySuccess(text string) *future.Future[platform.SendResult] {
	return c.x.Reply(platform.TextMessage(ReplyTexts(c.x.Texts()).Success + text))
}

// ReplyError tells the user that something went wrong, without showing
// them err: the reply is err's [UserError] text if it has one (after the
// engine's ReplyTexts Error, "⚠️ " by default), and a generic apology
// otherwise (ReplyTexts Apology). Called in a handler, it logs err at warn
// level (info for a UserError); in the WithOnError function it logs
// nothing, as the engine logged err before calling it: an error is logged
// once.
func (c *Context) ReplyError(err error) *future.Future[platform.SendResult] {
	texts := ReplyTexts(c.x.Texts())
	text := texts.Apology
	if text == "" {
		text = "Sorry, something went wrong."
	}
	var ue *UserError
	if errors.As(err, &ue) && ue.Text != "" {
		text = texts.Error + ue.Text
	}
	switch {
	case c.x.InHook(): // the error hook's: logged by the engine
	case ue != nil:
		c.Logger().Info("user error reported to the user", zap.Error(err))
	default:
		c.Logger().Warn("handler error reported to the user", zap.Error(err))
	}
	return c.x.Reply(platform.TextMessage(text))
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
	return c.x.Edit(messageID, msg)
}

// Delete queues the deletion of the message messageID (the bot's own, or,
// where the platform lets it, a user's) from the event's chat: it is
// shorthand for Reply(platform.DeleteMessage(messageID)), with Reply's
// guarantees. It is made after every send queued before it for the chat,
// and the Future is always resolved: with a result naming the deleted
// message, or an error — a permanent one wrapping platform.ErrUnsupported
// on a platform that cannot delete messages, or wrapping
// platform.ErrInvalidMessage for an empty messageID.
func (c *Context) Delete(messageID string) *future.Future[platform.SendResult] {
	return c.x.Delete(messageID)
}

// Send queues msg for another chat of the event's platform, with the same
// guarantees as Reply: per-chat order among sends to that chat, and a Future
// that is always resolved.
func (c *Context) Send(chat platform.Chat, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	return c.x.Send(chat, msg)
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
// first waited, or, for a ctx without one, after the engine's
// WithConversationWait (an hour by default). It returns ErrNoChat for an
// event without a chat, and ErrCancelled when the user sent the engine's
// cancel command (WithCancelCommand). With a journal that keeps records,
// a conversation survives restarts: its events stay in the journal until
// its handling ended, and are handed over again, in order, at the next
// start or to the next process; a clean stop leaves it waiting where it
// was.
func (c *Context) Next(ctx stdctx.Context, accept func(platform.Event) bool) (platform.Event, error) {
	return c.x.Next(ctx, accept, false)
}

// NextInChat is Next for a conversation with the whole chat: it returns
// the next event from anyone in this chat that accept accepts (a nil
// accept takes the next message) — a quiz that the first right answer
// wins, a vote. Everything Next says holds for it, but for whose events
// it takes.
func (c *Context) NextInChat(ctx stdctx.Context, accept func(platform.Event) bool) (platform.Event, error) {
	return c.x.Next(ctx, accept, true)
}

// Prompt replies with msg and waits for the user's answer: the next
// message from the same user in this chat, as Next(ctx, nil) returns it.
// If the reply fails, the user cannot answer: Prompt then returns an error
// wrapping ErrPromptNotSent and the reply's error, at once or (while the
// handler waits) by running the handler again.
func (c *Context) Prompt(ctx stdctx.Context, msg platform.OutboundMessage) (platform.Event, error) {
	return c.x.Prompt(ctx, msg)
}

// Answer answers the button press the handler runs for (an
// [platform.EventCallback]) with text: a passing notification, or, with
// alert, an alert the user must dismiss; an empty text shows nothing. It
// is shorthand for AnswerCallback(c.Event(), platform.CallbackAnswer{Text:
// text, Alert: alert}); see AnswerCallback.
func (c *Context) Answer(text string, alert bool) error {
	return c.x.AnswerCallback(*c.x.Event(), platform.CallbackAnswer{Text: text, Alert: alert})
}

// AnswerCallback answers the button press ev, the handler's own event or
// one its Next returned, with a, and returns once the platform took the
// answer (within 5 s). Platforms that wait for an answer (Telegram) show
// the button busy until then: answer first, then do the slow work.
//
// A press is answered at most once. When the handling of the event ends
// (its handlers returned) and a press the handling had — its own event or
// one Next took — was not answered, the engine answers it empty, at once,
// so the button stops being busy; an adapter may also answer a press
// itself when no answer came in time (Telegram's, 10 s after it arrived).
// An answer that fails for a reason that may pass (a network error) may
// be tried again; the others stand.
//
// AnswerCallback returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not a press; one
// wrapping platform.ErrUnsupported on a platform without answers (the
// adapter is no platform.CallbackAnswerer: nothing waits for one, and a
// handler may reply instead); one wrapping platform.ErrAlreadyAnswered
// for a press answered before; and otherwise the adapter's error.
func (c *Context) AnswerCallback(ev platform.Event, a platform.CallbackAnswer) error {
	return c.x.AnswerCallback(ev, a)
}

// AnswerPreCheckout answers the last check of a payment the handler runs
// for (an [platform.EventPreCheckout]) with a: a.OK lets the payment go
// ahead, otherwise a.Error tells the user why the order was refused.
// Answer within Telegram's 10 seconds: a check the handling leaves
// unanswered is refused when it ends (and the adapter refuses one still
// unanswered after 8 s). A check is answered at most once, and an answer
// that fails for a reason that may pass may be tried again.
//
// It returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not a payment's check;
// one wrapping platform.ErrUnsupported on a platform without payments
// (the adapter is no platform.PreCheckoutAnswerer); one wrapping
// platform.ErrAlreadyAnswered for a check answered before; and otherwise
// the adapter's error.
func (c *Context) AnswerPreCheckout(a platform.PreCheckoutAnswer) error {
	return c.x.AnswerPreCheckout(a)
}

// AnswerJoinRequest approves (approve true) or declines the request to
// join a chat the handler runs for (an [platform.EventJoinRequest]). It
// returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not a join request; one
// wrapping platform.ErrUnsupported on a platform without them; one
// wrapping platform.ErrAlreadyAnswered for a request answered before; and
// otherwise the adapter's error.
func (c *Context) AnswerJoinRequest(approve bool) error { return c.x.AnswerJoinRequest(approve) }

// React sets the bot's reaction to the event's message to emoji (none
// removes it): shorthand for Reply(platform.ReactMessage(c.Event().MessageID,
// emoji...)), with Reply's guarantees. Platforms without reactions fail
// the Future with a permanent error wrapping platform.ErrUnsupported.
func (c *Context) React(emoji ...string) *future.Future[platform.SendResult] {
	return c.x.Reply(platform.ReactMessage(c.x.Event().MessageID, emoji...))
}

// Call calls the platform's method by its name with params (a value that
// marshals to a JSON object, nil for none) in the event's chat's order,
// through the sender chain — rate-limited, retried, logged, journaled —
// and returns its Future, whose result holds the platform's answer in
// Raw: the way to what Herald has no method for (Telegram: any Bot API
// method, such as "pinChatMessage"). The Future fails at once with a
// permanent error wrapping platform.ErrInvalidMessage for a bad method
// name or params, and with one wrapping platform.ErrUnsupported on a
// platform without such calls.
func (c *Context) Call(method string, params any) *future.Future[platform.SendResult] {
	msg, err := platform.CallMethod(method, params)
	if err != nil {
		return future.Resolved(platform.SendResult{}, platform.Permanent(err))
	}
	return c.x.Reply(msg)
}

// AnswerInline answers the inline query the handler runs for (an
// [platform.EventInlineQuery]: the user typed "@bot query") with a, the
// results the user picks from, and returns once the platform took the
// answer (within 5 s). Picking a result sends its Message to the chat the
// user typed in, from the user "via @bot"; the bot then gets an
// [platform.EventInlineResult] naming the result, if the platform is set to
// send one (Telegram: /setinlinefeedback with @BotFather). Such events have
// no chat: Reply fails with ErrNoChat.
//
// A query is answered at most once; an unanswered one shows no results.
// Answer quickly: Telegram drops an answer that comes more than about 10 s
// after the query. An answer that fails for a reason that may pass may be
// tried again.
//
// It returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not an inline query, or
// results the platform cannot send; one wrapping platform.ErrUnsupported on
// a platform without inline queries (the adapter is no
// platform.InlineAnswerer); one wrapping platform.ErrAlreadyAnswered for a
// query answered before; and otherwise the adapter's error.
func (c *Context) AnswerInline(a platform.InlineAnswer) error { return c.x.AnswerInline(a) }

// ChatActionInterval is how often [Context.ChatAction] shows its action
// again while the handling goes on: Telegram shows one for 5 s.
const ChatActionInterval = handling.ChatActionInterval

// ChatAction shows action ("typing", "upload_photo": see
// platform.ChatAction) in the event's chat while the handler works on its
// answer: now, and again every ChatActionInterval (4 s), until the event's
// handlers send something after the call (Reply, Send, Edit, Delete), a
// handler calls StopChatAction or ChatAction again (the new action takes
// the old one's place), or the handling of the event ends. The platform
// itself hides the action when the bot's message arrives.
//
// ChatAction returns at once: a goroutine of the engine's shows the
// action, and it has ended by the time the handling has. Chat actions are
// not messages: they do not go through the sender chain (no rate limit,
// retry or dead letter) nor the dispatcher's order; a failed one is logged
// at debug level, and a permanent failure ends the repetition.
//
// It returns ErrNoChat for an event without a chat, a permanent error
// wrapping platform.ErrUnsupported on a platform without chat actions (the
// adapter is no platform.ChatActor), one wrapping
// platform.ErrInvalidMessage for an empty action, and the handler's
// context's error once the handling ended.
func (c *Context) ChatAction(action platform.ChatAction) error { return c.x.ChatAction(action) }

// Typing is shorthand for ChatAction(platform.ActionTyping).
func (c *Context) Typing() error { return c.x.ChatAction(platform.ActionTyping) }

// StopChatAction stops the chat action ChatAction shows, if any, and
// waits until none is sent any more. The action already shown stays
// until the platform hides it (Telegram: within 5 s).
func (c *Context) StopChatAction() { c.x.StopChatAction() }

// Download fetches the file att, one of the attachments of an event of
// this Context's platform (the handler's own, or one Next returned), if
// it has at most maxBytes bytes (zero or less means
// platform.DefaultMaxDownload, 20 MiB). A file over the limit is refused
// before it is fetched whole (before any byte of it, when its size is
// known), with a permanent error wrapping platform.ErrFileTooLarge.
//
// It returns a permanent error wrapping platform.ErrUnsupported on a
// platform whose adapter cannot fetch files (it is no
// platform.Downloader), ctx's error (possibly wrapped) when ctx ends
// first, and otherwise the adapter's error: see platform.Downloader.
// Downloads do not go through the sender chain: they are not retried;
// check with platform.IsPermanent whether trying again may help.
func (c *Context) Download(ctx stdctx.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	return c.x.Download(ctx, att, maxBytes)
}

// UserError is an error whose Text may be shown to the user, for
// [Context.ReplyError]. Err is the cause, for the log. A handler returns
// one to answer its user ("no such note"), not as a failure: the engine
// logs it at info level, does not count it among the handler errors, and
// hands it to the error hook (engine.WithOnError), which shows Text with
// ReplyError — with no hook, the engine says nothing to the user.
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
