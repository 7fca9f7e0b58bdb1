package telegram

import (
	"encoding/json"
	"errors"
)

// update is one Telegram update as Herald decodes it: every kind of Bot
// API 10.2, each with the fields the adapter maps to a platform.Event,
// and raw, the update's JSON as Telegram sent it, which every event of it
// carries in Raw. The types are Herald's own and read only what they need
// (unknown fields are ignored), so a field Telegram adds or changes
// elsewhere in an update never makes it undecodable; a kind the adapter
// does not know arrives as an EventOther with its Raw.
type update struct {
	UpdateID int `json:"update_id"`

	Message                 *message                 `json:"message"`
	EditedMessage           *message                 `json:"edited_message"`
	ChannelPost             *message                 `json:"channel_post"`
	EditedChannelPost       *message                 `json:"edited_channel_post"`
	BusinessConnection      *businessConnection      `json:"business_connection"`
	BusinessMessage         *message                 `json:"business_message"`
	EditedBusinessMessage   *message                 `json:"edited_business_message"`
	DeletedBusinessMessages *businessMessagesDeleted `json:"deleted_business_messages"`
	GuestMessage            *message                 `json:"guest_message"`
	MessageReaction         *messageReaction         `json:"message_reaction"`
	MessageReactionCount    *messageReactionCount    `json:"message_reaction_count"`
	InlineQuery             *inlineQuery             `json:"inline_query"`
	ChosenInlineResult      *chosenInlineResult      `json:"chosen_inline_result"`
	CallbackQuery           *callbackQuery           `json:"callback_query"`
	ShippingQuery           *shippingQuery           `json:"shipping_query"`
	PreCheckoutQuery        *preCheckoutQuery        `json:"pre_checkout_query"`
	PurchasedPaidMedia      *paidMediaPurchased      `json:"purchased_paid_media"`
	Poll                    *poll                    `json:"poll"`
	PollAnswer              *pollAnswer              `json:"poll_answer"`
	MyChatMember            *chatMemberUpdated       `json:"my_chat_member"`
	ChatMember              *chatMemberUpdated       `json:"chat_member"`
	ChatJoinRequest         *chatJoinRequest         `json:"chat_join_request"`
	ChatBoost               *chatBoostUpdated        `json:"chat_boost"`
	RemovedChatBoost        *chatBoostRemoved        `json:"removed_chat_boost"`
	ManagedBot              *managedBot              `json:"managed_bot"`
	Subscription            *subscription            `json:"subscription"`

	raw json.RawMessage
}

// UpdateTypes lists every update type of Bot API 10.2, as getUpdates'
// and setWebhook's allowed_updates name them: what the adapter asks for
// when [Config.AllowedUpdates] is nil, so that chat_member updates and
// reactions (which Telegram sends only when asked) arrive too.
var UpdateTypes = []string{
	"message", "edited_message", "channel_post", "edited_channel_post",
	"business_connection", "business_message", "edited_business_message", "deleted_business_messages",
	"guest_message", "message_reaction", "message_reaction_count",
	"inline_query", "chosen_inline_result", "callback_query",
	"shipping_query", "pre_checkout_query", "purchased_paid_media",
	"poll", "poll_answer", "my_chat_member", "chat_member", "chat_join_request",
	"chat_boost", "removed_chat_boost", "managed_bot", "subscription",
}

// errNoUpdateID is decodeUpdate's error for an update without a positive
// update_id, which cannot be confirmed or told apart from others.
var errNoUpdateID = errors.New("telegram: an update without a positive update_id")

// decodeUpdate decodes one update, keeping raw (not copied: the caller
// must not change it) as its Raw. It fails for JSON that is not an
// object of the update's shape (a kind's value that is not an object, a
// field of the wrong type among those read) and for an update without a
// positive update_id.
func decodeUpdate(raw []byte) (*update, error) {
	u := &update{}
	if err := json.Unmarshal(raw, u); err != nil {
		return nil, err
	}
	if u.UpdateID <= 0 {
		return nil, errNoUpdateID
	}
	u.raw = json.RawMessage(raw)
	return u, nil
}

// user is Telegram's User.
type user struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name"`
	Username     string `json:"username"`
	LanguageCode string `json:"language_code"`
}

// chat is Telegram's Chat.
type chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	IsForum   bool   `json:"is_forum"`
}

