package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// Sender returns the adapter's [platform.Sender]. Send works while Run is
// running and a connection for the target bot is open; otherwise it fails
// at once with [ErrNotConnected].
//
// Target: Target.ID is a chat ID as described under [ChatID] (the ID of an
// event's chat works as it is) and Target.Type must be
// [platform.ChatPrivate] (send_private_msg) or [platform.ChatGroup]
// (send_group_msg); anything else fails with [ErrInvalidChat].
//
// Message: sent as an array of segments, so no CQ escaping is involved:
//   - ReplyToID → a reply segment first;
//   - Text → one text segment, sent literally whatever ParseMode says
//     (OneBot has no Markdown or HTML); with [Config.CQCodeText] it is
//     parsed as CQ codes instead, which is how to send @mentions (see [At]);
//   - attachments, in order, each followed by its Caption as text; a
//     media file is given to the implementation by its URL, as its bytes
//     (base64://) or by its FileID (the file name of a file an event
//     carried), as [Image] says:
//   - a photo → an image segment; a sticker → an image segment of sub
//     type 1 (subType and sub_type: the sticker kind of go-cqhttp and
//     NapCat; others show an image); an animation → an image segment (QQ
//     plays GIFs), or a video segment when it is a video file by its
//     MIMEType, its name's or URL's extension or its bytes;
//   - a video → a video segment; a voice note or an audio file → a
//     record segment (QQ's one kind of audio message, the voice message);
//   - a video note → a permanent [ErrUnsupported] error: QQ has no round
//     video messages (send the file as a video instead);
//   - a document given by URL → a text line with its name and URL; given
//     as bytes or by FileID → a permanent [ErrUnsupported] error (OneBot
//     v11 has no file segment);
//   - Album changes nothing: the attachments of any message go in one
//     message, shown together;
//   - Buttons are left out: OneBot has no inline buttons, and the text is
//     sent without them;
//   - a reply keyboard (Keyboard with Rows) → a permanent [ErrUnsupported]
//     error: OneBot has none; a Keyboard that only removes one is ignored,
//     and the message sent;
//   - an edit (EditID) → a permanent [ErrUnsupported] error: OneBot v11
//     cannot change a sent message;
//   - a reaction (ReactID) or an invoice → a permanent [ErrUnsupported]
//     error;
//   - a streamed reply ([platform.StreamPart]): its parts before the final
//     one → a permanent [ErrUnsupported] error (a sent message cannot
//     grow; [platform.Stream] then sends no more of them), and the final
//     part is sent as an ordinary message with the whole text;
//   - a method call (Call) → the OneBot action of that name with its
//     parameters, on the connection of the target's bot (any bot's for an
//     empty target); the response's data is the result's Raw, and a
//     "failed" response an [*ActionError] as for sends.
//
// Deletion (DeleteID): the delete_msg action recalls the message with that
// OneBot message ID (the MessageID of a send's result, or an event's) on
// the connection of the target chat's bot; only the bot's ID in Target.ID
// matters, and Target.Type may be empty. The result names the deleted
// message. An ID that is not a number is refused for good, with an error
// wrapping [platform.ErrInvalidMessage]. Any "failed" response is a
// permanent [*ActionError]: the message is gone or too old (QQ lets a
// member recall their own messages for 2 minutes), or the bot may not
// recall it (another member's, without being an admin), and asking again
// would get the same answer. A deletion cannot be made twice, so the
// errors that leave its outcome open (no response in time, the connection
// lost after the action was written) stay retryable even with
// [Config.AvoidDuplicates].
//
// Errors: a message that fails Validate, a bad target or something OneBot
// cannot send is permanent; no connection, a connection lost before the
// action was written and a connection too busy to write are retryable; a
// "failed" response is an [*ActionError], permanent for retcodes
// 1400/1401/1403/1404. An "async" response succeeds without a MessageID.
// If ctx ends first, the error wraps ctx's error.
//
// WARNING, duplicates: implementations have answered "failed" (retcode
// 100, say) for messages they did deliver, and a send with no response in
// time ([ErrActionTimeout], or ctx ending after the action was written)
// or whose connection dropped after its action was written
// ([ErrConnectionLost]) may have been delivered too. These errors, and
// only these, match [platform.ErrMaybeDelivered] (and [ErrMaybeDelivered],
// the same value). They are retryable by default, as OneBot v11 has it,
// so the retry middleware may post the message twice (at least once);
// with [Config.AvoidDuplicates] they are [platform.Permanent] instead and
// go to the dead letters (at most once).
func (a *Adapter) Sender() platform.Sender { return platform.SenderFunc(a.send) }

