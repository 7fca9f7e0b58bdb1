package telegramtest

import (
	"strconv"
	"strings"
)

// WithChannel makes the server know a channel by its public username, as
// Telegram knows "@channelusername": a bot may name it by username, or by
// chatID, in the chat_id of sends and edits, and both reach the same chat,
// whose type is "channel". username starts with "@"; one without is given
// one. Messages to the channel are recorded under chatID (read them with
// [Server.Sent] and [Server.Message] of chatID), and [Request.ChatID] is
// chatID for requests naming either. chatID should be a channel's ID, a
// negative number such as -1001234567890. Repeated use is additive; a
// username given again names the last chatID given for it. Without it the
// server knows no usernames and answers a request naming one with 400
// "Bad Request: chat not found".
func WithChannel(username string, chatID int64) Option {
	return optionFunc(func(s *Server) {
		if !strings.HasPrefix(username, "@") {
			username = "@" + username
		}
		s.channels[strings.ToLower(username)] = chatID
		s.chanName[chatID] = username
	})
}

// chatID reads a chat_id parameter: a chat ID, or the username of a
// channel given with [WithChannel] (usernames are case-insensitive, as on
// Telegram). It reports false for anything else, and for 0.
func (s *Server) chatID(v string) (int64, bool) {
	if strings.HasPrefix(v, "@") {
		id, ok := s.channels[strings.ToLower(v)]
		return id, ok
	}
	id, err := strconv.ParseInt(v, 10, 64)
	return id, err == nil && id != 0
}
