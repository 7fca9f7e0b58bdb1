package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// Send delivers req.Message to the chat req.Target.ID (a decimal chat ID,
// or "@channelusername"), or, for an edit, changes the bot's earlier
// message there (see Edits below), and implements [platform.Sender];
// [Adapter.Sender] returns it as one. It is safe for concurrent use; sends
// to one chat should come one at a time (Herald's dispatcher sees to
// that), or their messages may interleave.
//
// The message is checked first; an invalid one ([platform.OutboundMessage]
// Validate, a chat or reply ID that is not a number, a caption over 1024
// characters, callback data over 64 bytes, a text of white space only) is
// refused with a [platform.Permanent] error and nothing is sent.
//
// The text goes out first, with its parse mode ([platform.ParseMarkdown] is
// Telegram's legacy "Markdown", which leaves ordinary punctuation alone;
// MarkdownV2 would reject an unescaped "." or "!"; [platform.ParseHTML] is
// "HTML"). A text over Telegram's 4096 characters is split into several
// messages: at line breaks, else at spaces, and, in HTML and Markdown,
// where no element or entity is open (see the package doc). Then each
// attachment follows with its method (sendPhoto, sendDocument, sendVideo,
// sendAudio, sendVoice, sendAnimation, sendSticker, sendVideoNote), by
// URL, by FileID or uploaded from bytes, with its caption in the same
// parse mode; stickers and video notes have no caption, and a video note
// cannot go by URL (both refused with platform.ErrUnsupported). With
// Album, the attachments go as one sendMediaGroup instead: 2 to 10
// photos and videos, or documents, or audio (other mixes, and other
// kinds, are refused with platform.ErrUnsupported; more than 10 with
// platform.ErrInvalidMessage), each with its caption; the result names the
// album's last message. The first message replies to ReplyToID (sent with
// allow_sending_without_reply, so a deleted original does not fail the
// send), and the last one carries the inline keyboard of Buttons, or the
// reply keyboard of Keyboard (resize_keyboard set; Remove sends
// remove_keyboard): one of the two, as Telegram has one reply_markup per
// message, and none under an album, which has none (both refused with
// platform.ErrUnsupported).
//
// A message with DeleteID set deletes that message with deleteMessage;
// one that is not there any more ("message to delete not found") counts
// as deleted, so a deletion repeated after a lost answer succeeds; an ID
// that is not a message ID is refused with platform.ErrInvalidMessage, and
// Telegram's refusals ("message can't be deleted": too old, or another's
// in a chat where the bot is no admin) are permanent. A deletion is never
// ambiguous. The result names the deleted message.
//
// A message of several parts is sent part by part, in order. Before each
// part after the first Send pauses, to stay within Telegram's limits
// (which Herald's RateLimit, counting one token per Send, cannot see): 1 s
// in a private chat, 3 s in a group or channel (Target.Type, or a
// negative ID or @username), or, when ctx's deadline leaves less room, an
// equal share of it, keeping 0.5 s for each part still to send. Under
// Herald's dispatcher (a ctx carrying a resumable platform.Progress)
// Send does not sleep through these pauses, nor through the waits before
// a later part's retries (below): it saves how far it got and returns
// the Progress's pause, so the worker serves other chats meanwhile, and
// the next run sends the next part.
//
// The result's MessageID is the last message's ID, ChatID the chat it went
// to and SentAt the local time Telegram accepted it. When Telegram answers
// that the group became a supergroup (400 with migrate_to_chat_id), the
// message is sent once more to the new chat, which the result's ChatID
// then names, and a warning is logged.
//
// Errors, while nothing was delivered (a single message, or the first
// part): a 429 is a [platform.NewRetryAfter] error with Telegram's
// retry_after; other 4xx answers are permanent; 5xx answers, network
// errors and answers that are not JSON are plain (retryable) errors; the
// end of ctx aborts the request in flight and returns an error wrapping
// ctx's error.
//
// Ambiguous errors. A failure after the request was written — the
// connection reset, no answer before ctx's end (a per-attempt timeout), a
// 5xx, an answer that is not Bot API JSON — may come after Telegram
// delivered the message: it matches [platform.ErrMaybeDelivered]. It stays
// retryable, so the sender chain delivers the message at least once,
// possibly twice; with [Config.AvoidDuplicates] it is [platform.Permanent]
// too, so it is dead-lettered instead: at most once. A failure before the
// request was written (a refused dial, a name that does not resolve, ctx
// ended, the connection broke while writing) surely delivered nothing: it
// does not match ErrMaybeDelivered and stays retryable either way. An
// answer "ok" whose result cannot be read is success, with an empty
// MessageID: the message was delivered.
//
// Once the first part was delivered, trying the whole message again would
// deliver it twice, so Send never returns a retryable error: it retries a
// later part itself (a 429 waited out exactly, unless the wait is over a
// minute or would outlast ctx's deadline, which gives up at once; a 5xx or
// network failure after a backoff of 0.5 s doubling, up to 4 attempts in
// all; with AvoidDuplicates, an ambiguous failure is not retried), and if
// the part still fails, or ctx ends, it returns a [platform.Permanent]
// error saying "part k of n failed; parts 1 to k-1 were delivered", which
// matches ErrMaybeDelivered (sending the message again would repeat those
// parts) and which the sender chain dead-letters instead of retrying. It
// wraps the last error, so [platform.RetryAfterOf] and errors.As still see
// it. Errors wrap [*APIError] for Telegram's answers and never contain the
// token.
//
// Edits. A message with EditID set (see [platform.OutboundMessage]) is an
// edit: Send calls editMessageText for the message EditID in the target
// chat, with the text in its parse mode (as for sends) and the inline
// keyboard of Buttons; with nil Buttons it sends none, which removes the
// old keyboard. Its requests (one, or two for a caption, below) go the
// same path as sends: bound to ctx, with the same error mapping and token
// hygiene. Refused
// before any request, with a [platform.Permanent] error wrapping
// [platform.ErrInvalidMessage]: an EditID that is not a message ID as
// Send's results give them (a positive decimal integer), a text over 4096
// characters (counted as for splitting, in UTF-16 code units with the
// markup; one message cannot be split into several), a text of white
// space only, and callback data over 64 bytes. Telegram's answers:
//   - "message is not modified" (the message already shows this text and
//     keyboard) is success;
//   - "there is no text in the message to edit" (a photo or document)
//     makes Send edit the message's caption instead, with
//     editMessageCaption; a text over the caption limit of 1024 characters
//     is then refused for good;
//   - a 429 is a [platform.NewRetryAfter] error, a 5xx or network failure
//     retryable, and other 4xx answers ("message to edit not found",
//     "message can't be edited") permanent; an edit's errors never match
//     [platform.ErrMaybeDelivered], with AvoidDuplicates too: an edit sent
//     again after it was carried out answers "message is not modified",
//     which is success, so repeating one cannot duplicate anything;
//   - a group that became a supergroup is not followed: the supergroup
//     numbers its messages afresh, so the error is permanent.
//
// The result of an edit names the edited message: MessageID is EditID,
// ChatID the target's ID, SentAt the local time Telegram accepted the edit.
//
// Topics, business connections and options. Every request of a send goes
// to req.Target's Thread (message_thread_id; one that is not a positive
// number is refused with platform.ErrInvalidMessage) and through its
// BusinessConnectionID (business_connection_id; edits and chat actions
// too, and a deletion then is deleteBusinessMessages). The first message
// carries the reply (Reply or ReplyToID, as reply_parameters, sent even
// when the original is gone unless Reply.Required) and the effect; every
// message the flags Silent, Protected and PaidBroadcast; a text its
// LinkPreview; Entities go with a text that fits one message (one that
// does not is refused).
//
// Other operations:
//   - ReactID sets the bot's reaction with setMessageReaction; the result
//     names the message.
//   - Invoice sends sendInvoice (currency "XTR" when empty, prices,
//     Buttons as its keyboard, the options above); it may be ambiguous
//     as a sendMessage is.
//   - Call calls the method by name ([platform.MethodCall]): see the
//     package doc; errors map as for sends.
//   - Stream is a part of a streamed reply ([platform.StreamPart]): a part
//     before the final one shows its text (cut back to what parses and to
//     4096 characters) as a message draft in a private chat, else by
//     sending a message (the first part; the result names it) or editing
//     it (MessageID set); the final part sends the whole reply as a
//     message after drafts, or edits the message to it, the text past
//     4096 characters following as new messages, the buttons under the
//     last.
func (a *Adapter) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	res, err := a.send(ctx, req)
	return res, a.red.Error(err)
}

