package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/internal/runid"
	"github.com/heraldbot/herald/platform"
)

// DefaultName is the adapter name New uses when none is given.
const DefaultName = "memory"

// ErrAlreadyRunning is returned by a second concurrent call to Run.
var ErrAlreadyRunning = platform.ErrAlreadyRunning

// Sent is a message the bot sent through the adapter, an edit of one
// (Message.EditID set, and MessageID the edited message's) or a deletion
// (Message.DeleteID set, and MessageID the deleted message's).
type Sent struct {
	Chat      platform.Chat
	Message   platform.OutboundMessage
	MessageID string
	At        time.Time
}

// Adapter is an in-memory platform.Adapter. Events injected with Say, Press
// and Emit before Run starts are delivered, in order, when it starts. Its
// methods are safe for concurrent use. Create it with New.
//
// It has every capability package platform describes: it implements
// platform.Downloader (files injected with SayFile), platform.CallbackAnswerer
// (see Answers), platform.ChatActor (Actions) and platform.InlineAnswerer
// (Query, Choose and InlineAnswers), sends every attachment kind and albums,
// and carries out edits and deletions (Shown shows the chat as it is now).
type Adapter struct {
	name string

	deliverMu sync.Mutex // orders deliveries
	mu        sync.Mutex
	handle    func(platform.Event)
	receiving <-chan struct{} // Run's Inbound.Receiving
	pending   []platform.Event
	seq       int
	idPrefix  string // of its event IDs, its own: see Emit
	msgSeq    int
	sent      map[string][]Sent
	calls     map[string]int
	faults    []fault
	rules     []func(platform.SendRequest) error
	changed   chan struct{} // see changedLocked

	files    map[string][]byte          // by FileID, from SayFile
	deleted  map[string]map[string]bool // chat ID → deleted message IDs
	answered map[string]bool            // QueryIDs answered
	answers  []Answer
	actions  map[string][]Action
	inline   []InlineAnswer
}

type fault struct {
	chatID string // "" matches any chat
	err    error
	panic  any
	delay  time.Duration
}

// An Option configures an Adapter.
type Option func(*Adapter)

// WithName sets the adapter's name (the platform name in events and in the
// engine's chat keys). The default is "memory".
func WithName(name string) Option { return func(a *Adapter) { a.name = name } }

// New returns an Adapter.
func New(opts ...Option) *Adapter {
	a := &Adapter{
		name:     DefaultName,
		sent:     make(map[string][]Sent),
		calls:    make(map[string]int),
		files:    make(map[string][]byte),
		deleted:  make(map[string]map[string]bool),
		answered: make(map[string]bool),
		actions:  make(map[string][]Action),
		idPrefix: runid.New() + "-",
	}
	for _, o := range opts {
		if o != nil {
			o(a)
		}
	}
	return a
}

// Private returns a private chat with the given ID.
func Private(id string) platform.Chat { return platform.Chat{ID: id, Type: platform.ChatPrivate} }

// Group returns a group chat with the given ID.
func Group(id string) platform.Chat {
	return platform.Chat{ID: id, Type: platform.ChatGroup, Title: "group " + id}
}

// User returns a user with the given ID and name.
func User(id, name string) platform.User { return platform.User{ID: id, Name: name} }

// Name returns the adapter's name.
func (a *Adapter) Name() string { return a.name }

// Run delivers injected events to in.Handle until in.Receiving closes or
// ctx ends, then returns nil; events injected meanwhile wait for the next
// Run. Listening only (in.Listen), it has no listener and returns at once.
func (a *Adapter) Run(ctx context.Context, in platform.Inbound) error {
	if in.Listen {
		return nil
	}
	handle := func(ev platform.Event) { _ = in.Handle(ev) } // the engine logs a refusal
	a.deliverMu.Lock()
	a.mu.Lock()
	if a.handle != nil {
		a.mu.Unlock()
		a.deliverMu.Unlock()
		return fmt.Errorf("memory: Run: %w", ErrAlreadyRunning)
	}
	a.handle, a.receiving = handle, in.Receiving
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, ev := range pending {
		handle(ev)
	}
	a.deliverMu.Unlock()

	select {
	case <-ctx.Done():
	case <-in.Receiving:
	}

	a.deliverMu.Lock()
	a.mu.Lock()
	a.handle = nil
	a.mu.Unlock()
	a.deliverMu.Unlock()
	return nil
}

