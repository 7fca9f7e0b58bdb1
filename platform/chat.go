package platform

// ChatType says what kind of conversation a [Chat] is.
type ChatType string

// The kinds of chat Herald distinguishes. Platforms map their own kinds onto
// these: a Telegram supergroup is a [ChatGroup], a OneBot private message a
// [ChatPrivate].
const (
	ChatPrivate ChatType = "private" // one user talking to the bot
	ChatGroup   ChatType = "group"   // several users; the bot is one member
	ChatChannel ChatType = "channel" // a broadcast channel
)

// Chat is a conversation the bot takes part in. ID is the platform's own
// identifier in text form (Telegram's int64 chat ID, a OneBot user or group
// ID, a web chat's session ID) and, with the platform's name, identifies the
// chat: two adapters may use the same ID for different chats.
//
// Thread and BusinessConnectionID say where in the chat, and through what,
// an event happened and a send goes: an event's Chat carries them, so a
// reply to it (a send whose target is the event's Chat) lands in the same
// topic and goes through the same business connection. They do not make a
// chat of their own: the engine's queues and rate limits are keyed by ID
// alone, so a topic counts as part of its chat. Adapters of platforms
// without topics or business accounts ignore them.
type Chat struct {
	ID    string   `json:"id"`
	Type  ChatType `json:"type,omitempty"`
	Title string   `json:"title,omitempty"`

	// Thread is the topic within the chat: Telegram's message_thread_id
	// of a forum topic (set on events from one, never for the General
	// topic), which a send to the chat then goes to. Empty means the
	// chat's main conversation.
	Thread string `json:"thread,omitempty"`
	// BusinessConnectionID is the business connection through which the
	// bot acts for a business account in this chat (Telegram's
	// business_connection_id): an event of a business message carries
	// it, and every send, edit and chat action to the chat then goes
	// through it. Empty means the bot acts as itself.
	BusinessConnectionID string `json:"business_connection_id,omitempty"`
}

// IsGroup reports whether the chat is a group ([ChatGroup]): several users
// talking, the bot among them. A channel, where the bot broadcasts, is not
// a group; nor is a private chat or a chat of unknown type.
func (c Chat) IsGroup() bool { return c.Type == ChatGroup }

// User is the author of an event. ID is the platform's identifier in text
// form; Name is a display name and Username the platform's handle, without
// a leading "@", when it has one. LanguageCode is the IETF language tag of
// the user's client ("en", "pt-br"), where the platform tells it
// (Telegram does, for users, not always), else empty.
type User struct {
	ID           string `json:"id"`
	Name         string `json:"name,omitempty"`
	Username     string `json:"username,omitempty"`
	IsBot        bool   `json:"is_bot,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}
