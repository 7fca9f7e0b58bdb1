package webchat

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Sender is the web chat's [platform.Sender], returned by
// [Adapter.Sender]. It is safe for concurrent use; the zero value is not
// usable.
type Sender struct{ a *Adapter }

// Send delivers req.Message to every open tab of the chat req.Target.ID
// and adds it to the chat's history, or, when req.Message.EditID is set,
// edits a message the bot sent there (see Edits below), or, when
// req.Message.DeleteID is set, deletes a message from it (see Deletions). It does not wait
// for the browser: it returns as soon as the frame is queued for each tab,
// and the tabs receive the messages and edits of a chat in the order of
// the Send calls that returned (one writer per tab writes its queue in
// order). A tab whose queue ([Config.QueueSize] frames,
// [Config.QueueBytes] bytes) is full is disconnected instead; it reloads
// the history when it reconnects.
//
// The result's MessageID is the adapter's ID for the message (the page
// sends it back with a button press); IDs increase with each new message.
//
// Every attachment kind is shown: photos, stickers and GIF animations as
// images, videos, video notes (round) and video animations (looping,
// muted) as video players, audio and voice notes as audio players, and
// documents as download links; a file sent as bytes whose type (its
// MIMEType, else what its bytes look like) the kind cannot show is a
// download link too. An album's attachments are shown together in one
// message, as every message's are. A file of more than 32 KiB, sent as
// Data or by the FileID of a file a user sent, is kept in the adapter's
// file store and shown by reference (see the package doc's Files): the
// message's frame and its place in the history hold a reference, not the
// bytes, whose copy is made once per content (sending a user's file back,
// even downloaded and sent as Data, refers to the file kept) and dropped
// again if the send fails.
//
// A reply keyboard (Keyboard) is shown under the message box of every tab
// of the chat, its buttons sending their text as the user's message, with
// its Placeholder in the box, until a later message replaces it or
// removes it (Remove); a OneTime keyboard hides once a button was
// pressed, and a button beside the box brings it back. The chat keeps the
// keyboard up, whatever its history drops, so a tab that connects later
// shows it. A keyboard of more than 16 KiB (encoded) is refused for good
// with an error wrapping [platform.ErrInvalidMessage].
//
// # Streamed replies
//
// A part of a streamed reply ([platform.StreamPart]) is a message: the
// first is sent as a new message, and each later one (naming that message
// in its MessageID) edits it in place, so the tabs show the reply
// growing, as they show any edit; the final part's text and buttons stay.
// [Adapter.StreamInterval] paces the parts. Reactions, invoices and method
// calls are refused with a permanent error wrapping
// [platform.ErrUnsupported].
//
// # Deletions
//
// A deletion removes the message DeleteID, the bot's or a user's, from the
// history of the chat req.Target.ID and from every open tab of it, which
// get a delete frame in order with the chat's other messages; its buttons
// stop working, and replies to it quote it as deleted. Like an edit, it
// needs no open tab. A message the adapter sent or received that the
// history no longer keeps counts as deleted: the open tabs are told, in
// case they still show it, and the deletion succeeds. The result names
// the deleted message: MessageID is DeleteID, ChatID the chat, and SentAt
// the time of the deletion.
//
// # Edits
//
// An edit replaces the text, the parse mode and the buttons (none, when
// Buttons is nil) of the bot's message EditID, which must be kept in the
// history of the chat req.Target.ID. The message keeps its place in the
// conversation, its time, its reply_to and its attachments, and is marked
// edited at the time of the edit. Its old buttons stop working at once (a
// press of a button it no longer has is refused with an unknown_button
// error frame) and its new ones work. Every open tab of the chat gets an
// edit frame, and the history keeps the edited message, so a tab that
// connects later shows it as edited. The result names the edited message:
// MessageID is EditID, ChatID the chat, and SentAt the time of the edit.
//
// An edit succeeds with no tab open, unlike a new message: it changes a
// message the history keeps, and a tab shows the history when it
// connects, so the edit reaches the user on their next visit. Failing it
// with the retryable ErrNoConnection would instead leave the old text,
// and the old buttons working, until a retry got through, and for good
// once the retries ended in the dead letters; and retrying an edit is
// pointless when the state it sets is already kept.
//
// The edited message counts against the history's budgets with its new
// size, as a new message does: a larger message may push the chat's
// oldest messages, itself included if it is the oldest, out of the
// history (see [Config.HistoryBytes] and [Config.MaxHistoryBytes]). An
// edited message larger on its own than either budget leaves the history,
// and, like a new message of that size, only the open tabs get the edit;
// with no tab open, that edit fails with ErrNoConnection and changes
// nothing. Edit frames count against each tab's queue as message frames
// do.
//
// Send fails at once, without blocking:
//   - with ctx's error if ctx has ended;
//   - with an error wrapping [platform.ErrInvalidMessage], marked
//     [platform.Permanent], when the message does not validate (an edit
//     with attachments, a ReplyToID or no text included);
//   - with an error wrapping [ErrInvalidChatID], marked permanent, when
//     the target ID cannot name a web chat;
//   - with an error wrapping [platform.ErrInvalidMessage], marked
//     permanent, for an attachment by a FileID that names no file a user
//     sent that the adapter still keeps;
//   - with an error wrapping [platform.ErrFileTooLarge], marked
//     permanent, for a file larger than [Config.UploadBytes];
//   - with an error wrapping [ErrNoRoom], which is not permanent, when
//     the files being read from tabs and fetched by them leave no room in
//     the file store for a large file at the moment;
//   - with an error wrapping [ErrNoMessage], marked permanent, for an edit
//     of a message that is not a bot message kept in the chat's history
//     (one never sent to that chat, a user's message, or one the history
//     has dropped), and for a deletion of a message ID the adapter never
//     gave out;
//   - with an error wrapping [ErrNoConnection], which is not permanent,
//     when the chat has no open tab (none connected, or all too slow) for
//     a new message, or for an edit too large to be kept: the message is
//     then not kept in the history (the edit not applied), and retry
//     middleware may try again once the tab is back, or record a dead
//     letter.
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
	switch m := req.Message; {
	case m.EditID != "":
		return a.edit(chatID, m)
	case m.DeleteID != "":
		return a.deleteMessage(chatID, m.DeleteID)
	case m.ReactID != "", m.Invoice != nil, m.Call != nil:
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: send to %q: %w: reactions, invoices and method calls", chatID, platform.ErrUnsupported))
	case m.Stream != nil && m.Stream.MessageID != "":
		// A streamed reply shown so far: its message grows in place.
		edit := m
		edit.EditID, edit.Stream, edit.ReplyToID, edit.Reply = m.Stream.MessageID, nil, "", nil
		return a.edit(chatID, edit)
	}
	kb, err := wireKeyboardOf(req.Message.Keyboard)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: send to %q: %w", chatID, err))
	}
	m := req.Message
	atts, refs, err := a.wireAttachments(chatID, m.Attachments)
	if err != nil {
		return platform.SendResult{}, fmt.Errorf("webchat: send to %q: %w", chatID, err)
	}
	id := a.nextMessageID()
	t := time.Now()
	w := a.wireBotMessage(id, m, t)
	w.Attachments, w.Keyboard = atts, kb
	msg, err := marshal(w)
	if err != nil { // unreachable: strings, bytes and a current time always encode
		a.files.revoke(refs...)
		return platform.SendResult{}, fmt.Errorf("webchat: send to %q: encoding: %w", chatID, err)
	}
	frame := encodeMessageFrame(frameMessage, msg)
	buttons := callbackData(m.Buttons)

	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.chats.getLocked(chatID)
	if ch == nil || a.fanoutLocked(ch, frame) == 0 {
		a.files.revoke(refs...)
		return platform.SendResult{}, fmt.Errorf("webchat: send to %q: %w", chatID, ErrNoConnection)
	}
	if kb != nil {
		ch.keyboard = kb
		if kb.Remove {
			ch.keyboard = nil
		}
	}
	a.chats.pushLocked(ch, entry{id: id, bot: true, msg: msg, buttons: buttons, files: refs})
	return platform.SendResult{MessageID: id, ChatID: chatID, SentAt: t}, nil
}

