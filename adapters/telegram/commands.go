package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

var _ platform.CommandSetter = (*Adapter)(nil)

// Telegram's limits of a commands menu.
const (
	maxCommands           = 100
	maxCommandName        = 32
	maxCommandDescription = 256
)

// SetCommands makes cmds the bot's commands menu with setMyCommands, for
// scope (its Kind, ChatID and UserID as Telegram's BotCommandScope, and
// its Language as language_code), and implements
// [platform.CommandSetter]; the engine calls it at start with the
// commands it has handlers for. With [Config.NoCommandMenu] it does
// nothing and returns nil.
//
// Names are taken without a leading "/" and in lower case; a name
// Telegram does not allow (1 to 32 letters a-z, digits and "_") is left
// out with a log line, as are commands after the 100th and repeated
// names, so one odd command does not empty the menu. An empty
// description becomes "/name", a longer one than 256 characters is cut.
// An empty cmds (or none left) sends an empty menu, which removes the
// scope's. A scope that needs a chat or user without a valid ID is
// refused with a permanent error wrapping platform.ErrInvalidMessage,
// before any request; Telegram's answers map as for sends.
func (a *Adapter) SetCommands(ctx context.Context, cmds []platform.Command, scope platform.CommandScope) error {
	if a.cfg.NoCommandMenu {
		return nil
	}
	params := tgbotapi.Params{}
	sc, err := commandScope(scope)
	if err != nil {
		return platform.Permanent(fmt.Errorf("telegram: setMyCommands: %w", err))
	}
	if sc != nil {
		if err := addJSON(params, "scope", sc); err != nil {
			return platform.Permanent(err)
		}
	}
	params.AddNonEmpty("language_code", scope.Language)
	type command struct {
		Command     string `json:"command"`
		Description string `json:"description"`
	}
	list := make([]command, 0, min(len(cmds), maxCommands))
	seen := map[string]bool{}
	for _, c := range cmds {
		name := strings.ToLower(strings.TrimPrefix(c.Name, "/"))
		switch {
		case !validCommandName(name):
			a.log.Warn("telegram: a command Telegram's menu cannot show is left out of it (1 to 32 letters a-z, digits and _)", zap.String("command", c.Name))
			continue
		case seen[name]:
			continue
		case len(list) == maxCommands:
			a.log.Warn("telegram: commands after the 100th are left out of the menu", zap.String("command", c.Name))
			continue
		}
		seen[name] = true
		desc := strings.TrimSpace(c.Description)
		if desc == "" {
			desc = "/" + name
		}
		if utf8.RuneCountInString(desc) > maxCommandDescription {
			desc = string([]rune(desc)[:maxCommandDescription-1]) + "…"
		}
		list = append(list, command{Command: name, Description: desc})
	}
	if err := addJSON(params, "commands", list); err != nil {
		return platform.Permanent(err)
	}
	_, err = a.makeRequest(ctx, "setMyCommands", params)
	return a.red.Error(err)
}

// validCommandName reports whether name is 1 to 32 of a-z, 0-9 and "_".
func validCommandName(name string) bool {
	if name == "" || len(name) > maxCommandName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// commandScope returns s as Telegram's BotCommandScope, or nil for the
// default scope.
func commandScope(s platform.CommandScope) (map[string]any, error) {
	switch s.Kind {
	case "", platform.ScopeDefault:
		return nil, nil
	case platform.ScopeAllPrivateChats, platform.ScopeAllGroupChats, platform.ScopeAllChatAdministrators:
		return map[string]any{"type": string(s.Kind)}, nil
	case platform.ScopeChat, platform.ScopeChatAdministrators, platform.ScopeChatMember:
	default:
		return nil, fmt.Errorf("%w: unknown command scope %q", platform.ErrInvalidMessage, s.Kind)
	}
	c, err := parseChat(s.ChatID)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"type": string(s.Kind), "chat_id": c.id}
	if c.username != "" {
		out["chat_id"] = c.username
	}
	if s.Kind == platform.ScopeChatMember {
		id, err := strconv.ParseInt(s.UserID, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%w: user ID %q of a chat_member scope", platform.ErrInvalidMessage, s.UserID)
		}
		out["user_id"] = id
	}
	return out, nil
}
