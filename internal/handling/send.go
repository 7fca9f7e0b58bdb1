package handling

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Reply queues msg for the event's chat (see core/context's Context.Reply).
func (c *Ctx) Reply(msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	r := c.run
	if r.chatKey == "" {
		return future.Resolved(platform.SendResult{}, ErrNoChat)
	}
	f, _ := c.send(r.chatKey, r.event.Chat, msg, false)
	return f
}

// Send queues msg for another chat of the event's platform.
func (c *Ctx) Send(chat platform.Chat, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	if chat.ID == "" {
		return future.Resolved(platform.SendResult{}, ErrNoChat)
	}
	f, _ := c.send(ChatKey(c.run.event.Platform, chat.ID), chat, msg, false)
	return f
}

// Edit queues an edit of the bot's message messageID in the event's chat.
func (c *Ctx) Edit(messageID string, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	if messageID == "" {
		return future.Resolved(platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: Edit without a message ID", platform.ErrInvalidMessage)))
	}
	msg.EditID = messageID
	return c.Reply(msg)
}

// Delete queues the deletion of the message messageID from the event's
// chat.
func (c *Ctx) Delete(messageID string) *future.Future[platform.SendResult] {
	if messageID == "" {
		return future.Resolved(platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: Delete without a message ID", platform.ErrInvalidMessage)))
	}
	return c.Reply(platform.DeleteMessage(messageID))
}

// send queues msg, a send of c's handler, for chat (under key), as an
// effect of c's handling, and returns its Future and its place in the log
// (-1 for none): a replay gets the Future of the send recorded there. A
// question (Prompt's) whose send fails resumes the handling's wait for
// its answer.
func (c *Ctx) send(key string, chat platform.Chat, msg platform.OutboundMessage, question bool) (*future.Future[platform.SendResult], int) {
	r := c.run
	if err := msg.Validate(); err != nil {
		// Refused at once, never a dead letter; no effect, so every run
		// refuses it the same way.
		return future.Resolved(platform.SendResult{}, platform.Permanent(err)), -1
	}
	req := platform.SendRequest{Platform: r.event.Platform, Target: chat, Message: msg}
	s := requestSum(&req)
	fx, pos, err := c.take(fxSend, s, msg.Text)
	switch {
	case err != nil:
		return future.Resolved(platform.SendResult{}, err), pos
	case fx != nil:
		return fx.send(), pos
	}
	r.sends.Add(1)
	id := c.effectID(pos)
	h := r.h
	hook := c.scope().errs > 0 && id != ""
	if hook {
		// The error hook's sends are not in the log: one a replay repeats
		// is known by its id.
		if f := h.hookSend(id); f != nil {
			return f, pos
		}
	}
	// A send of a run on an event taken up again may have been made
	// before: it is recorded on its own, never covered by the event. Nor
	// is a send of the handler middleware an event offered to a waiting
	// conversation passes through: a conversation that takes the event
	// removes its record with its own, whatever that send's outcome.
	js := journal.Send{ID: id, Request: req, Repeat: r.recovered, Settled: h.settled,
		Covered: !r.recovered && id != "" && !r.main.middleware} // the run's: its error hook's too
	if sc := c.scope(); sc.errs == 0 && !sc.middleware {
		// The handlers' sends are checked against what a run before a
		// restart sent at their place; the error hook's are not: what it
		// says depends on the error.
		js.Sum, js.What = s, brief(msg.Text)
	}
	waits := r.env.Waits()
	// Backpressure: a chat that asks faster than its sends go (a user
	// flooding a chat that takes one a second) slows its own handling
	// rather than losing replies to a full queue.
	r.env.RoomFor(r.ctx, key, id, h.Key())
	f, err := r.env.QueueSend(key, js, func(res platform.SendResult, err error) {
		if question && err != nil && !IsOutage(err) {
			waits.questionFailed(h, pos, err)
		}
		h.sent(pos, res, err)
	})
	if errors.Is(err, ErrDiverged) {
		// Another send was made under this id before a restart: the run
		// diverged from the one that made it, and the handling ends.
		h.mu.Lock()
		if r.diverged == nil {
			r.diverged = fmt.Errorf("%w (effect %d)", err, pos+1)
		}
		h.mu.Unlock()
		return f, pos
	}
	if IsOutage(err) {
		// Not recorded, so not made: the run again after the outage
		// makes it.
		r.outage(pos, err)
		return f, pos
	}
	if hook {
		h.keepHookSend(id, f)
	}
	r.record(pos, effect{kind: fxSend, sum: s, what: msg.Text, v: f})
	return f, pos
}

// requestSum hashes what a send sends, for a replay to tell the same send
// from another: its chat and message (attachments by name, reference and
// size, not their bytes).
func requestSum(r *platform.SendRequest) uint64 {
	h := fnv.New64a()
	w := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	m := &r.Message
	w(r.Platform)
	w(r.Target.ID)
	w(m.Text)
	w(string(m.ParseMode))
	w(m.ReplyToID)
	w(m.EditID)
	w(m.DeleteID)
	for _, a := range m.Attachments {
		w(string(a.Kind))
		w(a.FileName)
		w(a.Caption)
		w(a.FileID)
		w(a.URL)
		w(strconv.Itoa(len(a.Data)))
	}
	for _, row := range m.Buttons {
		for _, b := range row {
			w(b.Text)
			w(b.Data)
			w(b.URL)
		}
	}
	return h.Sum64()
}
