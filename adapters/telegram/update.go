package telegram

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/heraldbot/herald/platform"
)

// updateToEvents maps one Telegram update to Herald events of the adapter
// named name (every event's Platform). botUsername is the bot's own
// username (without "@"), for commands; now stands in for times Telegram
// does not give. It never panics, whatever the update holds. Every event's
// Raw is the update's JSON as Telegram sent it (a json.RawMessage), so a
// handler can read any field; the kinds:
//
//   - message, channel_post, business_message → [platform.EventMessage];
//     edited_message, edited_channel_post, edited_business_message →
//     [platform.EventEditedMessage]. Text is the text or, for media, the
//     caption. A channel post's From is the channel (sender_chat). Time is
//     the message's date (the edit date for edits). Media are Attachments
//     (see [attachmentsOf]). A message in a forum topic (is_topic_message)
//     has the topic's message_thread_id in Chat.Thread, and its reply to
//     the topic's first message, which every message of a topic has, is
//     no ReplyToID. A business message has its business_connection_id in
//     Chat.BusinessConnectionID, so a reply goes through the connection.
//   - A command addressed to this bot, "/cmd@ThisBot args", becomes
//     "/cmd args" (the username is compared case-insensitively). A command
//     addressed to another bot, "/cmd@OtherBot", yields no event: it is
//     not for us, and passing it on would let "/cmd" handlers answer it.
//   - A message with new_chat_members yields one
//     [platform.EventMemberJoined] per member, and one with
//     left_chat_member a [platform.EventMemberLeft]; From is the member.
//     One with successful_payment is a [platform.EventPayment], one with
//     refunded_payment a [platform.EventRefund], with Payment set.
//   - callback_query → [platform.EventCallback] with Text the callback
//     data, QueryID the callback query's ID, MessageID the message
//     carrying the button and Time now. A callback from an inline message
//     has no chat: Chat is empty, and Inline.MessageID is the inline
//     message's ID. A message without a message_id (0, which no message
//     has) leaves MessageID empty, so an edit of it is refused before any
//     request instead of going to a message that does not exist.
//   - inline_query → [platform.EventInlineQuery]: From, Text the query,
//     QueryID its ID, Inline.Offset and Inline.ChatType; chosen_inline_result
//     → [platform.EventInlineResult]: From, Text the query, Inline.ResultID
//     and Inline.MessageID (inline_message_id). Neither has a chat.
//   - message_reaction → [platform.EventReaction] (From the user, or the
//     chat that reacted anonymously); message_reaction_count →
//     [platform.EventReactionCount]; both with MessageID and Reactions.
//   - my_chat_member → [platform.EventBotBlocked], EventBotUnblocked,
//     EventBotAdded, EventBotRemoved or EventBotMemberChanged (see
//     [botMembershipKind]); chat_member → [platform.EventMemberUpdated];
//     chat_join_request → [platform.EventJoinRequest]; all with Member.
//   - pre_checkout_query → [platform.EventPreCheckout] with QueryID and
//     Payment.
//   - business_connection → [platform.EventBusinessConnection] with
//     Business, From the account and Chat the private chat with it;
//     deleted_business_messages → [platform.EventMessagesDeleted] with
//     MessageIDs.
//   - Anything else (shipping_query, purchased_paid_media, poll,
//     poll_answer, chat_boost, removed_chat_boost, guest_message,
//     managed_bot, subscription, and kinds newer than Bot API 10.2) →
//     [platform.EventOther], with the chat and user the update names, if
//     any (a guest message's text, message ID and guest_query_id as
//     QueryID; a shipping query's ID as QueryID; payloads in
//     Payment.Payload).
//
// Event IDs are the update ID; when one update yields several events, the
// second and later have ".N" appended (N counting from 1).
func updateToEvents(name string, u *update, botUsername string, now time.Time) []platform.Event {
	base := platform.Event{
		ID:       strconv.Itoa(u.UpdateID),
		Platform: name,
		Time:     now,
		Raw:      u.raw,
	}
	one := func(ev platform.Event) []platform.Event { return []platform.Event{ev} }
	switch {
	case u.Message != nil:
		return messageEvents(base, u.Message, platform.EventMessage, botUsername)
	case u.EditedMessage != nil:
		return messageEvents(base, u.EditedMessage, platform.EventEditedMessage, botUsername)
	case u.ChannelPost != nil:
		return messageEvents(base, u.ChannelPost, platform.EventMessage, botUsername)
	case u.EditedChannelPost != nil:
		return messageEvents(base, u.EditedChannelPost, platform.EventEditedMessage, botUsername)
	case u.BusinessMessage != nil:
		return messageEvents(base, u.BusinessMessage, platform.EventMessage, botUsername)
	case u.EditedBusinessMessage != nil:
		return messageEvents(base, u.EditedBusinessMessage, platform.EventEditedMessage, botUsername)
	case u.CallbackQuery != nil:
		cq := u.CallbackQuery
		ev := base
		ev.Kind = platform.EventCallback
		ev.Text = cq.Data
		ev.QueryID = cq.ID
		ev.From = userOf(cq.From)
		ev.Inline.MessageID = cq.InlineMessageID
		if m := cq.Message; m != nil {
			ev.Chat = messageChat(m)
			ev.MessageID = messageID(m.MessageID)
		}
		return one(ev)
	case u.InlineQuery != nil:
		q := u.InlineQuery
		ev := base
		ev.Kind = platform.EventInlineQuery
		ev.From, ev.Text, ev.QueryID = userOf(q.From), q.Query, q.ID
		ev.Inline = platform.InlineQuery{Offset: q.Offset, ChatType: q.ChatType}
		return one(ev)
	case u.ChosenInlineResult != nil:
		r := u.ChosenInlineResult
		ev := base
		ev.Kind = platform.EventInlineResult
		ev.From, ev.Text = userOf(r.From), r.Query
		ev.Inline = platform.InlineQuery{ResultID: r.ResultID, MessageID: r.InlineMessageID}
		return one(ev)
	case u.MessageReaction != nil:
		r := u.MessageReaction
		ev := base
		ev.Kind = platform.EventReaction
		ev.Chat, ev.MessageID, ev.Time = chatOf(r.Chat), messageID(r.MessageID), unixOr(r.Date, now)
		ev.From = userOf(r.User)
		if r.User == nil && r.ActorChat != nil {
			ev.From = chatAsUser(r.ActorChat)
		}
		ev.Reactions = &platform.ReactionUpdate{Old: reactionsOf(r.OldReaction), New: reactionsOf(r.NewReaction)}
		return one(ev)
	case u.MessageReactionCount != nil:
		r := u.MessageReactionCount
		ev := base
		ev.Kind = platform.EventReactionCount
		ev.Chat, ev.MessageID, ev.Time = chatOf(r.Chat), messageID(r.MessageID), unixOr(r.Date, now)
		ev.Reactions = &platform.ReactionUpdate{}
		for _, c := range r.Reactions {
			ev.Reactions.Counts = append(ev.Reactions.Counts, platform.ReactionCount{Reaction: reactionOf(c.Type), Count: c.TotalCount})
		}
		return one(ev)
	case u.MyChatMember != nil:
		ev := memberEvent(base, u.MyChatMember, now)
		ev.Kind = botMembershipKind(u.MyChatMember)
		return one(ev)
	case u.ChatMember != nil:
		ev := memberEvent(base, u.ChatMember, now)
		ev.Kind = platform.EventMemberUpdated
		return one(ev)
	case u.ChatJoinRequest != nil:
		r := u.ChatJoinRequest
		ev := base
		ev.Kind = platform.EventJoinRequest
		ev.Chat, ev.From, ev.Time, ev.Text = chatOf(r.Chat), userOf(r.From), unixOr(r.Date, now), r.Bio
		ev.Member = &platform.MemberUpdate{User: ev.From, UserChatID: idText(r.UserChatID)}
		if r.InviteLink != nil {
			ev.Member.InviteLink = r.InviteLink.InviteLink
		}
		return one(ev)
	case u.PreCheckoutQuery != nil:
		q := u.PreCheckoutQuery
		ev := base
		ev.Kind = platform.EventPreCheckout
		ev.From, ev.QueryID = userOf(q.From), q.ID
		ev.Payment = &platform.Payment{Currency: q.Currency, Amount: max(q.TotalAmount, 0), Payload: q.InvoicePayload, ShippingOptionID: q.ShippingOptionID}
		return one(ev)
	case u.BusinessConnection != nil:
		c := u.BusinessConnection
		ev := base
		ev.Kind = platform.EventBusinessConnection
		ev.From, ev.Time = userOf(c.User), unixOr(c.Date, now)
		ev.Chat = platform.Chat{ID: idText(c.UserChatID), Type: platform.ChatPrivate, Title: ev.From.Name, BusinessConnectionID: c.ID}
		ev.Business = &platform.BusinessConnection{ID: c.ID, User: ev.From, UserChatID: ev.Chat.ID, Enabled: c.IsEnabled,
			CanReply: c.CanReply || c.Rights != nil && c.Rights.CanReply, Since: unixOr(c.Date, time.Time{})}
		return one(ev)
	case u.DeletedBusinessMessages != nil:
		d := u.DeletedBusinessMessages
		ev := base
		ev.Kind = platform.EventMessagesDeleted
		ev.Chat = chatOf(d.Chat)
		ev.Chat.BusinessConnectionID = d.BusinessConnectionID
		for _, id := range d.MessageIDs {
			if s := messageID(id); s != "" {
				ev.MessageIDs = append(ev.MessageIDs, s)
			}
		}
		return one(ev)
	}
	ev := base
	ev.Kind = platform.EventOther
	switch {
	case u.GuestMessage != nil:
		m := u.GuestMessage
		ev.Chat, ev.From, ev.MessageID, ev.QueryID = messageChat(m), senderOf(m), messageID(m.MessageID), m.GuestQueryID
		ev.Time = unixOr(m.Date, now)
		ev.Text = m.Text
		if ev.Text == "" {
			ev.Text = m.Caption
		}
	case u.ShippingQuery != nil:
		ev.From, ev.QueryID = userOf(u.ShippingQuery.From), u.ShippingQuery.ID
		ev.Payment = &platform.Payment{Payload: u.ShippingQuery.InvoicePayload}
	case u.PurchasedPaidMedia != nil:
		ev.From = userOf(u.PurchasedPaidMedia.From)
		ev.Payment = &platform.Payment{Payload: u.PurchasedPaidMedia.PaidMediaPayload}
	case u.PollAnswer != nil:
		ev.From = userOf(u.PollAnswer.User)
		if u.PollAnswer.User == nil && u.PollAnswer.VoterChat != nil {
			ev.From = chatAsUser(u.PollAnswer.VoterChat)
		}
	case u.ChatBoost != nil:
		ev.Chat, ev.From, ev.Time = chatOf(u.ChatBoost.Chat), userOf(u.ChatBoost.Boost.Source.User), unixOr(u.ChatBoost.Boost.AddDate, now)
	case u.RemovedChatBoost != nil:
		ev.Chat, ev.From, ev.Time = chatOf(u.RemovedChatBoost.Chat), userOf(u.RemovedChatBoost.Source.User), unixOr(u.RemovedChatBoost.RemoveDate, now)
	case u.ManagedBot != nil:
		ev.From = userOf(u.ManagedBot.User)
	case u.Subscription != nil:
		ev.From = userOf(u.Subscription.User)
		ev.Payment = &platform.Payment{Payload: u.Subscription.InvoicePayload}
	}
	return one(ev)
}

