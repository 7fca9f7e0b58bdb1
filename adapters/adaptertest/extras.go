package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// testTopics has a user say something in a topic of a group: it must
// arrive with the topic in Chat.Thread, and a reply to the event's Chat
// must land in that topic, while a send to the group itself does not.
// With Features.NoTopics, a send to a chat with a Thread must still
// arrive.
func testTopics(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	if f.NoGroups {
		t.Skip("Features.NoGroups: topics are in groups")
	}
	group := e.chat(0, platform.ChatGroup)
	if f.NoTopics {
		topic := group
		topic.Thread = "7"
		e.mustSend(topic, platform.TextMessage("to a topic the platform does not have"))
		e.expectOnly(group, "to a topic the platform does not have")
		return
	}
	tp, ok := e.peer.(TopicPeer)
	if !ok {
		t.Skip("the peer is not an adaptertest.TopicPeer; set Features.NoTopics if the platform has no topics")
	}
	ctx, cancel := e.ctx(patience)
	defer cancel()
	topic, err := tp.Topic(ctx, group, 1)
	if err != nil || topic.Thread == "" || topic.ID != group.ID {
		t.Fatalf("TopicPeer.Topic = %+v, %v; want the group with a Thread", topic, err)
	}
	user := e.user(0)
	if err := tp.SayInTopic(ctx, topic, user, "in the topic"); err != nil {
		t.Fatalf("TopicPeer.SayInTopic: %v", err)
	}
	evs, err := e.rec.wait(ctx, 1)
	if err != nil {
		t.Fatalf("the topic's message: %v", err)
	}
	ev := evs[0]
	switch {
	case ev.Kind != platform.EventMessage || ev.Text != "in the topic":
		t.Fatalf("arrived as %s %q; want the message", ev.Kind, ev.Text)
	case ev.Chat.ID != group.ID || ev.Chat.Thread != topic.Thread:
		t.Fatalf("arrived in chat %q thread %q; want %q thread %q", ev.Chat.ID, ev.Chat.Thread, group.ID, topic.Thread)
	case ev.ReplyToID != "":
		t.Errorf("a message in a topic replies to %q: the topic's root taken for a reply", ev.ReplyToID)
	}
	e.mustSend(ev.Chat, platform.OutboundMessage{Text: "reply in the topic", ReplyToID: ev.MessageID})
	e.mustSend(group, platform.TextMessage("to the group"))
	threads, err := tp.Threads(ctx, group, 2)
	if err != nil || !slices.Equal(threads, []string{topic.Thread, ""}) {
		t.Fatalf("the bot's messages went to threads %q (%v); want %q, then none", threads, err, []string{topic.Thread, ""})
	}
}

// testReactions sets a reaction on a user's message, removes it, and has
// the user react to the bot's: the peer sees the bot's, and the user's
// arrives as an EventReaction. With Features.NoReactions the reaction is
// refused as unsupported.
func testReactions(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	if f.NoReactions {
		ctx, cancel := e.ctx(patience)
		r := e.send(ctx, chat, platform.ReactMessage("1", "👍"), patience)
		cancel()
		if !platform.IsPermanent(r.err) || !errors.Is(r.err, platform.ErrUnsupported) {
			t.Errorf("a reaction on a platform without reactions = %v; want a permanent error wrapping platform.ErrUnsupported", r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the reaction"))
		e.expectOnly(chat, "after the reaction")
		return
	}
	rp, ok := e.peer.(ReactionPeer)
	if !ok {
		t.Skip("the peer is not an adaptertest.ReactionPeer; set Features.NoReactions if the platform has no reactions")
	}
	ctx, cancel := e.ctx(patience)
	defer cancel()
	user := e.user(0)
	e.say(ctx, chat, user, "react to me")
	evs, err := e.rec.wait(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	said := evs[0]
	res := e.mustSend(said.Chat, platform.ReactMessage(said.MessageID, "👍"))
	if res.MessageID != said.MessageID {
		t.Errorf("the reaction's result names message %q; want %q", res.MessageID, said.MessageID)
	}
	e.mustSend(said.Chat, platform.ReactMessage(said.MessageID))
	got, err := rp.BotReactions(ctx, chat, 2)
	if err != nil || len(got) != 2 || got[0].MessageID != said.MessageID || !slices.Equal(got[0].Emoji, []string{"👍"}) || len(got[1].Emoji) != 0 {
		t.Fatalf("the peer saw the reactions %+v (%v); want 👍 on %q, then none", got, err, said.MessageID)
	}
	mine := e.mustSend(chat, platform.TextMessage("react to this"))
	e.received(chat, 1)
	if err := rp.React(ctx, chat, user, mine.MessageID, "🔥"); err != nil {
		t.Fatalf("ReactionPeer.React: %v", err)
	}
	evs, err = e.rec.wait(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[1]
	if ev.Kind != platform.EventReaction || ev.MessageID != mine.MessageID || ev.From.ID != user.ID ||
		!slices.Contains(ev.Reactions.New, platform.Reaction{Emoji: "🔥"}) {
		t.Fatalf("the user's reaction arrived as %+v; want an EventReaction with 🔥 on %q", ev, mine.MessageID)
	}
}

// testStream streams a reply of 30 chunks: it must end as exactly one
// message holding the whole text. The adapter's StreamInterval paces it
// when it is a StreamingAdapter (and Features.NoStream is not set);
// otherwise only the final part is sent.
func testStream(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		interval := -time.Duration(1)
		if sa, ok := e.a.(platform.StreamingAdapter); ok && !f.NoStream {
			interval = sa.StreamInterval(chat)
			if interval <= 0 || interval > 10*time.Second {
				t.Fatalf("StreamInterval(%s) = %v; want a positive interval of at most 10 s", chat.ID, interval)
			}
		}
		ctx, cancel := e.ctx(patience)
		s, err := platform.NewStream(ctx, platform.StreamConfig{
			ID: "stream-" + chat.ID, Interval: interval,
			Send: func(ctx context.Context, msg platform.OutboundMessage) (platform.SendResult, error) {
				r, err := e.trySend(ctx, chat, msg, patience)
				if err != nil {
					return platform.SendResult{}, err
				}
				return r.res, r.err
			},
		})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		var whole strings.Builder
		for i := range 30 {
			chunk := fmt.Sprintf("word%02d ", i)
			whole.WriteString(chunk)
			s.WriteString(chunk)
			time.Sleep(20 * time.Millisecond)
		}
		res, err := s.Close(ctx)
		cancel()
		if err != nil {
			t.Fatalf("chat %s: the stream's Close = %v", chat.ID, err)
		}
		if !f.NoMessageID && res.MessageID == "" {
			t.Errorf("chat %s: the stream's result names no message", chat.ID)
		}
		msgs := e.received(chat, 1)
		want := strings.TrimSpace(whole.String())
		if sp, ok := e.peer.(ShowingPeer); ok {
			// The final part is an edit the peer may show a little later.
			sctx, scancel := e.ctx(patience)
			for {
				msgs, err = sp.Shown(sctx, chat)
				if err == nil && len(msgs) == 1 && strings.TrimSpace(msgs[0].Text) == want || sctx.Err() != nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			scancel()
		}
		if len(msgs) != 1 || strings.TrimSpace(msgs[0].Text) != want {
			t.Fatalf("chat %s shows %s (%v); want one message with the whole text %q", chat.ID, abridge(texts(msgs)), err, want)
		}
	}
}
