package webchat

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heraldbot/herald/platform"
)

// Server frame types of answers and chat actions.
const (
	frameAnswer = "answer"
	frameAction = "action"
)

// Bounds of answers.
const (
	maxAnswerBytes = 1024 // an answer's text
	maxPresses     = 4096 // presses waiting for an answer, all tabs together
	pressPrefix    = "press-"
)

// wireAnswer is the answer object of an answer frame.
type wireAnswer struct {
	QueryID   string `json:"query_id"`
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Alert     bool   `json:"alert,omitempty"`
}

// wireAction is an action frame.
type wireAction struct {
	Type   string `json:"type"`
	Action string `json:"action"`
}

// press is a button press waiting for its answer: the tab that pressed.
type press struct {
	c         *conn
	messageID string
}

// presses are the presses waiting for an answer, by QueryID, guarded by
// Adapter.mu; past maxPresses the oldest are forgotten (their answers
// then fail with ErrAlreadyAnswered).
type presses struct {
	seq     uint64
	waiting map[string]press
	order   []string // QueryIDs, oldest first; may name answered ones
}

// addLocked records a press by c of a button under messageID and returns
// its QueryID.
func (p *presses) addLocked(c *conn, messageID string) string {
	if p.waiting == nil {
		p.waiting = map[string]press{}
	}
	p.seq++
	id := pressPrefix + strconv.FormatUint(p.seq, 10)
	for len(p.waiting) >= maxPresses && len(p.order) > 0 {
		delete(p.waiting, p.order[0])
		p.order = p.order[1:]
	}
	if len(p.order) > 2*maxPresses { // answered ones pile up: compact
		live := p.order[:0]
		for _, q := range p.order {
			if _, ok := p.waiting[q]; ok {
				live = append(live, q)
			}
		}
		p.order = live
	}
	p.waiting[id] = press{c: c, messageID: messageID}
	p.order = append(p.order, id)
	return id
}

// takeLocked removes and returns the press id, if it waits.
func (p *presses) takeLocked(id string) (press, bool) {
	pr, ok := p.waiting[id]
	delete(p.waiting, id)
	return pr, ok
}

var (
	_ platform.CallbackAnswerer = (*Adapter)(nil)
	_ platform.ChatActor        = (*Adapter)(nil)
)

// AnswerCallback answers the button press ev, and implements
// platform.CallbackAnswerer: the tab that pressed shows the answer's
// text, as a passing notice or, with Alert, as one that stays until
// dismissed; an empty answer shows nothing. A press is answered at most
// once: a second answer, or one to a press among the oldest of more than
// 4,096 waiting, fails with a permanent error wrapping
// platform.ErrAlreadyAnswered. A press whose tab has closed is answered
// with nothing to show. A press without a QueryID, or a text over 1 KiB,
// is refused with a permanent error wrapping platform.ErrInvalidMessage,
// and an answer with a URL with one wrapping platform.ErrUnsupported: the
// page opens no links on its own.
func (a *Adapter) AnswerCallback(ctx context.Context, ev platform.Event, ans platform.CallbackAnswer) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("webchat: answer: %w", err)
	}
	switch {
	case ev.QueryID == "":
		return platform.Permanent(fmt.Errorf("webchat: answer: %w: the press has no QueryID", platform.ErrInvalidMessage))
	case ans.URL != "":
		return platform.Permanent(fmt.Errorf("webchat: answer: %w: an answer that opens a URL", platform.ErrUnsupported))
	case len(ans.Text) > maxAnswerBytes:
		return platform.Permanent(fmt.Errorf("webchat: answer: %w: a text of %d bytes, over %d", platform.ErrInvalidMessage, len(ans.Text), maxAnswerBytes))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pr, ok := a.presses.takeLocked(ev.QueryID)
	if !ok {
		return platform.Permanent(fmt.Errorf("webchat: answer to %s: %w", ev.QueryID, platform.ErrAlreadyAnswered))
	}
	if _, open := a.open[pr.c]; !open || ans.Text == "" {
		return nil
	}
	b, err := marshal(struct {
		Type   string     `json:"type"`
		Answer wireAnswer `json:"answer"`
	}{frameAnswer, wireAnswer{QueryID: ev.QueryID, MessageID: pr.messageID, Text: ans.Text, Alert: ans.Alert}})
	if err != nil { // unreachable: strings always encode
		return fmt.Errorf("webchat: answer: %w", err)
	}
	if !pr.c.enqueueLocked(outFrame{data: b}) {
		a.slowLocked(pr.c)
	}
	return nil
}

// SendChatAction shows action in every open tab of chat ("Herald is
// typing…") for 5 s or until the bot's next message there, and
// implements platform.ChatActor. An unknown action is refused with a
// permanent error wrapping platform.ErrInvalidMessage, and a chat ID
// that cannot name a web chat with one wrapping ErrInvalidChatID; a chat
// with no open tab fails with ErrNoConnection (retryable), as a message
// would.
func (a *Adapter) SendChatAction(ctx context.Context, chat platform.Chat, action platform.ChatAction) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("webchat: chat action: %w", err)
	}
	switch {
	case !action.Known():
		return platform.Permanent(fmt.Errorf("webchat: %w: unknown chat action %q", platform.ErrInvalidMessage, action))
	case !validChatID(chat.ID):
		return platform.Permanent(fmt.Errorf("webchat: chat action in %q: %w", chat.ID, ErrInvalidChatID))
	}
	b, _ := marshal(wireAction{Type: frameAction, Action: string(action)}) // strings always encode
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch := a.chats.getLocked(chat.ID); ch == nil || a.fanoutLocked(ch, b) == 0 {
		return fmt.Errorf("webchat: chat action in %q: %w", chat.ID, ErrNoConnection)
	}
	return nil
}
