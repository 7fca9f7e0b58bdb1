package telegram

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

// updateToEvents maps one Telegram update to Herald events of the adapter
// named name (every event's Platform). botUsername is the bot's own
// username (without "@"), for commands; now stands in for times Telegram
// does not give. It never panics, whatever the update holds,
// and never calls Update.FromChat (which panics on an inline callback).
//
//   - message, channel_post → [platform.EventMessage]; edited_message,
//     edited_channel_post → [platform.EventEditedMessage]. Text is the text
//     or, for media, the caption. A channel post's From is the channel
//     (sender_chat). Time is the message's date (the edit date for edits).
//     Media are Attachments (see [attachmentsOf]).
//   - A command addressed to this bot, "/cmd@ThisBot args", becomes
//     "/cmd args" (the username is compared case-insensitively). A command
//     addressed to another bot, "/cmd@OtherBot", yields no event: it is
//     not for us, and passing it on would let "/cmd" handlers answer it.
//   - A message with new_chat_members yields one
//     [platform.EventMemberJoined] per member, and one with
//     left_chat_member a [platform.EventMemberLeft]; From is the member.
//   - callback_query → [platform.EventCallback] with Text the callback
//     data, QueryID the callback query's ID, MessageID the message
//     carrying the button and Time now. A callback from an inline message
//     has no chat: Chat is empty, and Inline.MessageID is the inline
//     message's ID. A
//     message without a message_id (0, which no message has) leaves
//     MessageID empty, so an edit of it is refused before any request
//     instead of going to a message that does not exist.
//   - inline_query → [platform.EventInlineQuery]: From, Text the query,
//     QueryID its ID, Inline.Offset and Inline.ChatType; chosen_inline_result
//     → [platform.EventInlineResult]: From, Text the query, Inline.ResultID
//     and Inline.MessageID (inline_message_id). Neither has a chat.
//   - Anything else (chat member updates, polls, ...) →
//     [platform.EventOther] with the chat and user the update names, if
//     any.
//
// Event IDs are the update ID; when one update yields several events, the
// second and later have ".N" appended (N counting from 1). Every event's
// Raw is u.
func updateToEvents(name string, u *tgbotapi.Update, botUsername string, now time.Time) []platform.Event {
	base := platform.Event{
		ID:       strconv.Itoa(u.UpdateID),
		Platform: name,
		Time:     now,
		Raw:      u,
	}
	switch {
	case u.Message != nil:
		return messageEvents(base, u.Message, platform.EventMessage, botUsername)
	case u.EditedMessage != nil:
		return messageEvents(base, u.EditedMessage, platform.EventEditedMessage, botUsername)
	case u.ChannelPost != nil:
		return messageEvents(base, u.ChannelPost, platform.EventMessage, botUsername)
	case u.EditedChannelPost != nil:
		return messageEvents(base, u.EditedChannelPost, platform.EventEditedMessage, botUsername)
	case u.CallbackQuery != nil:
		cq := u.CallbackQuery
		ev := base
		ev.Kind = platform.EventCallback
		ev.Text = cq.Data
		ev.QueryID = cq.ID
		ev.From = userOf(cq.From)
		ev.Inline.MessageID = cq.InlineMessageID
		if cq.Message != nil {
			ev.Chat = chatOf(cq.Message.Chat)
			ev.MessageID = messageID(cq.Message.MessageID)
		}
		return []platform.Event{ev}
	case u.InlineQuery != nil:
		q := u.InlineQuery
		ev := base
		ev.Kind = platform.EventInlineQuery
		ev.From, ev.Text, ev.QueryID = userOf(q.From), q.Query, q.ID
		ev.Inline = platform.InlineQuery{Offset: q.Offset, ChatType: q.ChatType}
		return []platform.Event{ev}
	case u.ChosenInlineResult != nil:
		r := u.ChosenInlineResult
		ev := base
		ev.Kind = platform.EventInlineResult
		ev.From, ev.Text = userOf(r.From), r.Query
		ev.Inline = platform.InlineQuery{ResultID: r.ResultID, MessageID: r.InlineMessageID}
		return []platform.Event{ev}
	}
	ev := base
	ev.Kind = platform.EventOther
	switch {
	case u.MyChatMember != nil:
		ev.Chat, ev.From = chatOf(&u.MyChatMember.Chat), userOf(&u.MyChatMember.From)
		ev.Time = unixOr(u.MyChatMember.Date, now)
	case u.ChatMember != nil:
		ev.Chat, ev.From = chatOf(&u.ChatMember.Chat), userOf(&u.ChatMember.From)
		ev.Time = unixOr(u.ChatMember.Date, now)
	case u.ChatJoinRequest != nil:
		ev.Chat, ev.From = chatOf(&u.ChatJoinRequest.Chat), userOf(&u.ChatJoinRequest.From)
		ev.Time = unixOr(u.ChatJoinRequest.Date, now)
	case u.ShippingQuery != nil:
		ev.From = userOf(u.ShippingQuery.From)
	case u.PreCheckoutQuery != nil:
		ev.From = userOf(u.PreCheckoutQuery.From)
	case u.PollAnswer != nil:
		ev.From = userOf(&u.PollAnswer.User)
	}
	return []platform.Event{ev}
}

