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
type Chat struct {
	ID    string   `json:"id"`
	Type  ChatType `json:"type,omitempty"`
	Title string   `json:"title,omitempty"`
}

// IsGroup reports whether the chat is a group ([ChatGroup]): several users
// talking, the bot among them. A channel, where the bot broadcasts, is not
// a group; nor is a private chat or a chat of unknown type.
func (c Chat) IsGroup() bool { return c.Type == ChatGroup }

// User is the author of an event. ID is the platform's identifier in text
// form; Name is a display name and Username the platform's handle, without
// a leading "@", when it has one.
type User struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Username string `json:"username,omitempty"`
	IsBot    bool   `json:"is_bot,omitempty"`
}