// Say injects a text message from user in chat and returns the event.
func (a *Adapter) Say(chat platform.Chat, user platform.User, text string) platform.Event {
	return a.Emit(platform.Event{Kind: platform.EventMessage, Chat: chat, From: user, Text: text})
}

// Press injects a press of an inline button with the given callback data;
// the event's QueryID names it for AnswerCallback.
func (a *Adapter) Press(chat platform.Chat, user platform.User, data string) platform.Event {
	return a.Emit(platform.Event{Kind: platform.EventCallback, Chat: chat, From: user, Text: data})
}

// PressOn injects a press of an inline button under the bot's message
// messageID: the event's MessageID names that message, as real platforms'
// callbacks do, so a handler can edit it.
func (a *Adapter) PressOn(chat platform.Chat, user platform.User, messageID, data string) platform.Event {
	return a.Emit(platform.Event{Kind: platform.EventCallback, Chat: chat, From: user, MessageID: messageID, Text: data})
}

// Emit injects ev. It fills Platform with the adapter's name, and ID,
// MessageID (for messages), QueryID (for button presses and inline
// queries) and Time when they are empty, and returns the event as
// delivered. The IDs it fills are its own, unlike those of any other
// Adapter (a token of the adapter and a number), as a real platform's
// are: a journal that keeps what was handled by its ID does not take a
// new adapter's events for the old one's. A test that plays a
// platform's redelivery sets the ID itself.
func (a *Adapter) Emit(ev platform.Event) platform.Event {
	a.deliverMu.Lock()
	defer a.deliverMu.Unlock()
	a.mu.Lock()
	a.seq++
	ev.Platform = a.name
	if ev.ID == "" {
		ev.ID = a.idPrefix + strconv.Itoa(a.seq)
	}
	if ev.MessageID == "" && (ev.Kind == platform.EventMessage || ev.Kind == platform.EventEditedMessage) {
		ev.MessageID = "in-" + strconv.Itoa(a.seq)
	}
	if ev.QueryID == "" && (ev.Kind == platform.EventCallback || ev.Kind == platform.EventInlineQuery) {
		ev.QueryID = "q-" + strconv.Itoa(a.seq)
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	handle := a.handle
	if handle != nil && !(platform.Inbound{Receiving: a.receiving}).Taking() {
		handle = nil // Run stops taking events: this one waits for the next Run
	}
	if handle == nil {
		a.pending = append(a.pending, ev)
	}
	a.mu.Unlock()
	if handle != nil {
		handle(ev)
	}
	return ev
}

// Sender returns the adapter's Sender. It records every message it
// accepts; see Sent and WaitSent.
func (a *Adapter) Sender() platform.Sender { return platform.SenderFunc(a.send) }

func (a *Adapter) send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	chatID := req.Target.ID
	a.mu.Lock()
	a.calls[chatID]++
	f, hasFault := a.takeFaultLocked(chatID)
	rules := a.rules
	a.mu.Unlock()

	if hasFault {
		if f.delay > 0 && !backoff.Sleep(ctx, f.delay) {
			return platform.SendResult{}, fmt.Errorf("memory: send to %s: %w", chatID, ctx.Err())
		}
		if f.panic != nil {
			panic(f.panic)
		}
		if f.err != nil {
			return platform.SendResult{}, f.err
		}
	}
	if err := ctx.Err(); err != nil {
		return platform.SendResult{}, fmt.Errorf("memory: send to %s: %w", chatID, err)
	}
	if err := req.Message.Validate(); err != nil {
		return platform.SendResult{}, platform.Permanent(err)
	}
	for _, r := range rules {
		if err := r(req); err != nil {
			return platform.SendResult{}, err
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	s := Sent{Chat: req.Target, Message: req.Message, At: time.Now()}
	if id := req.Message.EditID; id != "" {
		if !a.hasMessageLocked(chatID, id) || a.deleted[chatID][id] {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("memory: edit: %w: no message %s in chat %s", ErrNoMessage, id, chatID))
		}
		s.MessageID = id
	} else if id := req.Message.DeleteID; id != "" {
		// A message deleted before counts as deleted: a delete repeated
		// after a lost answer succeeds.
		if !a.hasMessageLocked(chatID, id) {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("memory: delete: %w: no message %s in chat %s", ErrNoMessage, id, chatID))
		}
		if a.deleted[chatID] == nil {
			a.deleted[chatID] = make(map[string]bool)
		}
		a.deleted[chatID][id] = true
		s.MessageID = id
	} else {
		a.msgSeq++
		s.MessageID = strconv.Itoa(a.msgSeq)
	}
	a.sent[chatID] = append(a.sent[chatID], s)
	a.notifyLocked()
	return platform.SendResult{MessageID: s.MessageID, ChatID: chatID, SentAt: s.At}, nil
}

