package memory

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldbot/herald/platform"
)

var (
	_ platform.Downloader       = (*Adapter)(nil)
	_ platform.CallbackAnswerer = (*Adapter)(nil)
	_ platform.ChatActor        = (*Adapter)(nil)
	_ platform.InlineAnswerer   = (*Adapter)(nil)
)

// SayFile injects a message from user in chat carrying att, whose file
// holds data: the adapter keeps data under att.FileID (a new ID when it
// is empty) for Download, sets att.Size to len(data), and makes
// att.Caption the event's Text. It returns the event.
func (a *Adapter) SayFile(chat platform.Chat, user platform.User, att platform.Attachment, data []byte) platform.Event {
	a.mu.Lock()
	if att.FileID == "" {
		a.seq++
		att.FileID = "file-" + strconv.Itoa(a.seq)
	}
	a.files[att.FileID] = append([]byte(nil), data...)
	a.mu.Unlock()
	att.Size = int64(len(data))
	return a.Emit(platform.Event{
		Kind: platform.EventMessage, Chat: chat, From: user, Text: att.Caption,
		Attachments: []platform.Attachment{att},
	})
}

// Download returns the bytes of a file injected with SayFile, by
// att.FileID; see platform.Downloader. A file larger than maxBytes (zero
// or less: platform.DefaultMaxDownload) is refused with a permanent error
// wrapping platform.ErrFileTooLarge, an unknown FileID with one wrapping
// platform.ErrInvalidMessage.
func (a *Adapter) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: download: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = platform.DefaultMaxDownload
	}
	a.mu.Lock()
	data, ok := a.files[att.FileID]
	a.mu.Unlock()
	switch {
	case !ok:
		return nil, platform.Permanent(fmt.Errorf("memory: download: %w: no file %q", platform.ErrInvalidMessage, att.FileID))
	case int64(len(data)) > maxBytes:
		return nil, platform.Permanent(fmt.Errorf("memory: download: %w: %d bytes, over the limit of %d", platform.ErrFileTooLarge, len(data), maxBytes))
	}
	return append([]byte(nil), data...), nil
}

// Answer is the bot's answer to a button press (Event, a
// platform.EventCallback), as Answers returns it.
type Answer struct {
	Event    platform.Event
	Callback platform.CallbackAnswer
	At       time.Time
}

// AnswerCallback records the answer to the press ev; see
// platform.CallbackAnswerer. A press answered before is refused with a
// permanent error wrapping platform.ErrAlreadyAnswered, one without a
// QueryID with one wrapping platform.ErrInvalidMessage.
func (a *Adapter) AnswerCallback(ctx context.Context, ev platform.Event, ans platform.CallbackAnswer) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: answer: %w", err)
	}
	if ev.QueryID == "" || ev.Kind != platform.EventCallback {
		return platform.Permanent(fmt.Errorf("memory: answer: %w: not a button press with a QueryID", platform.ErrInvalidMessage))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answered[ev.QueryID] {
		return platform.Permanent(fmt.Errorf("memory: answer to %s: %w", ev.QueryID, platform.ErrAlreadyAnswered))
	}
	a.answered[ev.QueryID] = true
	a.answers = append(a.answers, Answer{Event: ev, Callback: ans, At: time.Now()})
	a.notifyLocked()
	return nil
}

// Answers returns the answers to button presses so far, in order.
func (a *Adapter) Answers() []Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Answer(nil), a.answers...)
}

// WaitAnswers waits until at least n presses were answered and returns
// all the answers, or returns ctx's error with those so far.
func (a *Adapter) WaitAnswers(ctx context.Context, n int) ([]Answer, error) {
	var got []Answer
	err := a.wait(ctx, func() bool {
		got = append(got[:0], a.answers...)
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("memory: %d of %d answers: %w", len(got), n, err)
	}
	return got, nil
}

// Action is a chat action the bot showed through the adapter.
type Action struct {
	Chat   platform.Chat
	Action platform.ChatAction
	At     time.Time
}

// SendChatAction records action in chat; see platform.ChatActor. An empty
// action is refused with a permanent error wrapping
// platform.ErrInvalidMessage.
func (a *Adapter) SendChatAction(ctx context.Context, chat platform.Chat, action platform.ChatAction) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: chat action: %w", err)
	}
	if action == "" || chat.ID == "" {
		return platform.Permanent(fmt.Errorf("memory: chat action: %w: no action or no chat", platform.ErrInvalidMessage))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actions[chat.ID] = append(a.actions[chat.ID], Action{Chat: chat, Action: action, At: time.Now()})
	a.notifyLocked()
	return nil
}

