package adaptertest

import (
	"context"

	"github.com/heraldbot/herald/platform"
)

// FilePeer is a [Peer] whose users can send files. The suite's download
// check needs one unless [Features.NoDownload].
type FilePeer interface {
	Peer
	// SayFile makes from send chat a message carrying one file: of kind
	// att.Kind, named att.FileName, of type att.MIMEType, captioned
	// att.Caption, holding data (the other fields of att are unused).
	// The adapter's Run is to deliver it as an [platform.EventMessage]
	// with one attachment, which its Download fetches.
	SayFile(ctx context.Context, chat platform.Chat, from platform.User, att platform.Attachment, data []byte) error
}

// PressPeer is a [Peer] whose users can press inline buttons and that
// sees the bot's answers to the presses. The suite's callback check needs
// one unless [Features.NoCallbackAnswer].
type PressPeer interface {
	Peer
	// Press makes from press the button with callback data data under the
	// bot's message messageID in chat. The adapter's Run is to deliver it
	// as an [platform.EventCallback].
	Press(ctx context.Context, chat platform.Chat, from platform.User, messageID, data string) error
	// Answered waits until the press ev (an event Run delivered) was
	// answered, and returns the answer as the peer received it.
	Answered(ctx context.Context, ev platform.Event) (platform.CallbackAnswer, error)
}

// ActionPeer is a [Peer] that sees the chat actions the bot shows. If the
// peer is one, the suite's chat-action check also checks that the action
// arrived.
type ActionPeer interface {
	Peer
	// Actions waits until chat has shown at least n chat actions, and
	// returns them all, oldest first.
	Actions(ctx context.Context, chat platform.Chat, n int) ([]platform.ChatAction, error)
}

// InlinePeer is a [Peer] whose users can send inline queries and choose
// among the results. The suite's inline check needs one unless
// [Features.NoInline].
type InlinePeer interface {
	Peer
	// Query makes from type an inline query, text, in a chat's input
	// field. The adapter's Run is to deliver it as an
	// [platform.EventInlineQuery].
	Query(ctx context.Context, from platform.User, text string) error
	// InlineAnswered waits until the inline query ev was answered, and
	// returns the answer as the peer received it: each result with its
	// ID, Title and Message (the text, or the attachment's kind and URL
	// or FileID).
	InlineAnswered(ctx context.Context, ev platform.Event) (platform.InlineAnswer, error)
	// Choose makes from pick the result resultID of the answer to the
	// inline query text. The adapter's Run is to deliver it as an
	// [platform.EventInlineResult].
	Choose(ctx context.Context, from platform.User, resultID, text string) error
}

// TopicPeer is a [Peer] of a platform with topics in group chats
// (Telegram's forum topics). The suite's topic check needs one unless
// [Features.NoTopics].
type TopicPeer interface {
	Peer
	// Topic returns topic n (n ≥ 1) of the group chat: the chat with
	// Thread set as the adapter's events carry it.
	Topic(ctx context.Context, chat platform.Chat, n int) (platform.Chat, error)
	// SayInTopic makes from say text in topic (a chat Topic returned), as
	// Say does in a chat.
	SayInTopic(ctx context.Context, topic platform.Chat, from platform.User, text string) error
	// Threads waits until the peer has received at least n messages from
	// the bot in chat, and returns the topic each went to (its Thread, ""
	// for the chat's main conversation), in order.
	Threads(ctx context.Context, chat platform.Chat, n int) ([]string, error)
}

// ReactionPeer is a [Peer] of a platform with reactions to messages. The
// suite's reaction check needs one unless [Features.NoReactions].
type ReactionPeer interface {
	Peer
	// React makes from react to the message messageID of chat with emoji;
	// the adapter's Run is to deliver it as an [platform.EventReaction].
	React(ctx context.Context, chat platform.Chat, from platform.User, messageID, emoji string) error
	// BotReactions waits until the bot has set at least n reactions in
	// chat, and returns them, oldest first: for each, the message and its
	// emoji (none when the bot removed its reaction).
	BotReactions(ctx context.Context, chat platform.Chat, n int) ([]BotReaction, error)
}

// BotReaction is a reaction the bot set, as a [ReactionPeer] saw it.
type BotReaction struct {
	MessageID string
	Emoji     []string
}