func (a *Adapter) send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	if pr := a.resumedParts(ctx, req); pr != nil {
		// A later run of a long message paused between its parts.
		return a.sendParts(ctx, pr)
	}
	if err := ctx.Err(); err != nil {
		return platform.SendResult{}, err
	}
	m := req.Message
	if err := m.Validate(); err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	switch {
	case m.EditID != "":
		return a.edit(ctx, req)
	case m.DeleteID != "":
		return a.delete(ctx, req)
	case m.ReactID != "":
		return a.react(ctx, req)
	case m.Call != nil:
		return a.call(ctx, req)
	case m.Stream != nil:
		return a.stream(ctx, req)
	}
	dest, err := destinationOf(req.Target)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	var parts []part
	if m.Invoice != nil {
		parts, err = planInvoice(m)
	} else {
		parts, err = planMessage(m)
	}
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}

	return a.sendParts(ctx, &partsProgress{
		parts:   parts,
		dest:    dest,
		pause:   partPause(req.Target),
		attempt: 1,
	})
}

// sendParts sends the parts of a message from pr.next on.
func (a *Adapter) sendParts(ctx context.Context, pr *partsProgress) (platform.SendResult, error) {
	for ; pr.next < len(pr.parts); pr.next, pr.attempt, pr.waited = pr.next+1, 1, false {
		if pr.next == 0 {
			// Nothing delivered yet: the error is the caller's to retry
			// (all of it).
			last, err := a.sendPartTo(ctx, &pr.dest, pr.parts[0])
			if err != nil {
				if len(pr.parts) > 1 {
					err = fmt.Errorf("telegram: part 1 of %d: %w", len(pr.parts), err)
				}
				return platform.SendResult{}, a.ambiguity(err)
			}
			pr.last = last
			continue
		}
		last, err := a.sendLaterPart(ctx, pr)
		if err != nil {
			return platform.SendResult{}, err
		}
		pr.last = last
	}
	return platform.SendResult{
		MessageID: messageID(pr.last.MessageID),
		ChatID:    pr.dest.chatID,
		SentAt:    time.Now(),
	}, nil
}