// wireKeyboardOf converts a validated reply keyboard for the page: nil
// for none, or an error wrapping platform.ErrInvalidMessage when it is
// larger encoded than maxKeyboard, since the chat keeps the keyboard up
// until it is removed, its history aside.
func wireKeyboardOf(k *platform.ReplyKeyboard) (*wireKeyboard, error) {
	if k == nil {
		return nil, nil
	}
	if k.Remove {
		return &wireKeyboard{Remove: true}, nil
	}
	// A copy: the chat keeps it, and the caller may reuse its rows.
	rows := make([][]string, len(k.Rows))
	for i, row := range k.Rows {
		rows[i] = slices.Clone(row)
	}
	w := &wireKeyboard{Rows: rows, OneTime: k.OneTime, Placeholder: k.Placeholder}
	if b, err := marshal(w); err != nil || len(b) > maxKeyboard {
		return nil, fmt.Errorf("%w: a reply keyboard of more than %d bytes", platform.ErrInvalidMessage, maxKeyboard)
	}
	return w, nil
}

// wireBotMessage converts a validated outbound message for the page,
// without its attachments (see wireAttachments).
func (a *Adapter) wireBotMessage(id string, m platform.OutboundMessage, t time.Time) wireMessage {
	return wireMessage{
		ID:        id,
		Bot:       true,
		From:      wireUser{ID: botUserID, Name: a.cfg.BotName},
		Text:      m.Text,
		ParseMode: string(m.ParseMode),
		ReplyTo:   m.ReplyToID,
		Time:      t,
		Buttons:   wireButtons(m.Buttons),
	}
}