// messageID returns Telegram's message ID in decimal, or "" for an ID that
// is not positive (absent from the update): no message is numbered 0.
func messageID(id int) string {
	if id <= 0 {
		return ""
	}
	return strconv.Itoa(id)
}

func messageEvents(base platform.Event, m *tgbotapi.Message, kind platform.EventKind, botUsername string) []platform.Event {
	ev := base
	ev.Kind = kind
	ev.Chat = chatOf(m.Chat)
	ev.MessageID = messageID(m.MessageID)
	ev.Time = unixOr(m.Date, base.Time)
	if kind == platform.EventEditedMessage && m.EditDate != 0 {
		ev.Time = unixOr(m.EditDate, base.Time)
	}
	if m.ReplyToMessage != nil {
		ev.ReplyToID = messageID(m.ReplyToMessage.MessageID)
	}
	switch {
	case m.From != nil:
		ev.From = userOf(m.From)
	case m.SenderChat != nil:
		ev.From = platform.User{
			ID:       strconv.FormatInt(m.SenderChat.ID, 10),
			Name:     chatOf(m.SenderChat).Title,
			Username: m.SenderChat.UserName,
		}
	}

	if len(m.NewChatMembers) > 0 || m.LeftChatMember != nil {
		var evs []platform.Event
		add := func(kind platform.EventKind, u *tgbotapi.User) {
			e := ev
			e.Kind = kind
			e.From = userOf(u)
			if n := len(evs); n > 0 {
				e.ID = base.ID + "." + strconv.Itoa(n)
			}
			evs = append(evs, e)
		}
		for i := range m.NewChatMembers {
			add(platform.EventMemberJoined, &m.NewChatMembers[i])
		}
		if m.LeftChatMember != nil {
			add(platform.EventMemberLeft, m.LeftChatMember)
		}
		return evs
	}

	ev.Text = m.Text
	if ev.Text == "" {
		ev.Text = m.Caption
	}
	ev.Attachments = attachmentsOf(m)
	text, ok := normalizeCommand(ev.Text, botUsername)
	if !ok {
		return nil
	}
	ev.Text = text
	return []platform.Event{ev}
}

// normalizeCommand strips this bot's username from a command:
// "/cmd@ThisBot args" becomes "/cmd args". It reports false for a command
// addressed to another bot. Text that is not a command ("/" followed by
// letters, digits and "_", then "@" and a username) is returned unchanged,
// as is every command when botUsername is empty.
func normalizeCommand(text, botUsername string) (string, bool) {
	if len(text) < 2 || text[0] != '/' {
		return text, true
	}
	end := strings.IndexFunc(text, unicode.IsSpace)
	if end < 0 {
		end = len(text)
	}
	name, at, ok := strings.Cut(text[1:end], "@")
	if !ok || !isCommandWord(name) || !isCommandWord(at) || botUsername == "" {
		return text, true
	}
	if !strings.EqualFold(at, botUsername) {
		return "", false
	}
	return "/" + name + text[end:], true
}

// isCommandWord reports whether s is a non-empty run of ASCII letters,
// digits and "_", the characters of command names and usernames.
func isCommandWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// chatOf maps a Telegram chat: supergroups and groups are
// [platform.ChatGroup], channels [platform.ChatChannel], private chats
// [platform.ChatPrivate]; an unknown type is left empty. A private chat's
// Title is the other party's name.
func chatOf(c *tgbotapi.Chat) platform.Chat {
	if c == nil {
		return platform.Chat{}
	}
	out := platform.Chat{ID: strconv.FormatInt(c.ID, 10), Title: c.Title}
	switch c.Type {
	case "private":
		out.Type = platform.ChatPrivate
	case "group", "supergroup":
		out.Type = platform.ChatGroup
	case "channel":
		out.Type = platform.ChatChannel
	}
	if out.Title == "" {
		out.Title = fullName(c.FirstName, c.LastName)
	}
	return out
}

