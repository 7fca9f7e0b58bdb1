package journal

import "github.com/heraldbot/herald/platform"

// InteractionOp names what an [Interaction] does.
type InteractionOp string

// The interactions.
const (
	OpAnswerCallback InteractionOp = "answer_callback" // platform.CallbackAnswerer
	OpChatAction     InteractionOp = "chat_action"     // platform.ChatActor
	OpAnswerInline   InteractionOp = "answer_inline"   // platform.InlineAnswerer
	OpDownload       InteractionOp = "download"        // platform.Downloader
	// OpAnswerPreCheckout and OpAnswerJoinRequest answer a payment's last
	// check and a join request.
	OpAnswerPreCheckout InteractionOp = "answer_pre_checkout" // platform.PreCheckoutAnswerer
	OpAnswerJoinRequest InteractionOp = "answer_join_request" // platform.JoinRequestAnswerer
)

// Interaction is a call on a platform account other than a send: an
// answer to a button press, an inline query, a payment's last check or a
// join request, a chat action, a download. A member makes those of the accounts it does not lead through
// their gateways (Journal.Interact), so that only the
// gateway talks to the platform (and reaches what only it holds, such as
// the browser chat's tabs and files). It is a plain value that marshals
// to JSON; only the fields of its Op are set.
type Interaction struct {
	Op InteractionOp `json:"op"`
	// Event is the press, query or request answered.
	Event platform.Event `json:"event,omitzero"`
	// Answer answers a press; Inline an inline query; PreCheckout a
	// payment's last check; Approve a join request.
	Answer      platform.CallbackAnswer    `json:"answer,omitzero"`
	Inline      platform.InlineAnswer      `json:"inline,omitzero"`
	PreCheckout platform.PreCheckoutAnswer `json:"pre_checkout,omitzero"`
	Approve     bool                       `json:"approve,omitempty"`
	// Chat and Action are a chat action's.
	Chat   platform.Chat       `json:"chat,omitzero"`
	Action platform.ChatAction `json:"action,omitempty"`
	// Attachment and MaxBytes are a download's.
	Attachment platform.Attachment `json:"attachment,omitzero"`
	MaxBytes   int64               `json:"max_bytes,omitempty"`
}