func (a *Adapter) send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	if err := req.Message.Validate(); err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("onebot: %w", err))
	}
	if req.Message.EditID != "" {
		// OneBot v11 has no action that changes a sent message.
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: editing a message", ErrUnsupported))
	}
	if req.Message.DeleteID != "" {
		return a.deleteMessage(ctx, req)
	}
	switch m := req.Message; {
	case m.ReactID != "":
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: a reaction", ErrUnsupported))
	case m.Invoice != nil:
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: an invoice", ErrUnsupported))
	case m.Call != nil:
		return a.callAction(ctx, req)
	case m.Stream != nil && !m.Stream.Final:
		// OneBot v11 cannot change a sent message: a stream shows as its
		// final part only.
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: a streamed reply's parts before the last", ErrUnsupported))
	case m.Stream != nil:
		req.Message.Stream = nil // the whole reply, sent as a message
	}
	selfID, id, err := ParseChatID(req.Target.ID)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(err)
	}
	var action, idKey string
	switch req.Target.Type {
	case platform.ChatGroup:
		action, idKey = "send_group_msg", "group_id"
	case platform.ChatPrivate:
		action, idKey = "send_private_msg", "user_id"
	default:
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: chat %s has type %q: want %q or %q",
			ErrInvalidChat, req.Target.ID, req.Target.Type, platform.ChatPrivate, platform.ChatGroup))
	}
	msg, err := a.buildMessage(req.Message)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(err)
	}
	if err := ctx.Err(); err != nil {
		return platform.SendResult{}, fmt.Errorf("onebot: %s: %w", action, err)
	}
	c, err := a.pick(selfID)
	if err != nil {
		return platform.SendResult{}, err
	}
	resp, err := c.call(ctx, action, map[string]any{idKey: id, "message": msg, "auto_escape": false})
	if err != nil {
		if a.cfg.AvoidDuplicates && errors.Is(err, ErrMaybeDelivered) {
			return platform.SendResult{}, platform.Permanent(err)
		}
		return platform.SendResult{}, err
	}
	res := platform.SendResult{ChatID: req.Target.ID, SentAt: time.Now()}
	switch resp.Status {
	case "ok":
		var data struct {
			MessageID json.RawMessage `json:"message_id"`
		}
		if len(resp.Data) > 0 && json.Unmarshal(resp.Data, &data) == nil {
			res.MessageID = jsonText(data.MessageID)
		}
		return res, nil
	case "async":
		return res, nil
	}
	aerr := &ActionError{Action: action, RetCode: resp.RetCode, Message: resp.Message}
	if aerr.definite() || a.cfg.AvoidDuplicates {
		return platform.SendResult{}, platform.Permanent(aerr)
	}
	return platform.SendResult{}, aerr
}

// deleteMessage recalls the message req.Message.DeleteID with delete_msg;
// see Sender.
func (a *Adapter) deleteMessage(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	const action = "delete_msg"
	selfID, _, err := ParseChatID(req.Target.ID)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(err)
	}
	id, err := strconv.ParseInt(req.Message.DeleteID, 10, 64)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("onebot: %s: %w: message ID %q is not a number",
			action, platform.ErrInvalidMessage, req.Message.DeleteID))
	}
	if err := ctx.Err(); err != nil {
		return platform.SendResult{}, fmt.Errorf("onebot: %s: %w", action, err)
	}
	c, err := a.pick(selfID)
	if err != nil {
		return platform.SendResult{}, err
	}
	resp, err := c.call(ctx, action, map[string]any{"message_id": id})
	if err != nil {
		return platform.SendResult{}, err
	}
	switch resp.Status {
	case "ok", "async":
		return platform.SendResult{MessageID: req.Message.DeleteID, ChatID: req.Target.ID, SentAt: time.Now()}, nil
	}
	return platform.SendResult{}, platform.Permanent(&ActionError{Action: action, RetCode: resp.RetCode, Message: resp.Message})
}

// buildMessage turns an outbound message into segments; see Sender.
func (a *Adapter) buildMessage(m platform.OutboundMessage) (Message, error) {
	if k := m.Keyboard; k != nil && !k.Remove {
		return nil, fmt.Errorf("%w: reply keyboards", ErrUnsupported)
	}
	var segs Message
	if m.ReplyToID != "" {
		segs = append(segs, Reply(m.ReplyToID))
	}
	if m.Text != "" {
		if a.cfg.CQCodeText {
			segs = append(segs, ParseCQ(m.Text)...)
		} else {
			segs = append(segs, Text(m.Text))
		}
	}
	for i, at := range m.Attachments {
		if at.Kind == platform.AttachDocument {
			if at.URL == "" {
				return nil, fmt.Errorf("%w: attachment %d: a document as bytes or by file ID (no file segment)", ErrUnsupported, i)
			}
			line := documentLine(at)
			if len(segs) > 0 {
				line = "\n" + line
			}
			segs = append(segs, Text(line))
			continue
		}
		seg, err := mediaSegment(i, at)
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
		if at.Caption != "" {
			segs = append(segs, Text(at.Caption))
		}
	}
	if len(m.Buttons) > 0 {
		a.rl.Debug("onebot: buttons left out (OneBot has none)", zap.Int("rows", len(m.Buttons)))
	}
	if len(segs) == 0 || (len(segs) == 1 && segs[0].Type == "reply") {
		return nil, fmt.Errorf("onebot: %w: nothing to send", platform.ErrInvalidMessage)
	}
	return segs, nil
}

// callAction calls the action req.Message.Call names with its parameters
// ([platform.MethodCall]), through the connection of the bot req.Target
// names (any bot's, for a target without one), and returns its data as
// the result's Raw. A failed action is an [*ActionError], permanent where
// [Adapter.Sender] makes a send's permanent.
func (a *Adapter) callAction(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	call := req.Message.Call
	var selfID int64
	if req.Target.ID != "" {
		var err error
		if selfID, _, err = ParseChatID(req.Target.ID); err != nil {
			return platform.SendResult{}, platform.Permanent(err)
		}
	}
	c, err := a.pick(selfID)
	if err != nil {
		return platform.SendResult{}, err
	}
	params := json.RawMessage(call.Params)
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	resp, err := c.call(ctx, call.Method, params)
	if err != nil {
		return platform.SendResult{}, err
	}
	if resp.Status != "ok" && resp.Status != "async" {
		aerr := &ActionError{Action: call.Method, RetCode: resp.RetCode, Message: resp.Message}
		if aerr.definite() || a.cfg.AvoidDuplicates {
			return platform.SendResult{}, platform.Permanent(aerr)
		}
		return platform.SendResult{}, aerr
	}
	res := platform.SendResult{ChatID: req.Target.ID, SentAt: time.Now()}
	if len(resp.Data) > 0 && json.Valid(resp.Data) {
		res.Raw = platform.RawJSON(resp.Data)
	}
	return res, nil
}
