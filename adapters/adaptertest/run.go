package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/heraldbot/herald/platform"
)

// testName checks that Name is a non-empty identifier that does not change
// when Run starts and stops, and that Sender works before Run: an invalid
// message is refused as permanent (the target is the zero Chat, since the
// peer's chats exist only once Run runs, and it is invalid too).
func testName(t *testing.T, h Harness, f Features) {
	e := newEnv(t, h, f)
	if e.name == "" {
		t.Fatal("Name() is empty")
	}
	if strings.IndexFunc(e.name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		t.Errorf("Name() = %q has white space or unprintable characters; want a short identifier", e.name)
	}
	if got := e.a.Name(); got != e.name {
		t.Errorf("Name() = %q, then %q; want it stable", e.name, got)
	}
	if e.a.Sender() == nil {
		t.Fatal("Sender() = nil before Run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if r := e.send(ctx, platform.Chat{}, platform.OutboundMessage{}, promptly); !platform.IsPermanent(r.err) {
		t.Errorf("Send of an empty message before Run = %v; want a permanent error", r.err)
	}
	e.start()
	if got := e.a.Name(); got != e.name {
		t.Errorf("Name() = %q while Run runs; was %q before", got, e.name)
	}
	if e.a.Sender() == nil {
		t.Error("Sender() = nil while Run runs")
	}
	e.stop()
	if got := e.a.Name(); got != e.name {
		t.Errorf("Name() = %q after Run returned; was %q before", got, e.name)
	}
}

// stream is the messages one user says in one chat.
type stream struct {
	chat platform.Chat
	user platform.User
}

func (s stream) String() string { return "chat " + s.chat.ID + " user " + s.user.ID }

// testEvents has users say messages in private and group chats and checks
// that Run delivers each once, in order for each chat and user, with the
// event's fields set.
func testEvents(t *testing.T, h Harness, f Features) {
	const perStream = 10
	e := setup(t, h, f)
	u0, u1 := e.user(0), e.user(1)
	if u0.ID == "" || u0.ID == u1.ID {
		t.Fatalf("Peer.User(0) = %+v and User(1) = %+v; want two different, non-empty IDs", u0, u1)
	}
	p0, p1 := e.chat(0, platform.ChatPrivate), e.chat(1, platform.ChatPrivate)
	streams := []stream{{p0, u0}, {p1, u1}}
	if !f.NoGroups {
		g := e.chat(2, platform.ChatGroup)
		streams = append(streams, stream{g, u0}, stream{g, u1})
	}
	ids := map[string]bool{}
	for _, s := range streams[:len(streams)-1] { // the group appears twice
		if ids[s.chat.ID] {
			t.Fatalf("Peer.Chat gave the ID %q to two chats", s.chat.ID)
		}
		ids[s.chat.ID] = true
	}

	// Interleave the streams, so that a mix-up between chats shows.
	type said struct{ stream, seq int }
	want := map[string]said{}
	start := time.Now()
	ctx, cancel := e.ctx(patience)
	defer cancel()
	for i := range perStream {
		for si, s := range streams {
			text := fmt.Sprintf("message %d of stream %d", i, si)
			if i%3 == 1 { // characters that markup, CQ codes or JSON could eat
				text += ` <b>&amp;</b> [CQ:face,id=1] *_~` + "`" + ` "q" \ é 😀`
			}
			want[text] = said{si, i}
			e.say(ctx, s.chat, s.user, text)
		}
	}
	total := perStream * len(streams)
	if evs, err := e.rec.wait(ctx, total); err != nil {
		t.Fatalf("Run delivered %s: %v", eventTexts(evs), err)
	}
	e.stop() // so that duplicates delivered late are counted too
	evs := e.rec.snapshot()
	if len(evs) != total {
		t.Errorf("Run delivered %d events; want %d, one per message: %s", len(evs), total, eventTexts(evs))
	}

	next := make([]int, len(streams)) // next sequence number of each stream
	eventIDs := map[string]int{}
	messageIDs := map[string]string{} // chat ID + message ID → text
	for i, ev := range evs {
		w, ok := want[ev.Text]
		if !ok {
			t.Errorf("event %d has text %q, which nobody said: %+v", i, ev.Text, ev)
			continue
		}
		s := streams[w.stream]
		if w.seq != next[w.stream] {
			t.Errorf("event %d is message %d of %v; want message %d (order kept per chat and user, each message once)",
				i, w.seq, s, next[w.stream])
		}
		next[w.stream] = w.seq + 1
		checkEvent(t, i, ev, e.name, s)
		// Platforms stamp messages in whole seconds; a minute either way
		// still catches a time read in the wrong unit or time zone.
		if ev.Time.Before(start.Add(-time.Minute)) || ev.Time.After(time.Now().Add(time.Minute)) {
			t.Errorf("event %d (%q) has Time %v; want about now, %v", i, ev.Text, ev.Time, start)
		}
		if ev.ID != "" {
			if j, dup := eventIDs[ev.ID]; dup {
				t.Errorf("events %d and %d have the same ID %q", j, i, ev.ID)
			}
			eventIDs[ev.ID] = i
		}
		if ev.MessageID == "" {
			if !f.NoMessageID {
				t.Errorf("event %d (%q) has no MessageID", i, ev.Text)
			}
		} else {
			key := ev.Chat.ID + "\x00" + ev.MessageID
			if prev, dup := messageIDs[key]; dup {
				t.Errorf("messages %q and %q in chat %s have the same MessageID %q", prev, ev.Text, ev.Chat.ID, ev.MessageID)
			}
			messageIDs[key] = ev.Text
		}
	}
}

// checkEvent checks the fields of event i, a message of s.
func checkEvent(t *testing.T, i int, ev platform.Event, name string, s stream) {
	t.Helper()
	var bad []string
	if ev.Platform != name {
		bad = append(bad, fmt.Sprintf("Platform %q, want %q", ev.Platform, name))
	}
	if ev.Kind != platform.EventMessage {
		bad = append(bad, fmt.Sprintf("Kind %q, want %q", ev.Kind, platform.EventMessage))
	}
	if ev.Chat.ID != s.chat.ID || ev.Chat.Type != s.chat.Type {
		bad = append(bad, fmt.Sprintf("Chat %+v, want ID %q and Type %q", ev.Chat, s.chat.ID, s.chat.Type))
	}
	if s.chat.Title != "" && ev.Chat.Title != s.chat.Title {
		bad = append(bad, fmt.Sprintf("Chat.Title %q, want %q", ev.Chat.Title, s.chat.Title))
	}
	if ev.From.ID != s.user.ID {
		bad = append(bad, fmt.Sprintf("From.ID %q, want %q", ev.From.ID, s.user.ID))
	}
	if s.user.Name != "" && ev.From.Name != s.user.Name {
		bad = append(bad, fmt.Sprintf("From.Name %q, want %q", ev.From.Name, s.user.Name))
	}
	if ev.ID == "" {
		bad = append(bad, "no ID")
	}
	if ev.Time.IsZero() {
		bad = append(bad, "no Time")
	}
	if len(bad) > 0 {
		t.Errorf("event %d (%q): %s", i, ev.Text, strings.Join(bad, "; "))
	}
}

// testStop cancels Run while a user keeps talking: Run must return nil
// promptly, handle must not be called after that (the recorder checks it
// when the subtest ends), and the events delivered must be in order.
func testStop(t *testing.T, h Harness, f Features) {
	const most = 200
	e := setup(t, h, f)
	chat, user := e.chat(0, platform.ChatPrivate), e.user(0)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	e.say(ctx, chat, user, "talk 0")
	if evs, err := e.rec.wait(ctx, 1); err != nil {
		t.Fatalf("Run delivered %s: %v", eventTexts(evs), err)
	}

	// The user goes on talking, from another goroutine, until Run has
	// returned (Say may fail from then on) or it said the most.
	sayCtx, stopSaying := context.WithCancel(context.Background())
	defer stopSaying()
	var talker sync.WaitGroup
	talker.Go(func() {
		for i := 1; i < most && sayCtx.Err() == nil; i++ {
			if e.peer.Say(sayCtx, chat, user, fmt.Sprintf("talk %d", i)) != nil {
				return
			}
		}
	})
	// Stop Run while it is delivering.
	if evs, err := e.rec.wait(ctx, 3); err != nil {
		stopSaying()
		talker.Wait()
		t.Fatalf("Run delivered %s: %v", eventTexts(evs), err)
	}
	e.stop()
	stopSaying()
	talker.Wait()
	// A message after Run returned must not reach handle (the recorder
	// checks it when the subtest ends); Say itself may fail now.
	late, cancelLate := context.WithTimeout(context.Background(), promptly)
	_ = e.peer.Say(late, chat, user, "after Run returned")
	cancelLate()

	evs := e.rec.snapshot()
	for i, ev := range evs {
		var n int
		if _, err := fmt.Sscanf(ev.Text, "talk %d", &n); err != nil || n != i {
			t.Fatalf("Run delivered %s; want \"talk 0\", \"talk 1\", … in order, each once (later ones may be dropped)", eventTexts(evs))
		}
	}
}

// eventTexts describes events by their texts, for failure messages.
func eventTexts(evs []platform.Event) string {
	texts := make([]string, len(evs))
	for i, ev := range evs {
		texts[i] = ev.Text
	}
	return fmt.Sprintf("%d events %s", len(evs), abridge(texts))
}

// abridge quotes texts, leaving out the middle of a long list.
func abridge(texts []string) string {
	const head, tail = 20, 5
	if len(texts) <= head+tail {
		return fmt.Sprintf("%q", texts)
	}
	return fmt.Sprintf("%q … (%d more) … %q", texts[:head], len(texts)-head-tail, texts[len(texts)-tail:])
}

// testStopTaking checks that once Run's Inbound.Receiving closes no event
// reaches Handle, while the Sender keeps delivering until Run's context
// ends (an adapter whose sends need Run's connections keeps them open;
// others may return, with nil).
func testStopTaking(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat, user := e.chat(0, platform.ChatPrivate), e.user(0)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	e.say(ctx, chat, user, "before the stop")
	if evs, err := e.rec.wait(ctx, 1); err != nil {
		t.Fatalf("Run delivered %s: %v", eventTexts(evs), err)
	}

	returnsPromptly(t, "closing Receiving", e.stopTaking)
	_ = e.peer.Say(context.WithoutCancel(ctx), chat, user, "after the stop") // the adapter may refuse it
	e.mustSend(chat, platform.TextMessage("a pending reply"))
	e.expectOnly(chat, "a pending reply")
	select {
	case <-e.run.done:
		if e.run.err != nil {
			t.Fatalf("Run returned %v after Receiving closed; want nil", e.run.err)
		}
	default:
	}
	e.stop()
	if evs := e.rec.snapshot(); len(evs) != 1 {
		t.Errorf("Run delivered %s; want only the one said before the stop", eventTexts(evs))
	}
}

// returnsPromptly calls fn and fails the test if it does not return within
// promptly.
func returnsPromptly(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s did not return within %v; it must not block", what, promptly)
	}
}

// testRunCanceled calls Run with a context that has already ended: it must
// return nil promptly.
func testRunCanceled(t *testing.T, h Harness, f Features) {
	e := newEnv(t, h, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		err := e.a.Run(ctx, platform.Inbound{Handle: e.rec.handle})
		e.rec.runReturned()
		done <- err
	}()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case err := <-done:
		if took := time.Since(start); took > promptly {
			t.Errorf("Run with an ended context returned after %v; want within %v", took.Round(time.Millisecond), promptly)
		}
		if err != nil {
			t.Errorf("Run with an ended context = %v; want nil", err)
		}
	case <-timer.C:
		t.Fatalf("Run with an ended context did not return within %v", patience)
	}
	e.rec.check(t)
}