// ErrNoMessage is wrapped by the permanent error of an edit or deletion of
// a message the adapter did not send to that chat (or, for an edit, one
// deleted since).
var ErrNoMessage = errors.New("memory: no such message")

func (a *Adapter) hasMessageLocked(chatID, id string) bool {
	for _, s := range a.sent[chatID] {
		if s.MessageID == id {
			return true
		}
	}
	return false
}

func (a *Adapter) takeFaultLocked(chatID string) (fault, bool) {
	for i, f := range a.faults {
		if f.chatID == "" || f.chatID == chatID {
			a.faults = append(a.faults[:i:i], a.faults[i+1:]...)
			return f, true
		}
	}
	return fault{}, false
}

// FailNext makes the next sends to chatID ("" for any chat) fail, one per
// error, in order. Use platform.NewRetryAfter and platform.Permanent to
// imitate a platform's answers.
func (a *Adapter) FailNext(chatID string, errs ...error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, err := range errs {
		a.faults = append(a.faults, fault{chatID: chatID, err: err})
	}
}

// PanicNext makes the next send to chatID ("" for any chat) panic with v.
func (a *Adapter) PanicNext(chatID string, v any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = append(a.faults, fault{chatID: chatID, panic: v})
}

// SlowNext makes the next send to chatID ("" for any chat) wait d, or until
// its context ends, before it proceeds.
func (a *Adapter) SlowNext(chatID string, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = append(a.faults, fault{chatID: chatID, delay: d})
}

// FailWhen makes every send for which rule returns an error fail with that
// error, for the rest of the adapter's life. Rules run in the order added,
// after the faults of FailNext, PanicNext and SlowNext.
func (a *Adapter) FailWhen(rule func(platform.SendRequest) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rules = append(a.rules, rule)
}

// Sent returns the messages sent to chatID so far, in the order sent.
func (a *Adapter) Sent(chatID string) []Sent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Sent(nil), a.sent[chatID]...)
}

// Shown returns the messages of chatID as its users see them now: in the
// order sent, each with its latest edit applied (Message is the edit's and
// At its time; Message.EditID is set on edited ones), without the deleted
// ones.
func (a *Adapter) Shown(chatID string) []Sent {
	a.mu.Lock()
	defer a.mu.Unlock()
	var shown []Sent
	index := map[string]int{}
	for _, s := range a.sent[chatID] {
		if s.Message.DeleteID != "" || a.deleted[chatID][s.MessageID] {
			continue
		}
		if i, ok := index[s.MessageID]; ok {
			shown[i] = s
			continue
		}
		index[s.MessageID] = len(shown)
		shown = append(shown, s)
	}
	return shown
}

// Texts returns the texts of the messages sent to chatID so far, edits
// included (a deletion's text is empty), in the order sent.
func (a *Adapter) Texts(chatID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	texts := make([]string, len(a.sent[chatID]))
	for i, s := range a.sent[chatID] {
		texts[i] = s.Message.Text
	}
	return texts
}

// Calls returns how many times the Sender was called for chatID, including
// failed attempts.
func (a *Adapter) Calls(chatID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[chatID]
}

// WaitSent waits until chatID has received at least n messages and returns
// all it received, or returns ctx's error with what it received so far.
func (a *Adapter) WaitSent(ctx context.Context, chatID string, n int) ([]Sent, error) {
	for {
		a.mu.Lock()
		got := a.sent[chatID]
		if len(got) >= n {
			out := append([]Sent(nil), got...)
			a.mu.Unlock()
			return out, nil
		}
		out := append([]Sent(nil), got...)
		ch := a.changedLocked()
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return out, fmt.Errorf("memory: %d of %d messages to %s: %w", len(out), n, chatID, ctx.Err())
		}
	}
}