// message is Telegram's Message: what the adapter reads of it.
type message struct {
	MessageID            int      `json:"message_id"`
	MessageThreadID      int      `json:"message_thread_id"`
	From                 *user    `json:"from"`
	SenderChat           *chat    `json:"sender_chat"`
	Date                 int64    `json:"date"`
	EditDate             int64    `json:"edit_date"`
	BusinessConnectionID string   `json:"business_connection_id"`
	GuestQueryID         string   `json:"guest_query_id"`
	Chat                 *chat    `json:"chat"`
	IsTopicMessage       bool     `json:"is_topic_message"`
	ReplyToMessage       *replyTo `json:"reply_to_message"`
	Text                 string   `json:"text"`
	Caption              string   `json:"caption"`

	Photo     []file   `json:"photo"`
	Animation *file    `json:"animation"`
	Document  *file    `json:"document"`
	Video     *file    `json:"video"`
	VideoNote *file    `json:"video_note"`
	Audio     *file    `json:"audio"`
	Voice     *file    `json:"voice"`
	Sticker   *sticker `json:"sticker"`

	NewChatMembers    []user             `json:"new_chat_members"`
	LeftChatMember    *user              `json:"left_chat_member"`
	SuccessfulPayment *successfulPayment `json:"successful_payment"`
	RefundedPayment   *refundedPayment   `json:"refunded_payment"`
}

// replyTo is the message a message replies to: its ID is all the adapter
// reads.
type replyTo struct {
	MessageID int `json:"message_id"`
}

// file is what Telegram's PhotoSize, Animation, Document, Video,
// VideoNote, Audio and Voice have in common, as far as the adapter reads
// them.
type file struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Length   int    `json:"length"` // a video note's diameter
	Duration int64  `json:"duration"`
}

// sticker is Telegram's Sticker.
type sticker struct {
	file
	IsAnimated bool `json:"is_animated"`
	IsVideo    bool `json:"is_video"`
}

// successfulPayment is Telegram's SuccessfulPayment.
type successfulPayment struct {
	Currency                   string `json:"currency"`
	TotalAmount                int64  `json:"total_amount"`
	InvoicePayload             string `json:"invoice_payload"`
	SubscriptionExpirationDate int64  `json:"subscription_expiration_date"`
	IsRecurring                bool   `json:"is_recurring"`
	IsFirstRecurring           bool   `json:"is_first_recurring"`
	ShippingOptionID           string `json:"shipping_option_id"`
	TelegramPaymentChargeID    string `json:"telegram_payment_charge_id"`
	ProviderPaymentChargeID    string `json:"provider_payment_charge_id"`
}

// refundedPayment is Telegram's RefundedPayment.
type refundedPayment struct {
	Currency                string `json:"currency"`
	TotalAmount             int64  `json:"total_amount"`
	InvoicePayload          string `json:"invoice_payload"`
	TelegramPaymentChargeID string `json:"telegram_payment_charge_id"`
	ProviderPaymentChargeID string `json:"provider_payment_charge_id"`
}

// businessConnection is Telegram's BusinessConnection.
type businessConnection struct {
	ID         string `json:"id"`
	User       *user  `json:"user"`
	UserChatID int64  `json:"user_chat_id"`
	Date       int64  `json:"date"`
	Rights     *struct {
		CanReply bool `json:"can_reply"`
	} `json:"rights"`
	CanReply  bool `json:"can_reply"` // before Bot API 9.0
	IsEnabled bool `json:"is_enabled"`
}

// businessMessagesDeleted is Telegram's BusinessMessagesDeleted.
type businessMessagesDeleted struct {
	BusinessConnectionID string `json:"business_connection_id"`
	Chat                 *chat  `json:"chat"`
	MessageIDs           []int  `json:"message_ids"`
}

// reactionType is Telegram's ReactionType: emoji, custom_emoji or paid.
type reactionType struct {
	Type          string `json:"type"`
	Emoji         string `json:"emoji"`
	CustomEmojiID string `json:"custom_emoji_id"`
}

// messageReaction is Telegram's MessageReactionUpdated.
type messageReaction struct {
	Chat        *chat          `json:"chat"`
	MessageID   int            `json:"message_id"`
	User        *user          `json:"user"`
	ActorChat   *chat          `json:"actor_chat"`
	Date        int64          `json:"date"`
	OldReaction []reactionType `json:"old_reaction"`
	NewReaction []reactionType `json:"new_reaction"`
}

// messageReactionCount is Telegram's MessageReactionCountUpdated.
type messageReactionCount struct {
	Chat      *chat `json:"chat"`
	MessageID int   `json:"message_id"`
	Date      int64 `json:"date"`
	Reactions []struct {
		Type       reactionType `json:"type"`
		TotalCount int          `json:"total_count"`
	} `json:"reactions"`
}