// ambiguity applies [Config.AvoidDuplicates] to err, a failure of a
// message of which nothing was delivered for sure: an error that matches
// [platform.ErrMaybeDelivered] becomes [platform.Permanent] with it, and
// is otherwise returned as it is.
func (a *Adapter) ambiguity(err error) error {
	if a.cfg.AvoidDuplicates && errors.Is(err, platform.ErrMaybeDelivered) {
		return platform.Permanent(err)
	}
	return err
}

// destination is the chat a message goes to, with the topic and the
// business connection it goes through; a group that became a supergroup
// changes the chat, once.
type destination struct {
	chat     chatRef
	chatID   string
	thread   int    // message_thread_id, or 0
	business string // business_connection_id, or ""
	migrated bool
}

// destinationOf returns where a send to target goes: its chat, its topic
// (Thread, a positive message_thread_id) and its business connection.
func destinationOf(target platform.Chat) (destination, error) {
	chat, err := parseChat(target.ID)
	if err != nil {
		return destination{}, err
	}
	thread, err := threadOf(target)
	if err != nil {
		return destination{}, err
	}
	return destination{chat: chat, chatID: target.ID, thread: thread, business: target.BusinessConnectionID}, nil
}

// threadOf returns target's Thread as a message_thread_id: 0 for none, an
// error wrapping platform.ErrInvalidMessage for one that is not a positive
// decimal integer.
func threadOf(target platform.Chat) (int, error) {
	if target.Thread == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(target.Thread)
	if err != nil || n <= 0 || strconv.Itoa(n) != target.Thread {
		return 0, fmt.Errorf("%w: thread %q is not a topic's message_thread_id", platform.ErrInvalidMessage, target.Thread)
	}
	return n, nil
}

// sendPartTo sends p to dest; when Telegram answers that dest's group
// became a supergroup, it follows it there, once per message, and sends p
// again.
func (a *Adapter) sendPartTo(ctx context.Context, dest *destination, p part) (tgbotapi.Message, error) {
	msg, err := a.sendPart(ctx, dest, p)
	if err == nil || dest.migrated {
		return msg, err
	}
	var ae *APIError // escapes to errors.As: declared on the failure's path only
	if errors.As(err, &ae) && ae.MigrateToChatID != 0 {
		dest.migrated = true
		a.limited.Warn("telegram: the group became a supergroup; sending to the new chat",
			zap.String("chat_id", dest.chatID), zap.Int64("new_chat_id", ae.MigrateToChatID))
		dest.chat = chatRef{id: ae.MigrateToChatID}
		dest.chatID = strconv.FormatInt(ae.MigrateToChatID, 10)
		msg, err = a.sendPart(ctx, dest, p)
	}
	return msg, err
}

// chatRef is a chat to send to: a numeric ID or a channel's @username.
type chatRef struct {
	id       int64
	username string
}

