package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
//   - a photo attachment → an image segment (URL, or the bytes as
//     base64://), followed by its Caption as text;
//   - a document attachment given by URL → a text line with its name and
//     URL; given as bytes → a permanent [ErrUnsupported] error (OneBot v11
//     has no file segment);
//   - Buttons are left out: OneBot has no inline buttons, and the text is
//     sent without them;
//   - an edit (EditID) → a permanent [ErrUnsupported] error: OneBot v11
//     cannot change a sent message.
//
// Errors: a message that fails Validate, a bad target or an unsupported
// attachment is permanent; no connection, a connection lost before the
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

// buildMessage turns an outbound message into segments; see Sender.
func (a *Adapter) buildMessage(m platform.OutboundMessage) (Message, error) {
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
		switch at.Kind {
		case platform.AttachPhoto:
			if at.URL != "" {
				segs = append(segs, ImageURL(at.URL))
			} else {
				segs = append(segs, ImageBytes(at.Data))
			}
			if at.Caption != "" {
				segs = append(segs, Text(at.Caption))
			}
		case platform.AttachDocument:
			if at.URL == "" {
				return nil, fmt.Errorf("%w: attachment %d: a document as bytes (no file segment)", ErrUnsupported, i)
			}
			name := at.FileName
			if name == "" {
				name = at.Caption
			}
			line := at.URL
			if name != "" {
				line = name + ": " + at.URL
			}
			if len(segs) > 0 {
				line = "\n" + line
			}
			segs = append(segs, Text(line))
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
