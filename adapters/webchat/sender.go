package webchat

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Sender is the web chat's [platform.Sender], returned by
// [Adapter.Sender]. It is safe for concurrent use; the zero value is not
// usable.
type Sender struct{ a *Adapter }

// Send delivers req.Message to every open tab of the chat req.Target.ID
// and adds it to the chat's history. It does not wait for the browser: it
// returns as soon as the message is queued for each tab, and the tabs
// receive the messages of a chat in the order of the Send calls that
// returned (one writer per tab writes its queue in order). A tab whose
// queue is full is disconnected instead; it reloads the history when it
// reconnects.
//
// The result's MessageID is the adapter's ID for the message (the page
// sends it back with a button press); IDs increase with each call.
//
// Send fails at once, without blocking:
//   - with ctx's error if ctx has ended;
//   - with an error wrapping [platform.ErrInvalidMessage], marked
//     [platform.Permanent], when the message does not validate;
//   - with an error wrapping [ErrInvalidChatID], marked permanent, when
//     the target ID cannot name a web chat;
//   - with an error wrapping [ErrNoConnection], which is not permanent,
//     when the chat has no open tab (none connected, or all too slow): the
//     message is then not kept in the history, and retry middleware may
//     try again once the tab is back, or record a dead letter.
func (s *Sender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	a := s.a
	if err := ctx.Err(); err != nil {
		return platform.SendResult{}, err
	}
	chatID := req.Target.ID
	if err := req.Message.Validate(); err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: send to %q: %w", chatID, err))
	}
	if !validChatID(chatID) {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: send to %q: %w", chatID, ErrInvalidChatID))
	}
	if req.Message.EditID != "" {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: editing a message: %w", platform.ErrUnsupported))
	}
	id := a.nextMessageID()
	t := time.Now()
	msg, err := marshal(a.wireBotMessage(id, req.Message, t))
	if err != nil { // unreachable: strings, bytes and a current time always encode
		return platform.SendResult{}, fmt.Errorf("webchat: send to %q: encoding: %w", chatID, err)
	}
	frame := encodeMessageFrame(frameMessage, msg)
	var buttons []string
	for _, row := range req.Message.Buttons {
		for _, b := range row {
			if b.Data != "" {
				buttons = append(buttons, b.Data)
			}
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.chats.getLocked(chatID)
	if ch == nil || a.fanoutLocked(ch, frame) == 0 {
		return platform.SendResult{}, fmt.Errorf("webchat: send to %q: %w", chatID, ErrNoConnection)
	}
	a.chats.pushLocked(ch, entry{id: id, msg: msg, buttons: buttons})
	return platform.SendResult{MessageID: id, ChatID: chatID, SentAt: t}, nil
}

// wireBotMessage converts a validated outbound message for the page.
func (a *Adapter) wireBotMessage(id string, m platform.OutboundMessage, t time.Time) wireMessage {
	w := wireMessage{
		ID:        id,
		Bot:       true,
		From:      wireUser{ID: botUserID, Name: a.cfg.BotName},
		Text:      m.Text,
		ParseMode: string(m.ParseMode),
		ReplyTo:   m.ReplyToID,
		Time:      t,
	}
	for _, at := range m.Attachments {
		wa := wireAttachment{Kind: string(at.Kind), URL: at.URL, Data: at.Data, FileName: at.FileName, Caption: at.Caption}
		if len(at.Data) > 0 {
			wa.MIME = http.DetectContentType(at.Data)
		}
		w.Attachments = append(w.Attachments, wa)
	}
	for _, row := range m.Buttons {
		wr := make([]wireButton, 0, len(row))
		for _, b := range row {
			wr = append(wr, wireButton(b))
		}
		w.Buttons = append(w.Buttons, wr)
	}
	return w
}
