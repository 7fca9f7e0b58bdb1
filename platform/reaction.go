package platform

// Reaction is one reaction to a message: an emoji such as "👍", a custom
// emoji by its ID, or (in events only; bots cannot set one) a paid
// reaction. Exactly one of its fields is set. It is a plain value.
type Reaction struct {
	Emoji         string `json:"emoji,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
	Paid          bool   `json:"paid,omitempty"`
}

// ReactionCount is how many times a reaction was given to a message.
type ReactionCount struct {
	Reaction Reaction `json:"reaction"`
	Count    int      `json:"count"`
}

// ReactionUpdate is what an [EventReaction] or [EventReactionCount]
// carries: for a user's change, the reactions before (Old) and after
// (New); for anonymous reactions, the counts of every reaction the
// message now has. The zero value is no reaction event.
type ReactionUpdate struct {
	Old    []Reaction      `json:"old,omitempty"`
	New    []Reaction      `json:"new,omitempty"`
	Counts []ReactionCount `json:"counts,omitempty"`
}

// ReactMessage returns the setting of the bot's reaction to message id:
// sent, it makes the reaction to that message in the target chat the
// emoji given, or, with none, removes the bot's reactions. See
// [OutboundMessage] ReactID.
func ReactMessage(id string, emoji ...string) OutboundMessage {
	m := OutboundMessage{ReactID: id}
	for _, e := range emoji {
		m.Reactions = append(m.Reactions, Reaction{Emoji: e})
	}
	return m
}