// memberEvent returns the event of a membership change, without its Kind.
func memberEvent(base platform.Event, m *chatMemberUpdated, now time.Time) platform.Event {
	ev := base
	ev.Chat, ev.From, ev.Time = chatOf(m.Chat), userOf(m.From), unixOr(m.Date, now)
	ev.Member = &platform.MemberUpdate{
		User: userOf(m.NewChatMember.User),
		Old:  platform.MemberStatus(m.OldChatMember.Status), New: platform.MemberStatus(m.NewChatMember.Status),
		OldIsMember: m.OldChatMember.IsMember, NewIsMember: m.NewChatMember.IsMember,
		ViaJoinRequest: m.ViaJoinRequest,
	}
	if ev.Member.User.ID == "" {
		ev.Member.User = userOf(m.OldChatMember.User)
	}
	if m.InviteLink != nil {
		ev.Member.InviteLink = m.InviteLink.InviteLink
	}
	return ev
}

// botMembershipKind returns the kind of a my_chat_member update: in a
// private chat, the bot blocked (its new status "kicked") or unblocked
// (from "kicked" to anything else); in a group or channel, the bot added
// (from outside the chat to inside it) or removed (the other way), where
// inside means owner, administrator, member, or restricted but a member;
// any other change is EventBotMemberChanged.
func botMembershipKind(m *chatMemberUpdated) platform.EventKind {
	old, cur := m.OldChatMember, m.NewChatMember
	if m.Chat != nil && m.Chat.Type == "private" {
		switch {
		case cur.Status == string(platform.MemberBanned) && old.Status != cur.Status:
			return platform.EventBotBlocked
		case old.Status == string(platform.MemberBanned) && cur.Status != old.Status:
			return platform.EventBotUnblocked
		}
		return platform.EventBotMemberChanged
	}
	switch wasIn, isIn := inChat(old), inChat(cur); {
	case !wasIn && isIn:
		return platform.EventBotAdded
	case wasIn && !isIn:
		return platform.EventBotRemoved
	}
	return platform.EventBotMemberChanged
}