func parseChat(id string) (chatRef, error) {
	if strings.HasPrefix(id, "@") && isCommandWord(id[1:]) {
		return chatRef{username: id}, nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n == 0 {
		return chatRef{}, fmt.Errorf("%w: chat ID %q is neither a number nor an @username", platform.ErrInvalidMessage, id)
	}
	return chatRef{id: n}, nil
}

// part is one Telegram message of an OutboundMessage, or one album, or an
// invoice.
type part struct {
	kind      platform.AttachmentKind // "" for text, kindAlbum for an album, kindInvoice for an invoice
	text      string                  // the text, or the caption
	file      tgbotapi.RequestFileData
	parseMode string
	markup    any    // an inline keyboard, a reply keyboard or its removal; nil for none
	items     []part // an album's photos, videos, documents or audio
	invoice   *platform.Invoice
	editID    int // the message a part of kind kindEdit edits

	// The send options: reply and effect go with the first part,
	// entities with a text that is one part, preview with every text,
	// the flags with every part.
	reply                   *replyParameters
	effect                  string
	entities                []platform.Entity
	preview                 *platform.LinkPreview
	silent, protected, paid bool
}

// replyParameters is Telegram's ReplyParameters.
type replyParameters struct {
	MessageID                int    `json:"message_id"`
	ChatID                   any    `json:"chat_id,omitempty"` // an int64 or an @username
	AllowSendingWithoutReply bool   `json:"allow_sending_without_reply,omitempty"`
	Quote                    string `json:"quote,omitempty"`
	QuoteParseMode           string `json:"quote_parse_mode,omitempty"`
	QuotePosition            int    `json:"quote_position,omitempty"`
}

// replyOf returns the reply_parameters of m, or nil when m replies to
// nothing. A message replied to that is gone does not fail the send
// (allow_sending_without_reply) unless Reply.Required says so.
func replyOf(m platform.OutboundMessage) (*replyParameters, error) {
	r := m.Reply
	if r == nil {
		if m.ReplyToID == "" {
			return nil, nil
		}
		r = &platform.Reply{MessageID: m.ReplyToID}
	}
	n, err := strconv.Atoi(r.MessageID)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("%w: reply-to ID %q is not a message ID", platform.ErrInvalidMessage, r.MessageID)
	}
	rp := &replyParameters{MessageID: n, AllowSendingWithoutReply: !r.Required, Quote: r.Quote,
		QuoteParseMode: parseModes[r.QuoteParseMode], QuotePosition: r.QuotePosition}
	if r.ChatID != "" {
		c, err := parseChat(r.ChatID)
		if err != nil {
			return nil, fmt.Errorf("the chat of the message replied to: %w", err)
		}
		if rp.ChatID = c.username; c.username == "" {
			rp.ChatID = c.id
		}
	}
	return rp, nil
}

// kindAlbum is the kind of a part that is an album (sendMediaGroup), and
// kindInvoice of one that is an invoice (sendInvoice).
const (
	kindAlbum   platform.AttachmentKind = "album"
	kindInvoice platform.AttachmentKind = "invoice"
)

// maxAlbum is the most attachments one album holds; maxPlaceholder the
// longest placeholder of a reply keyboard, in characters.
const (
	maxAlbum       = 10
	maxPlaceholder = 64
)

// parseModes maps Herald's parse modes to Telegram's.
var parseModes = map[platform.ParseMode]string{
	platform.ParsePlain:    "",
	platform.ParseMarkdown: tgbotapi.ModeMarkdown,
	platform.ParseHTML:     tgbotapi.ModeHTML,
}

