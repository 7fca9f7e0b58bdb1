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
	if m.DeleteID != "" {
		return a.delete(ctx, req)
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

// part is one Telegram message of an OutboundMessage, or one album.
type part struct {
	kind      platform.AttachmentKind // "" for text, kindAlbum for an album
	text      string                  // the text, or the caption
	file      tgbotapi.RequestFileData
	parseMode string
	replyTo   int
	markup    any    // an inline keyboard, a reply keyboard or its removal; nil for none
	items     []part // an album's photos, videos, documents or audio
}

// kindAlbum is the kind of a part that is an album (sendMediaGroup).
const kindAlbum platform.AttachmentKind = "album"

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
	parts[0].replyTo = replyTo
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
	if p.markup != nil {
		base.ReplyMarkup = p.markup
	}
	file := tgbotapi.BaseFile{BaseChat: base, File: p.file}
	switch p.kind {
	case platform.AttachPhoto:
		return "sendPhoto", tgbotapi.PhotoConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachDocument:
		return "sendDocument", tgbotapi.DocumentConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachVideo:
		return "sendVideo", tgbotapi.VideoConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachAudio:
		return "sendAudio", tgbotapi.AudioConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachVoice:
		return "sendVoice", tgbotapi.VoiceConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachAnimation:
		return "sendAnimation", tgbotapi.AnimationConfig{BaseFile: file, Caption: p.text, ParseMode: p.parseMode}
	case platform.AttachSticker:
		return "sendSticker", tgbotapi.StickerConfig{BaseFile: file}
	case platform.AttachVideoNote:
		return "sendVideoNote", tgbotapi.VideoNoteConfig{BaseFile: file}
	default:
		return "sendMessage", tgbotapi.MessageConfig{BaseChat: base, Text: p.text, ParseMode: p.parseMode}
	}
}

func (a *Adapter) sendPart(ctx context.Context, chat chatRef, p part) (tgbotapi.Message, error) {
	if p.kind == kindAlbum {
		return a.sendAlbum(ctx, chat, p)
	}
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

// inputMediaTypes are the InputMedia types of the kinds an album holds.
var inputMediaTypes = map[platform.AttachmentKind]string{
	platform.AttachPhoto: "photo", platform.AttachVideo: "video",
	platform.AttachDocument: "document", platform.AttachAudio: "audio",
}

// sendAlbum sends the album p with sendMediaGroup: uploaded bytes go as
// multipart files named in the media JSON as attach://file-N. It returns
// the album's last message.
func (a *Adapter) sendAlbum(ctx context.Context, chat chatRef, p part) (tgbotapi.Message, error) {
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
	_ = params.AddFirstValid("chat_id", chat.id, chat.username) // an int64 or a string: cannot fail
	params.AddNonZero("reply_to_message_id", p.replyTo)
	params.AddBool("allow_sending_without_reply", p.replyTo != 0)
	if err := params.AddInterface("media", media); err != nil {
		return tgbotapi.Message{}, fmt.Errorf("telegram: sendMediaGroup: %w", err)
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