// inChat reports whether a member of status m is in the chat.
func inChat(m chatMember) bool {
	switch platform.MemberStatus(m.Status) {
	case platform.MemberOwner, platform.MemberAdmin, platform.MemberRegular:
		return true
	case platform.MemberRestricted:
		return m.IsMember
	}
	return false
}

// reactionsOf maps Telegram's reactions, skipping kinds Herald does not
// know.
func reactionsOf(rs []reactionType) []platform.Reaction {
	var out []platform.Reaction
	for _, r := range rs {
		if pr := reactionOf(r); pr != (platform.Reaction{}) {
			out = append(out, pr)
		}
	}
	return out
}

// reactionOf maps one Telegram reaction; the zero Reaction for a kind
// Herald does not know.
func reactionOf(r reactionType) platform.Reaction {
	switch r.Type {
	case "emoji":
		return platform.Reaction{Emoji: r.Emoji}
	case "custom_emoji":
		return platform.Reaction{CustomEmojiID: r.CustomEmojiID}
	case "paid":
		return platform.Reaction{Paid: true}
	}
	return platform.Reaction{}
}

// idText returns a Telegram ID in decimal, or "" for 0 (absent).
func idText(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// messageID returns Telegram's message ID in decimal, or "" for an ID that
// is not positive (absent from the update): no message is numbered 0.
func messageID(id int) string {
	if id <= 0 {
		return ""
	}
	return strconv.Itoa(id)
}

// messageChat returns the chat of m with the topic and the business
// connection m belongs to: Thread is m's message_thread_id when m is in a
// forum topic (is_topic_message), and BusinessConnectionID its
// business_connection_id.
func messageChat(m *message) platform.Chat {
	c := chatOf(m.Chat)
	if m.IsTopicMessage && m.MessageThreadID > 0 {
		c.Thread = strconv.Itoa(m.MessageThreadID)
	}
	c.BusinessConnectionID = m.BusinessConnectionID
	return c
}

// senderOf returns the author of m: its from, or, for a message sent on
// behalf of a chat (a channel post), that chat.
func senderOf(m *message) platform.User {
	switch {
	case m.From != nil:
		return userOf(m.From)
	case m.SenderChat != nil:
		return chatAsUser(m.SenderChat)
	}
	return platform.User{}
}

// chatAsUser describes a chat acting as a user (a channel posting, an
// anonymous admin reacting).
func chatAsUser(c *chat) platform.User {
	return platform.User{ID: strconv.FormatInt(c.ID, 10), Name: chatOf(c).Title, Username: c.Username}
}

func messageEvents(base platform.Event, m *message, kind platform.EventKind, botUsername string) []platform.Event {
	ev := base
	ev.Kind = kind
	ev.Chat = messageChat(m)
	ev.MessageID = messageID(m.MessageID)
	ev.Time = unixOr(m.Date, base.Time)
	if kind == platform.EventEditedMessage && m.EditDate != 0 {
		ev.Time = unixOr(m.EditDate, base.Time)
	}
	if r := m.ReplyToMessage; r != nil && !(m.IsTopicMessage && r.MessageID == m.MessageThreadID) {
		// In a forum topic every message that replies to no other
		// replies to the topic's first message: that is no reply.
		ev.ReplyToID = messageID(r.MessageID)
	}
	ev.From = senderOf(m)

	if len(m.NewChatMembers) > 0 || m.LeftChatMember != nil {
		var evs []platform.Event
		add := func(kind platform.EventKind, u *user) {
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
	switch p := m.SuccessfulPayment; {
	case p != nil:
		ev.Kind = platform.EventPayment
		ev.Payment = &platform.Payment{
			Currency: p.Currency, Amount: max(p.TotalAmount, 0), Payload: p.InvoicePayload,
			ChargeID: p.TelegramPaymentChargeID, ProviderChargeID: p.ProviderPaymentChargeID, ShippingOptionID: p.ShippingOptionID,
			SubscriptionExpires: unixOr(p.SubscriptionExpirationDate, time.Time{}), Recurring: p.IsRecurring, FirstRecurring: p.IsFirstRecurring,
		}
		return []platform.Event{ev}
	case m.RefundedPayment != nil:
		r := m.RefundedPayment
		ev.Kind = platform.EventRefund
		ev.Payment = &platform.Payment{Currency: r.Currency, Amount: max(r.TotalAmount, 0), Payload: r.InvoicePayload,
			ChargeID: r.TelegramPaymentChargeID, ProviderChargeID: r.ProviderPaymentChargeID}
		return []platform.Event{ev}
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
func chatOf(c *chat) platform.Chat {
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

func userOf(u *user) platform.User {
	if u == nil {
		return platform.User{}
	}
	return platform.User{
		ID:           strconv.FormatInt(u.ID, 10),
		Name:         fullName(u.FirstName, u.LastName),
		Username:     u.Username,
		IsBot:        u.IsBot,
		LanguageCode: u.LanguageCode,
	}
}

func fullName(first, last string) string {
	return strings.TrimSpace(first + " " + last)
}

// unixOr returns the Unix time secs in UTC, or def when secs is not
// positive or too large for a time.Time to hold in a way that marshals.
func unixOr(secs int64, def time.Time) time.Time {
	if secs <= 0 || secs > maxUnix {
		return def
	}
	return time.Unix(secs, 0).UTC()
}

// maxUnix is the last second of year 9999, beyond which time.Time does
// not marshal to JSON.
const maxUnix = 253402300799

// attachmentsOf returns the files of m as attachments, each with m's
// caption: a photo (its largest size, with Sizes listing all of them,
// smallest first, as Telegram orders them), an animation (a GIF, which
// Telegram also describes as a document: it is one attachment, the
// animation), a document, a video, a video note (Width and Height its
// diameter), an audio, a voice note or a sticker, with the file ID,
// name, MIME type, size in bytes, dimensions and duration Telegram gives.
// It is nil for a message without a file.
func attachmentsOf(m *message) []platform.Attachment {
	at := platform.Attachment{Caption: m.Caption}
	secs := func(s int64) time.Duration { // not negative, and no overflow
		return time.Duration(min(max(s, 0), int64(math.MaxInt64/time.Second))) * time.Second
	}
	fill := func(kind platform.AttachmentKind, f *file) {
		at.Kind, at.FileID, at.FileName, at.MIMEType, at.Size = kind, f.FileID, f.FileName, f.MimeType, f.FileSize
		at.Width, at.Height, at.Duration = max(f.Width, 0), max(f.Height, 0), secs(f.Duration)
	}
	switch {
	case len(m.Photo) > 0:
		at.Kind = platform.AttachPhoto
		at.Sizes = make([]platform.PhotoSize, 0, len(m.Photo))
		for _, p := range m.Photo {
			at.Sizes = append(at.Sizes, platform.PhotoSize{FileID: p.FileID, Width: p.Width, Height: p.Height, Size: max(p.FileSize, 0)})
		}
		largest := at.Sizes[0]
		for _, p := range at.Sizes[1:] {
			if p.Width*p.Height >= largest.Width*largest.Height {
				largest = p
			}
		}
		at.FileID, at.Width, at.Height, at.Size = largest.FileID, largest.Width, largest.Height, largest.Size
	case m.Animation != nil:
		fill(platform.AttachAnimation, m.Animation)
	case m.Document != nil:
		fill(platform.AttachDocument, m.Document)
		at.Width, at.Height, at.Duration = 0, 0, 0
	case m.Video != nil:
		fill(platform.AttachVideo, m.Video)
	case m.VideoNote != nil:
		fill(platform.AttachVideoNote, m.VideoNote)
		at.Width, at.Height = max(m.VideoNote.Length, 0), max(m.VideoNote.Length, 0)
	case m.Audio != nil:
		fill(platform.AttachAudio, m.Audio)
		at.Width, at.Height = 0, 0
	case m.Voice != nil:
		fill(platform.AttachVoice, m.Voice)
		at.Width, at.Height = 0, 0
	case m.Sticker != nil:
		st := m.Sticker
		fill(platform.AttachSticker, &st.file)
		at.FileName, at.Duration = "", 0
		switch {
		case st.IsVideo:
			at.MIMEType = "video/webm"
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