// planMessage turns a valid message into the Telegram messages that send
// it, in order, or explains why it cannot be sent.
func planMessage(m platform.OutboundMessage) ([]part, error) {
	mode, ok := parseModes[m.ParseMode]
	if !ok {
		return nil, fmt.Errorf("%w: unknown parse mode %q", platform.ErrInvalidMessage, m.ParseMode)
	}
	reply, err := replyOf(m)
	if err != nil {
		return nil, err
	}
	var parts []part
	for _, t := range splitText(m.Text, maxTextUnits, m.ParseMode) {
		if strings.TrimSpace(t) != "" {
			parts = append(parts, part{text: t, parseMode: mode, preview: m.LinkPreview})
		}
	}
	if len(m.Entities) > 0 {
		if len(parts) != 1 || parts[0].text != m.Text {
			return nil, fmt.Errorf("%w: a text with Entities must fit one message (%d characters); it has %d",
				platform.ErrInvalidMessage, maxTextUnits, utf16Len(m.Text))
		}
		parts[0].entities = m.Entities
	}
	files := make([]part, 0, len(m.Attachments))
	for i, at := range m.Attachments {
		p, err := filePart(at, mode)
		if err != nil {
			return nil, fmt.Errorf("attachment %d: %w", i, err)
		}
		files = append(files, p)
	}
	if m.Album && len(files) > 1 {
		album, err := albumPart(files)
		if err != nil {
			return nil, err
		}
		files = []part{album}
	}
	parts = append(parts, files...)
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: the text is only white space", platform.ErrInvalidMessage)
	}
	for i := range parts {
		parts[i].silent, parts[i].protected, parts[i].paid = m.Silent, m.Protected, m.PaidBroadcast
	}
	parts[0].reply, parts[0].effect = reply, m.EffectID
	markup, err := markupOf(m)
	if err != nil {
		return nil, err
	}
	if markup != nil {
		if parts[len(parts)-1].kind == kindAlbum {
			return nil, fmt.Errorf("%w: an album carries no buttons or reply keyboard (sendMediaGroup has no reply_markup); send them in a message of their own",
				platform.ErrUnsupported)
		}
		parts[len(parts)-1].markup = markup
	}
	return parts, nil
}

// planInvoice returns the one part that sends m, a valid invoice.
func planInvoice(m platform.OutboundMessage) ([]part, error) {
	reply, err := replyOf(m)
	if err != nil {
		return nil, err
	}
	p := part{kind: kindInvoice, invoice: m.Invoice, reply: reply, effect: m.EffectID,
		silent: m.Silent, protected: m.Protected, paid: m.PaidBroadcast}
	kb, err := keyboard(m.Buttons)
	if err != nil {
		return nil, err
	}
	if kb != nil {
		p.markup = kb
	}
	return []part{p}, nil
}

// filePart returns the part that sends at with its caption in mode.
// Stickers and video notes have no caption, and a video note cannot be
// sent by URL: those are refused as unsupported.
func filePart(at platform.Attachment, mode string) (part, error) {
	if n := utf16Len(at.Caption); n > maxCaptionUnits {
		return part{}, fmt.Errorf("%w: caption of %d characters is over Telegram's %d", platform.ErrInvalidMessage, n, maxCaptionUnits)
	}
	switch at.Kind {
	case platform.AttachSticker, platform.AttachVideoNote:
		if at.Caption != "" {
			return part{}, fmt.Errorf("%w: a %s has no caption on Telegram", platform.ErrUnsupported, at.Kind)
		}
	}
	if at.Kind == platform.AttachVideoNote && at.URL != "" {
		return part{}, fmt.Errorf("%w: Telegram cannot send a video note by URL; upload it or give its FileID", platform.ErrUnsupported)
	}
	p := part{kind: at.Kind, text: at.Caption, parseMode: mode}
	switch {
	case at.URL != "":
		p.file = tgbotapi.FileURL(at.URL)
	case at.FileID != "":
		p.file = tgbotapi.FileID(at.FileID)
	default:
		name := at.FileName
		if name == "" {
			name = defaultFileNames[at.Kind]
		}
		if name == "" {
			name = "file"
		}
		p.file = tgbotapi.FileBytes{Name: name, Bytes: at.Data}
	}
	if p.text == "" {
		p.parseMode = ""
	}
	return p, nil
}

// defaultFileNames name uploaded bytes without a FileName, by kind.
var defaultFileNames = map[platform.AttachmentKind]string{
	platform.AttachPhoto:     "photo.jpg",
	platform.AttachVideo:     "video.mp4",
	platform.AttachAnimation: "animation.mp4",
	platform.AttachVoice:     "voice.ogg",
	platform.AttachAudio:     "audio.mp3",
	platform.AttachSticker:   "sticker.webp",
	platform.AttachVideoNote: "video_note.mp4",
}

// albumPart returns the part that sends items as one album: 2 to 10
// photos and videos, or documents only, or audio only, as Telegram allows.
func albumPart(items []part) (part, error) {
	if len(items) > maxAlbum {
		return part{}, fmt.Errorf("%w: an album of %d attachments is over Telegram's %d", platform.ErrInvalidMessage, len(items), maxAlbum)
	}
	group := func(k platform.AttachmentKind) string {
		switch k {
		case platform.AttachPhoto, platform.AttachVideo:
			return "photos and videos"
		case platform.AttachDocument:
			return "documents"
		case platform.AttachAudio:
			return "audio"
		}
		return ""
	}
	first := group(items[0].kind)
	for i, it := range items {
		g := group(it.kind)
		if g == "" {
			return part{}, fmt.Errorf("%w: attachment %d: a %s cannot be in a Telegram album (photos and videos, documents, or audio)",
				platform.ErrUnsupported, i, it.kind)
		}
		if g != first {
			return part{}, fmt.Errorf("%w: attachment %d: a Telegram album holds %s, not a %s too", platform.ErrUnsupported, i, first, it.kind)
		}
	}
	return part{kind: kindAlbum, items: items}, nil
}