func userOf(u *tgbotapi.User) platform.User {
	if u == nil {
		return platform.User{}
	}
	return platform.User{
		ID:       strconv.FormatInt(u.ID, 10),
		Name:     fullName(u.FirstName, u.LastName),
		Username: u.UserName,
		IsBot:    u.IsBot,
	}
}

func fullName(first, last string) string {
	return strings.TrimSpace(first + " " + last)
}

// unixOr returns the Unix time secs in UTC, or def when secs is not
// positive.
func unixOr(secs int, def time.Time) time.Time {
	if secs <= 0 {
		return def
	}
	return time.Unix(int64(secs), 0).UTC()
}

// attachmentsOf returns the files of m as attachments, each with m's
// caption: a photo (its largest size, with Sizes listing all of them,
// smallest first, as Telegram orders them), an animation (a GIF, which
// Telegram also describes as a document: it is one attachment, the
// animation), a document, a video, a video note (Width and Height its
// diameter), an audio, a voice note or a sticker, with the file ID,
// name, MIME type, size in bytes, dimensions and duration Telegram gives.
// It is nil for a message without a file.
func attachmentsOf(m *tgbotapi.Message) []platform.Attachment {
	at := platform.Attachment{Caption: m.Caption}
	secs := func(s int) time.Duration { // not negative, and no overflow
		return time.Duration(min(max(int64(s), 0), int64(math.MaxInt64/time.Second))) * time.Second
	}
	switch {
	case len(m.Photo) > 0:
		at.Kind = platform.AttachPhoto
		at.Sizes = make([]platform.PhotoSize, 0, len(m.Photo))
		for _, p := range m.Photo {
			at.Sizes = append(at.Sizes, platform.PhotoSize{FileID: p.FileID, Width: p.Width, Height: p.Height, Size: max(int64(p.FileSize), 0)})
		}
		largest := at.Sizes[0]
		for _, p := range at.Sizes[1:] {
			if p.Width*p.Height >= largest.Width*largest.Height {
				largest = p
			}
		}
		at.FileID, at.Width, at.Height, at.Size = largest.FileID, largest.Width, largest.Height, largest.Size
	case m.Animation != nil:
		a := m.Animation
		at.Kind, at.FileID, at.FileName, at.MIMEType, at.Size = platform.AttachAnimation, a.FileID, a.FileName, a.MimeType, int64(a.FileSize)
		at.Width, at.Height, at.Duration = a.Width, a.Height, secs(a.Duration)
	case m.Document != nil:
		d := m.Document
		at.Kind, at.FileID, at.FileName, at.MIMEType, at.Size = platform.AttachDocument, d.FileID, d.FileName, d.MimeType, int64(d.FileSize)
	case m.Video != nil:
		v := m.Video
		at.Kind, at.FileID, at.FileName, at.MIMEType, at.Size = platform.AttachVideo, v.FileID, v.FileName, v.MimeType, int64(v.FileSize)
		at.Width, at.Height, at.Duration = v.Width, v.Height, secs(v.Duration)
	case m.VideoNote != nil:
		v := m.VideoNote
		at.Kind, at.FileID, at.Size = platform.AttachVideoNote, v.FileID, int64(v.FileSize)
		at.Width, at.Height, at.Duration = v.Length, v.Length, secs(v.Duration)
	case m.Audio != nil:
		a := m.Audio
		at.Kind, at.FileID, at.FileName, at.MIMEType, at.Size = platform.AttachAudio, a.FileID, a.FileName, a.MimeType, int64(a.FileSize)
		at.Duration = secs(a.Duration)
	case m.Voice != nil:
		v := m.Voice
		at.Kind, at.FileID, at.MIMEType, at.Size = platform.AttachVoice, v.FileID, v.MimeType, int64(v.FileSize)
		at.Duration = secs(v.Duration)
	case m.Sticker != nil:
		st := m.Sticker
		at.Kind, at.FileID, at.Size, at.Width, at.Height = platform.AttachSticker, st.FileID, int64(st.FileSize), st.Width, st.Height
		switch {
		case st.IsAnimated:
			at.MIMEType = "application/x-tgsticker"
		default:
			at.MIMEType = "image/webp"
		}
	default:
		return nil
	}
	at.Size = max(at.Size, 0)
	return []platform.Attachment{at}
}
