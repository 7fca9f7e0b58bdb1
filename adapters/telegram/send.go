package telegram

import (
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
// attachment follows as a photo or document, by URL or uploaded from
// bytes, with its caption in the same parse mode. The first message
// replies to ReplyToID (sent with allow_sending_without_reply, so a
// deleted original does not fail the send), and the inline keyboard of
// Buttons goes under the last one.
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
func (a *Adapter) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	res, err := a.send(ctx, req)
	return res, a.scrub(err)
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
	if m.EditID != "" {
		return a.edit(ctx, req)
	}
	chat, err := parseChat(req.Target.ID)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	parts, err := planMessage(m)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}

	return a.sendParts(ctx, &partsProgress{
		parts:   parts,
		dest:    destination{chat: chat, chatID: req.Target.ID},
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

// destination is the chat a message goes to; a group that became a
// supergroup changes it, once.
type destination struct {
	chat     chatRef
	chatID   string
	migrated bool
}

// sendPartTo sends p to dest; when Telegram answers that dest's group
// became a supergroup, it follows it there, once per message, and sends p
// again.
func (a *Adapter) sendPartTo(ctx context.Context, dest *destination, p part) (tgbotapi.Message, error) {
	msg, err := a.sendPart(ctx, dest.chat, p)
	var ae *APIError
	if err != nil && !dest.migrated && errors.As(err, &ae) && ae.MigrateToChatID != 0 {
		dest.migrated = true
		a.limited.Warn("telegram: the group became a supergroup; sending to the new chat",
			zap.String("chat_id", dest.chatID), zap.Int64("new_chat_id", ae.MigrateToChatID))
		dest.chat = chatRef{id: ae.MigrateToChatID}
		dest.chatID = strconv.FormatInt(ae.MigrateToChatID, 10)
		msg, err = a.sendPart(ctx, dest.chat, p)
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

// part is one Telegram message of an OutboundMessage.
type part struct {
	kind      platform.AttachmentKind // "" for text
	text      string                  // the text, or the caption
	file      tgbotapi.RequestFileData
	parseMode string
	replyTo   int
	keyboard  *tgbotapi.InlineKeyboardMarkup
}

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
	replyTo := 0
	if m.ReplyToID != "" {
		n, err := strconv.Atoi(m.ReplyToID)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: reply-to ID %q is not a message ID", platform.ErrInvalidMessage, m.ReplyToID)
		}
		replyTo = n
	}
	var parts []part
	for _, t := range splitText(m.Text, maxTextUnits, m.ParseMode) {
		if strings.TrimSpace(t) != "" {
			parts = append(parts, part{text: t, parseMode: mode})
		}
	}
	for i, at := range m.Attachments {
		if n := utf16Len(at.Caption); n > maxCaptionUnits {
			return nil, fmt.Errorf("%w: attachment %d: caption of %d characters is over Telegram's %d",
				platform.ErrInvalidMessage, i, n, maxCaptionUnits)
		}
		p := part{kind: at.Kind, text: at.Caption, parseMode: mode}
		if at.URL != "" {
			p.file = tgbotapi.FileURL(at.URL)
		} else {
			name := at.FileName
			if name == "" {
				name = map[platform.AttachmentKind]string{platform.AttachPhoto: "photo.jpg"}[at.Kind]
				if name == "" {
					name = "file"
				}
			}
			p.file = tgbotapi.FileBytes{Name: name, Bytes: at.Data}
		}
		if p.text == "" {
			p.parseMode = ""
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: the text is only white space", platform.ErrInvalidMessage)
	}
	parts[0].replyTo = replyTo
	if len(m.Buttons) > 0 {
		kb, err := keyboard(m.Buttons)
		if err != nil {
			return nil, err
		}
		parts[len(parts)-1].keyboard = kb
	}
	return parts, nil
}

func keyboard(rows [][]platform.Button) (*tgbotapi.InlineKeyboardMarkup, error) {
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

// chattable returns the request that sends p to chat.
func (p part) chattable(chat chatRef) (string, tgbotapi.Chattable) {
	base := tgbotapi.BaseChat{
		ChatID:                   chat.id,
		ChannelUsername:          chat.username,
		ReplyToMessageID:         p.replyTo,
		AllowSendingWithoutReply: p.replyTo != 0,
	}
	if p.keyboard != nil {
		base.ReplyMarkup = p.keyboard
	}
	switch p.kind {
	case platform.AttachPhoto:
		return "sendPhoto", tgbotapi.PhotoConfig{
			BaseFile: tgbotapi.BaseFile{BaseChat: base, File: p.file},
			Caption:  p.text, ParseMode: p.parseMode,
		}
	case platform.AttachDocument:
		return "sendDocument", tgbotapi.DocumentConfig{
			BaseFile: tgbotapi.BaseFile{BaseChat: base, File: p.file},
			Caption:  p.text, ParseMode: p.parseMode,
		}
	default:
		return "sendMessage", tgbotapi.MessageConfig{BaseChat: base, Text: p.text, ParseMode: p.parseMode}
	}
}

func (a *Adapter) sendPart(ctx context.Context, chat chatRef, p part) (tgbotapi.Message, error) {
	method, c := p.chattable(chat)
	raw, err := a.request(ctx, method, c)
	if err != nil {
		return tgbotapi.Message{}, err
	}
	var msg tgbotapi.Message
	if err := json.Unmarshal(raw, &msg); err != nil {
		// Telegram answered "ok": the message was delivered, and sending
		// it again would deliver it twice. Only its ID is unknown.
		a.limited.Warn("telegram: a message was delivered, but the answer's result is unreadable; its ID is unknown",
			zap.String("method", method), zap.Error(err))
		return tgbotapi.Message{}, nil
	}
	return msg, nil
}
