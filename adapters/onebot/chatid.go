package onebot

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldbot/herald/platform"
)

// ErrInvalidChat is wrapped (as a permanent error) by Send when the target's
// ID or type cannot be used.
var ErrInvalidChat = errors.New("onebot: invalid chat")

// ChatID returns the chat ID the adapter uses for user or group id of the bot
// selfID: "<self_id>:<id>", or just "<id>" when selfID is 0 (unknown).
//
// OneBot user and group IDs are only meaningful per bot account, and one
// adapter may serve several accounts at once (several implementations
// dialling the reverse endpoint). So that a chat ID always names one
// conversation, whatever else is connected, the adapter's events carry chat
// IDs of this form: the bot's QQ ID, a colon, and the user ID (private
// chats) or group ID (groups); [platform.Chat.Type] says which of the two
// the ID is, since QQ users and groups share one number space. Send routes
// such an ID to that bot's connection, so an event's chat can be answered
// as it is.
//
// Send also accepts a bare "<id>", for code that knows a group number but
// not the bot: it goes to the only connected bot, and fails with
// [ErrAmbiguousChat] when several are connected.
func ChatID(selfID, id int64) string {
	if selfID == 0 {
		return strconv.FormatInt(id, 10)
	}
	return strconv.FormatInt(selfID, 10) + ":" + strconv.FormatInt(id, 10)
}

// ParseChatID splits a chat ID made by [ChatID], or a bare "<id>", into the
// bot's self ID (0 for a bare ID) and the user or group ID. The error wraps
// [ErrInvalidChat].
func ParseChatID(s string) (selfID, id int64, err error) {
	selfPart, idPart, qualified := strings.Cut(s, ":")
	if !qualified {
		idPart = selfPart
	}
	id, err = strconv.ParseInt(idPart, 10, 64)
	if err != nil || id <= 0 {
		return 0, 0, fmt.Errorf("%w: chat ID %q: want \"<self_id>:<id>\" or \"<id>\" with positive integers", ErrInvalidChat, s)
	}
	if qualified {
		selfID, err = strconv.ParseInt(selfPart, 10, 64)
		if err != nil || selfID <= 0 {
			return 0, 0, fmt.Errorf("%w: chat ID %q: bad self ID", ErrInvalidChat, s)
		}
	}
	return selfID, id, nil
}

// PrivateChat returns the private chat between bot selfID and user userID,
// for sending to a user without an event to answer.
func PrivateChat(selfID, userID int64) platform.Chat {
	return platform.Chat{ID: ChatID(selfID, userID), Type: platform.ChatPrivate}
}

// GroupChat returns the group groupID as seen by bot selfID.
func GroupChat(selfID, groupID int64) platform.Chat {
	return platform.Chat{ID: ChatID(selfID, groupID), Type: platform.ChatGroup}
}
