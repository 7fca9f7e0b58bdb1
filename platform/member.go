package platform

import "context"

// MemberStatus is a member's standing in a chat, as Telegram names it.
type MemberStatus string

// The member statuses.
const (
	MemberOwner      MemberStatus = "creator"       // the chat's owner
	MemberAdmin      MemberStatus = "administrator" // an administrator
	MemberRegular    MemberStatus = "member"        // an ordinary member
	MemberRestricted MemberStatus = "restricted"    // a member (or not) under restrictions
	MemberLeft       MemberStatus = "left"          // not a member
	MemberBanned     MemberStatus = "kicked"        // banned; in a private chat, the bot blocked
)

// MemberUpdate is what a membership event carries: the member whose status
// changed (User: the bot itself for EventBotBlocked and the bot's other
// membership events) and the statuses before and after, or, for an
// [EventJoinRequest], the request. The zero value is no membership event.
type MemberUpdate struct {
	User User         `json:"user,omitzero"`
	Old  MemberStatus `json:"old,omitempty"`
	New  MemberStatus `json:"new,omitempty"`
	// IsMember reports, for a restricted member (Old or New
	// MemberRestricted), whether they are in the chat, for each side.
	OldIsMember bool `json:"old_is_member,omitempty"`
	NewIsMember bool `json:"new_is_member,omitempty"`
	// InviteLink is the invite link the member joined by (or asked to
	// join by), when the platform tells it.
	InviteLink string `json:"invite_link,omitempty"`
	// ViaJoinRequest reports that the member joined by a join request the
	// bot or an administrator approved.
	ViaJoinRequest bool `json:"via_join_request,omitempty"`
	// UserChatID is the private chat with the user asking to join
	// (EventJoinRequest), in which the bot may write to them before the
	// request is answered.
	UserChatID string `json:"user_chat_id,omitempty"`
}

// JoinRequestAnswerer is implemented by an [Adapter] whose platform has
// join requests ([EventJoinRequest]).
//
// AnswerJoinRequest approves (approve true) or declines the request ev,
// an EventJoinRequest of this adapter, and returns once the platform took
// the answer. An event that is not a join request with a Chat and a From
// is refused with a [Permanent] error wrapping [ErrInvalidMessage];
// other errors follow [Sender]'s kinds (a request answered before is
// refused by Telegram, for good). It is safe for concurrent use.
type JoinRequestAnswerer interface {
	Adapter
	AnswerJoinRequest(ctx context.Context, ev Event, approve bool) error
}