// Actions returns the chat actions shown in chatID so far, in order.
func (a *Adapter) Actions(chatID string) []Action {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Action(nil), a.actions[chatID]...)
}

// Query injects an inline query: user typed "@bot text". The event has no
// chat, and a QueryID for AnswerInline.
func (a *Adapter) Query(user platform.User, text string) platform.Event {
	return a.Emit(platform.Event{Kind: platform.EventInlineQuery, From: user, Text: text})
}

// Choose injects user's choice of the inline result resultID, one of the
// answers to query.
func (a *Adapter) Choose(user platform.User, resultID, query string) platform.Event {
	return a.Emit(platform.Event{Kind: platform.EventInlineResult, From: user, Text: query,
		Inline: platform.InlineQuery{ResultID: resultID}})
}

// InlineAnswer is an answer to an inline query, as InlineAnswers returns it.
type InlineAnswer struct {
	Event  platform.Event
	Answer platform.InlineAnswer
	At     time.Time
}

// AnswerInline records the answer to the inline query ev; see
// platform.InlineAnswerer. A query answered before is refused with a
// permanent error wrapping platform.ErrAlreadyAnswered; one without a
// QueryID, a result without an ID, two results with one ID and a result
// whose Message is not valid, has Data or more than one attachment, with
// one wrapping platform.ErrInvalidMessage.
func (a *Adapter) AnswerInline(ctx context.Context, ev platform.Event, ans platform.InlineAnswer) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: inline answer: %w", err)
	}
	if ev.QueryID == "" || ev.Kind != platform.EventInlineQuery {
		return platform.Permanent(fmt.Errorf("memory: inline answer: %w: not an inline query with a QueryID", platform.ErrInvalidMessage))
	}
	ids := make(map[string]bool, len(ans.Results))
	for i, r := range ans.Results {
		if err := checkResult(r, ids); err != nil {
			return platform.Permanent(fmt.Errorf("memory: inline answer: result %d: %w", i, err))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answered[ev.QueryID] {
		return platform.Permanent(fmt.Errorf("memory: inline answer to %s: %w", ev.QueryID, platform.ErrAlreadyAnswered))
	}
	a.answered[ev.QueryID] = true
	a.inline = append(a.inline, InlineAnswer{Event: ev, Answer: ans, At: time.Now()})
	a.notifyLocked()
	return nil
}

// checkResult checks an inline result; ids holds the IDs seen so far.
func checkResult(r platform.InlineResult, ids map[string]bool) error {
	m := r.Message
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: no ID", platform.ErrInvalidMessage)
	case ids[r.ID]:
		return fmt.Errorf("%w: ID %q used twice", platform.ErrInvalidMessage, r.ID)
	case len(m.Attachments) > 1 || m.Album || m.Keyboard != nil || m.EditID != "" || m.DeleteID != "" || m.ReplyToID != "":
		return fmt.Errorf("%w: a result sends a text or one attachment, with buttons", platform.ErrInvalidMessage)
	case len(m.Attachments) == 1 && len(m.Attachments[0].Data) > 0:
		return fmt.Errorf("%w: a result's attachment goes by URL or FileID", platform.ErrInvalidMessage)
	}
	ids[r.ID] = true
	return m.Validate()
}

// InlineAnswers returns the answers to inline queries so far, in order.
func (a *Adapter) InlineAnswers() []InlineAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]InlineAnswer(nil), a.inline...)
}

// notifyLocked wakes the waits; a.mu must be held.
func (a *Adapter) notifyLocked() {
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// changedLocked returns the channel notifyLocked closes next, made only
// when a wait asks for it (a send without waiters makes none); a.mu must
// be held.
func (a *Adapter) changedLocked() <-chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// wait waits until cond, called with a.mu held, returns true, or ctx ends.
func (a *Adapter) wait(ctx context.Context, cond func() bool) error {
	for {
		a.mu.Lock()
		ok, ch := cond(), a.changedLocked()
		a.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
