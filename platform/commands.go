package platform

import "context"

// Command is one entry of a bot's commands menu: its name without the
// "/" and what it does.
type Command struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// CommandScopeKind says which users see a commands menu (Telegram's
// BotCommandScope types).
type CommandScopeKind string

// The scopes of a commands menu. The zero value is ScopeDefault.
const (
	ScopeDefault               CommandScopeKind = "default"
	ScopeAllPrivateChats       CommandScopeKind = "all_private_chats"
	ScopeAllGroupChats         CommandScopeKind = "all_group_chats"
	ScopeAllChatAdministrators CommandScopeKind = "all_chat_administrators"
	ScopeChat                  CommandScopeKind = "chat"                // ChatID
	ScopeChatAdministrators    CommandScopeKind = "chat_administrators" // ChatID
	ScopeChatMember            CommandScopeKind = "chat_member"         // ChatID and UserID
)

// CommandScope says for whom a commands menu is: a scope (the zero
// value: every user, every language) and a language (an ISO 639-1 code
// such as "de"; empty: users of every language without a menu of their
// own).
type CommandScope struct {
	Kind     CommandScopeKind `json:"kind,omitempty"`
	ChatID   string           `json:"chat_id,omitempty"`
	UserID   string           `json:"user_id,omitempty"`
	Language string           `json:"language,omitempty"`
}

// CommandSetter is implemented by an [Adapter] whose platform shows a
// menu of the bot's commands (Telegram's setMyCommands). The engine calls
// SetCommands at start with the commands it has handlers for and their
// descriptions.
//
// SetCommands makes cmds the menu of scope, replacing the one set
// before; an empty cmds removes it. Commands the platform cannot show (a
// name it does not allow) are left out and logged, not refused, so one
// odd command does not empty the menu. An adapter configured not to set
// the menu returns nil and sends nothing. Errors follow [Sender]'s kinds.
// It is safe for concurrent use.
type CommandSetter interface {
	Adapter
	SetCommands(ctx context.Context, cmds []Command, scope CommandScope) error
}