// markupOf returns m's reply_markup: the inline keyboard of Buttons, the
// reply keyboard of Keyboard, or nil. A message has one of them on
// Telegram.
func markupOf(m platform.OutboundMessage) (any, error) {
	kb, err := keyboard(m.Buttons)
	if err != nil {
		return nil, err
	}
	rk := m.Keyboard
	switch {
	case rk == nil && kb == nil:
		return nil, nil
	case rk == nil:
		return kb, nil
	case kb != nil:
		return nil, fmt.Errorf("%w: a Telegram message carries inline buttons or a reply keyboard, not both", platform.ErrUnsupported)
	case rk.Remove:
		return tgbotapi.ReplyKeyboardRemove{RemoveKeyboard: true}, nil
	}
	if n := utf16Len(rk.Placeholder); n > maxPlaceholder {
		return nil, fmt.Errorf("%w: a keyboard placeholder of %d characters is over Telegram's %d", platform.ErrInvalidMessage, n, maxPlaceholder)
	}
	out := tgbotapi.ReplyKeyboardMarkup{ResizeKeyboard: true, OneTimeKeyboard: rk.OneTime, InputFieldPlaceholder: rk.Placeholder}
	for _, row := range rk.Rows {
		if len(row) == 0 {
			continue
		}
		buttons := make([]tgbotapi.KeyboardButton, len(row))
		for i, text := range row {
			buttons[i] = tgbotapi.KeyboardButton{Text: text}
		}
		out.Keyboard = append(out.Keyboard, buttons)
	}
	return out, nil
}

func keyboard(rows [][]platform.Button) (*tgbotapi.InlineKeyboardMarkup, error) {
	if len(rows) == 0 {
		return nil, nil // most messages: nothing to allocate
	}
	kb := &tgbotapi.InlineKeyboardMarkup{InlineKeyboard: make([][]tgbotapi.InlineKeyboardButton, 0, len(rows))}
	for r, row := range rows {
		out := make([]tgbotapi.InlineKeyboardButton, 0, len(row))
		for c, b := range row {
			if b.Data != "" {
				if len(b.Data) > maxCallbackData {
					return nil, fmt.Errorf("%w: button %d,%d: callback data of %d bytes is over Telegram's %d",
						platform.ErrInvalidMessage, r, c, len(b.Data), maxCallbackData)
				}
				out = append(out, tgbotapi.NewInlineKeyboardButtonData(b.Text, b.Data))
			} else {
				out = append(out, tgbotapi.NewInlineKeyboardButtonURL(b.Text, b.URL))
			}
		}
		if len(out) > 0 {
			kb.InlineKeyboard = append(kb.InlineKeyboard, out)
		}
	}
	if len(kb.InlineKeyboard) == 0 {
		return nil, nil
	}
	return kb, nil
}

// fileFields are the parameters that hold a file, by kind, each also the
// method's noun: sendPhoto takes photo.
var fileFields = map[platform.AttachmentKind]string{
	platform.AttachPhoto: "photo", platform.AttachDocument: "document", platform.AttachVideo: "video",
	platform.AttachAudio: "audio", platform.AttachVoice: "voice", platform.AttachAnimation: "animation",
	platform.AttachSticker: "sticker", platform.AttachVideoNote: "video_note",
}

// sendMethods are the methods that send one file, by kind.
var sendMethods = map[platform.AttachmentKind]string{
	platform.AttachPhoto: "sendPhoto", platform.AttachDocument: "sendDocument", platform.AttachVideo: "sendVideo",
	platform.AttachAudio: "sendAudio", platform.AttachVoice: "sendVoice", platform.AttachAnimation: "sendAnimation",
	platform.AttachSticker: "sendSticker", platform.AttachVideoNote: "sendVideoNote",
}

// addChat sets the chat_id of params to c.
func addChat(params tgbotapi.Params, c chatRef) {
	_ = params.AddFirstValid("chat_id", c.id, c.username) // an int64 or a string: cannot fail
}

// addJSON sets key to v as JSON. Herald's values always marshal; an error
// is returned all the same.
func addJSON(params tgbotapi.Params, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("telegram: %s: %w", key, err)
	}
	params[key] = string(b)
	return nil
}