// inlineQuery is Telegram's InlineQuery.
type inlineQuery struct {
	ID       string `json:"id"`
	From     *user  `json:"from"`
	Query    string `json:"query"`
	Offset   string `json:"offset"`
	ChatType string `json:"chat_type"`
}

// chosenInlineResult is Telegram's ChosenInlineResult.
type chosenInlineResult struct {
	ResultID        string `json:"result_id"`
	From            *user  `json:"from"`
	InlineMessageID string `json:"inline_message_id"`
	Query           string `json:"query"`
}

// callbackQuery is Telegram's CallbackQuery.
type callbackQuery struct {
	ID              string   `json:"id"`
	From            *user    `json:"from"`
	Message         *message `json:"message"`
	InlineMessageID string   `json:"inline_message_id"`
	Data            string   `json:"data"`
	GameShortName   string   `json:"game_short_name"`
}

// shippingQuery is Telegram's ShippingQuery.
type shippingQuery struct {
	ID             string `json:"id"`
	From           *user  `json:"from"`
	InvoicePayload string `json:"invoice_payload"`
}

// preCheckoutQuery is Telegram's PreCheckoutQuery.
type preCheckoutQuery struct {
	ID               string `json:"id"`
	From             *user  `json:"from"`
	Currency         string `json:"currency"`
	TotalAmount      int64  `json:"total_amount"`
	InvoicePayload   string `json:"invoice_payload"`
	ShippingOptionID string `json:"shipping_option_id"`
}

// paidMediaPurchased is Telegram's PaidMediaPurchased.
type paidMediaPurchased struct {
	From             *user  `json:"from"`
	PaidMediaPayload string `json:"paid_media_payload"`
}

// poll is Telegram's Poll: its ID and question are all the adapter reads.
type poll struct {
	ID       string `json:"id"`
	Question string `json:"question"`
}

// pollAnswer is Telegram's PollAnswer.
type pollAnswer struct {
	PollID    string `json:"poll_id"`
	VoterChat *chat  `json:"voter_chat"`
	User      *user  `json:"user"`
}

// chatMember is Telegram's ChatMember, of any status.
type chatMember struct {
	Status   string `json:"status"`
	User     *user  `json:"user"`
	IsMember bool   `json:"is_member"`
}

// chatInviteLink is Telegram's ChatInviteLink.
type chatInviteLink struct {
	InviteLink string `json:"invite_link"`
}

// chatMemberUpdated is Telegram's ChatMemberUpdated.
type chatMemberUpdated struct {
	Chat           *chat           `json:"chat"`
	From           *user           `json:"from"`
	Date           int64           `json:"date"`
	OldChatMember  chatMember      `json:"old_chat_member"`
	NewChatMember  chatMember      `json:"new_chat_member"`
	InviteLink     *chatInviteLink `json:"invite_link"`
	ViaJoinRequest bool            `json:"via_join_request"`
}

// chatJoinRequest is Telegram's ChatJoinRequest.
type chatJoinRequest struct {
	Chat       *chat           `json:"chat"`
	From       *user           `json:"from"`
	UserChatID int64           `json:"user_chat_id"`
	Date       int64           `json:"date"`
	Bio        string          `json:"bio"`
	InviteLink *chatInviteLink `json:"invite_link"`
}

// chatBoostSource is Telegram's ChatBoostSource: the user, if any.
type chatBoostSource struct {
	Source string `json:"source"`
	User   *user  `json:"user"`
}

// chatBoostUpdated is Telegram's ChatBoostUpdated.
type chatBoostUpdated struct {
	Chat  *chat `json:"chat"`
	Boost struct {
		BoostID string          `json:"boost_id"`
		AddDate int64           `json:"add_date"`
		Source  chatBoostSource `json:"source"`
	} `json:"boost"`
}

// chatBoostRemoved is Telegram's ChatBoostRemoved.
type chatBoostRemoved struct {
	Chat       *chat           `json:"chat"`
	BoostID    string          `json:"boost_id"`
	RemoveDate int64           `json:"remove_date"`
	Source     chatBoostSource `json:"source"`
}

// managedBot is Telegram's ManagedBotUpdated.
type managedBot struct {
	User *user `json:"user"`
	Bot  *user `json:"bot"`
}

// subscription is Telegram's BotSubscriptionUpdated.
type subscription struct {
	User           *user  `json:"user"`
	InvoicePayload string `json:"invoice_payload"`
	State          string `json:"state"`
}
