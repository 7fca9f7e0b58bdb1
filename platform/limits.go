package platform

import "fmt"

// Limits is the send budget a platform publishes for a bot: token buckets,
// each a steady rate in messages per second and a burst of messages that
// may go at once after a quiet spell. A zero rate means no limit of that
// kind. The engine rate-limits an adapter's sends by the Limits of a
// [LimitedAdapter] unless it is configured otherwise.
type Limits struct {
	// PerSecond and Burst bound all of the bot's sends on the platform.
	PerSecond float64
	Burst     int
	// PerChatPerSecond and PerChatBurst bound the sends to each chat.
	PerChatPerSecond float64
	PerChatBurst     int
	// PerGroupPerSecond and PerGroupBurst further bound the sends to each
	// group chat (ChatGroup), which take a per-chat token too.
	PerGroupPerSecond float64
	PerGroupBurst     int
}

// Validate returns an error when a rate or a burst of l is negative, and
// nil otherwise.
func (l Limits) Validate() error {
	if l.PerSecond < 0 || l.Burst < 0 || l.PerChatPerSecond < 0 || l.PerChatBurst < 0 || l.PerGroupPerSecond < 0 || l.PerGroupBurst < 0 {
		return fmt.Errorf("platform: limits with a negative rate or burst (%+v)", l)
	}
	return nil
}

// LimitedAdapter is an [Adapter] whose platform publishes a send budget.
type LimitedAdapter interface {
	Adapter
	// Limits returns the platform's budget; it must not change.
	Limits() Limits
}