// request returns the method and parameters that send p to dest, and the
// file to upload, if any. Herald builds the parameters itself, and sends
// only those that are set: the library's configs send an empty entities
// or caption_entities list as "null", and know no topic, business
// connection, reply_parameters, link preview options, effect or paid
// broadcast.
func (p part) request(dest *destination) (string, tgbotapi.Params, []tgbotapi.RequestFile, error) {
	params := tgbotapi.Params{}
	addChat(params, dest.chat)
	params.AddNonZero("message_thread_id", dest.thread)
	params.AddBool("disable_notification", p.silent)
	params.AddBool("protect_content", p.protected)
	params.AddBool("allow_paid_broadcast", p.paid)
	params.AddNonEmpty("message_effect_id", p.effect)
	if p.kind != kindInvoice {
		// sendInvoice has no business_connection_id.
		params.AddNonEmpty("business_connection_id", dest.business)
	}
	if p.reply != nil {
		if err := addJSON(params, "reply_parameters", p.reply); err != nil {
			return "", nil, nil, err
		}
	}
	if p.markup != nil {
		if err := addJSON(params, "reply_markup", p.markup); err != nil {
			return "", nil, nil, err
		}
	}
	switch p.kind {
	case "":
		params["text"] = p.text
		params.AddNonEmpty("parse_mode", p.parseMode)
		if len(p.entities) > 0 {
			if err := addJSON(params, "entities", entitiesOf(p.entities)); err != nil {
				return "", nil, nil, err
			}
		}
		if p.preview != nil {
			if err := addJSON(params, "link_preview_options", linkPreviewOf(p.preview)); err != nil {
				return "", nil, nil, err
			}
		}
		return "sendMessage", params, nil, nil
	case kindInvoice:
		inv := p.invoice
		params["title"], params["description"], params["payload"] = inv.Title, inv.Description, inv.Payload
		params["currency"] = inv.Currency
		if inv.Currency == "" {
			params["currency"] = platform.CurrencyStars
		}
		params.AddNonEmpty("provider_token", inv.ProviderToken)
		params.AddNonEmpty("photo_url", inv.PhotoURL)
		params.AddNonEmpty("start_parameter", inv.StartParameter)
		prices := make([]map[string]any, len(inv.Prices))
		for i, pr := range inv.Prices {
			prices[i] = map[string]any{"label": pr.Label, "amount": pr.Amount}
		}
		if err := addJSON(params, "prices", prices); err != nil {
			return "", nil, nil, err
		}
		return "sendInvoice", params, nil, nil
	}
	field := fileFields[p.kind]
	if p.kind != platform.AttachSticker && p.kind != platform.AttachVideoNote {
		params.AddNonEmpty("caption", p.text)
		params.AddNonEmpty("parse_mode", p.parseMode)
	}
	return sendMethods[p.kind], params, []tgbotapi.RequestFile{{Name: field, Data: p.file}}, nil
}