// mimeOf returns the media type of an attachment sent as bytes: its
// MIMEType, if that is a valid type (without its parameters, so the page's
// data: URL cannot be broken by one), else what its bytes look like, named
// as browsers name it (they refuse to play audio/wave, http's name for
// WAV, and an Ogg file plays as audio/ogg or video/ogg).
func mimeOf(at platform.Attachment) string {
	if mt, _, err := mime.ParseMediaType(at.MIMEType); err == nil && strings.Count(mt, "/") == 1 {
		return mt
	}
	switch mt := http.DetectContentType(at.Data); mt {
	case "audio/wave":
		return "audio/wav"
	case "application/ogg":
		switch at.Kind {
		case platform.AttachAudio, platform.AttachVoice:
			return "audio/ogg"
		case platform.AttachVideo, platform.AttachVideoNote, platform.AttachAnimation:
			return "video/ogg"
		}
		return mt
	default:
		return mt
	}
}

// wireButtons converts rows of buttons for the page; no rows give nil.
func wireButtons(rows [][]platform.Button) [][]wireButton {
	var out [][]wireButton
	for _, row := range rows {
		wr := make([]wireButton, 0, len(row))
		for _, b := range row {
			wr = append(wr, wireButton(b))
		}
		out = append(out, wr)
	}
	return out
}

// callbackData returns the Data of the callback buttons among rows: what
// a tab may press under the message.
func callbackData(rows [][]platform.Button) []string {
	var data []string
	for _, row := range rows {
		for _, b := range row {
			if b.Data != "" {
				data = append(data, b.Data)
			}
		}
	}
	return data
}

// streamInterval is the least time between the parts of a streamed reply
// to a web chat: edits are cheap frames, so the reply grows smoothly.
const streamInterval = 250 * time.Millisecond

// StreamInterval returns 250 ms, the least time between the parts of a
// streamed reply ([platform.Stream]) to any chat: a tab shows each part as
// an edit of the reply's message. It implements
// [platform.StreamingAdapter].
func (a *Adapter) StreamInterval(platform.Chat) time.Duration { return streamInterval }

var _ platform.StreamingAdapter = (*Adapter)(nil)