// telegramEntity is Telegram's MessageEntity as a bot sends it.
type telegramEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	URL    string `json:"url,omitempty"`
	User   *struct {
		ID int64 `json:"id"`
	} `json:"user,omitempty"`
	Language      string `json:"language,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

// entitiesOf returns es as Telegram's MessageEntity list. A UserID that is
// not a number is left out (Telegram then refuses a text_mention).
func entitiesOf(es []platform.Entity) []telegramEntity {
	out := make([]telegramEntity, len(es))
	for i, e := range es {
		out[i] = telegramEntity{Type: e.Type, Offset: e.Offset, Length: e.Length, URL: e.URL, Language: e.Language, CustomEmojiID: e.CustomEmojiID}
		if id, err := strconv.ParseInt(e.UserID, 10, 64); err == nil {
			out[i].User = &struct {
				ID int64 `json:"id"`
			}{id}
		}
	}
	return out
}

// linkPreviewOf returns lp as Telegram's LinkPreviewOptions.
func linkPreviewOf(lp *platform.LinkPreview) map[string]any {
	out := map[string]any{}
	set := func(k string, v bool) {
		if v {
			out[k] = true
		}
	}
	set("is_disabled", lp.Disabled)
	set("prefer_small_media", lp.PreferSmallMedia)
	set("prefer_large_media", lp.PreferLargeMedia)
	set("show_above_text", lp.AboveText)
	if lp.URL != "" {
		out["url"] = lp.URL
	}
	return out
}

func (a *Adapter) sendPart(ctx context.Context, dest *destination, p part) (tgbotapi.Message, error) {
	switch p.kind {
	case kindAlbum:
		return a.sendAlbum(ctx, dest, p)
	case kindEdit:
		return a.sendEdit(ctx, dest, p)
	}
	method, params, files, err := p.request(dest)
	if err != nil {
		return tgbotapi.Message{}, platform.Permanent(err)
	}
	var id int
	var idErr error
	// Unchecked: "ok" says the message was delivered, and only its ID is
	// read of the result.
	if err := a.uploadTo(ctx, method, params, files, false, func(raw json.RawMessage) { id, idErr = messageIDOf(raw) }); err != nil {
		return tgbotapi.Message{}, err
	}
	if err := idErr; err != nil {
		// Telegram answered "ok": the message was delivered, and sending
		// it again would deliver it twice. Only its ID is unknown.
		a.limited.Warn("telegram: a message was delivered, but the answer's result is unreadable; its ID is unknown",
			zap.String("method", method), zap.Error(err))
		return tgbotapi.Message{}, nil
	}
	return tgbotapi.Message{MessageID: id}, nil
}

// messageIDPrefix opens a Message as Telegram writes it: its ID first.
const messageIDPrefix = `{"message_id":`

// messageIDOf returns the message_id of raw, a sent Message's JSON. Only
// the ID is read: the rest of the answer is what was sent, and decoding
// all of it is work no caller needs. The ID is read straight from the
// JSON's opening, where Telegram puts it; a Message written otherwise is
// decoded.
func messageIDOf(raw []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(raw, []byte(messageIDPrefix)); ok {
		n := 0
		for n < len(rest) && n < 19 && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		if n > 0 && n < len(rest) && (rest[n] == ',' || rest[n] == '}') && (rest[0] != '0' || n == 1) {
			if id, err := strconv.Atoi(string(rest[:n])); err == nil {
				return id, nil
			}
		}
	}
	var sent struct {
		MessageID int `json:"message_id"`
	}
	err := json.Unmarshal(raw, &sent)
	return sent.MessageID, err
}

// inputMediaTypes are the InputMedia types of the kinds an album holds.
var inputMediaTypes = map[platform.AttachmentKind]string{
	platform.AttachPhoto: "photo", platform.AttachVideo: "video",
	platform.AttachDocument: "document", platform.AttachAudio: "audio",
}

// sendAlbum sends the album p with sendMediaGroup: uploaded bytes go as
// multipart files named in the media JSON as attach://file-N. It returns
// the album's last message.
func (a *Adapter) sendAlbum(ctx context.Context, dest *destination, p part) (tgbotapi.Message, error) {
	type inputMedia struct {
		Type      string `json:"type"`
		Media     string `json:"media"`
		Caption   string `json:"caption,omitempty"`
		ParseMode string `json:"parse_mode,omitempty"`
	}
	media := make([]inputMedia, len(p.items))
	var files []tgbotapi.RequestFile
	for i, it := range p.items {
		media[i] = inputMedia{Type: inputMediaTypes[it.kind], Caption: it.text, ParseMode: it.parseMode}
		if it.file.NeedsUpload() {
			name := "file-" + strconv.Itoa(i)
			media[i].Media = "attach://" + name
			files = append(files, tgbotapi.RequestFile{Name: name, Data: it.file})
		} else {
			media[i].Media = it.file.SendData()
		}
	}
	params := make(tgbotapi.Params)
	addChat(params, dest.chat)
	params.AddNonZero("message_thread_id", dest.thread)
	params.AddNonEmpty("business_connection_id", dest.business)
	params.AddBool("disable_notification", p.silent)
	params.AddBool("protect_content", p.protected)
	params.AddBool("allow_paid_broadcast", p.paid)
	params.AddNonEmpty("message_effect_id", p.effect)
	if p.reply != nil {
		if err := addJSON(params, "reply_parameters", p.reply); err != nil {
			return tgbotapi.Message{}, platform.Permanent(err)
		}
	}
	if err := addJSON(params, "media", media); err != nil {
		return tgbotapi.Message{}, platform.Permanent(fmt.Errorf("telegram: sendMediaGroup: %w", err))
	}
	raw, err := a.upload(ctx, "sendMediaGroup", params, files)
	if err != nil {
		return tgbotapi.Message{}, err
	}
	var msgs []tgbotapi.Message
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		a.limited.Warn("telegram: an album was delivered, but the answer's result is unreadable; its IDs are unknown",
			zap.String("method", "sendMediaGroup"), zap.Error(err))
		return tgbotapi.Message{}, nil
	}
	return msgs[len(msgs)-1], nil
}
