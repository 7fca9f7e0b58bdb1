package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/plugins/greet"
	"github.com/heraldbot/herald/plugins/tally"
)

// The conversation tests stop the bot while conversations wait and check
// the transcripts: a clean stop (SIGTERM) never wakes a waiting
// conversation with an error — after the restart it goes on exactly where
// it waited — and a kill (SIGKILL) at most repeats the one send in flight.

// convEnv returns the environment of a durable bot on srv, without
// Telegram's budget (the fake has none).
func convEnv(t *testing.T, srv *telegramtest.Server) []string {
	return []string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"TELEGRAM_RATE_LIMIT=off",
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=20s",
		"DATA_DIR=" + t.TempDir(),
	}
}

// TestE2EConversationAcrossStops: /greet asks a name, then an age until it
// is a number; the bot is stopped with SIGTERM and killed with SIGKILL
// while it waits, again and again, and each transcript is the one an
// uninterrupted bot gives (a kill may repeat the send in flight).
func TestE2EConversationAcrossStops(t *testing.T) {
	runParallel(t, 1*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := convEnv(t, srv)
	p := startBot(t, env...)

	const users = 4
	chats := make([]int64, users)
	for i := range users {
		chats[i] = int64(6000 + i)
	}
	say := func(i int, text string) {
		srv.SendUserMessage(chats[i], tgbotapi.User{ID: chats[i], FirstName: fmt.Sprint("U", i)}, text)
	}
	// waitFor waits until chat i was sent text: a count of sends would
	// be met early by a send a kill repeated.
	waitFor := func(i int, text string) {
		t.Helper()
		err := srv.WaitUntil(ctx, func() bool {
			return slices.Contains(texts(srv.Sent(chats[i])), text)
		})
		if err != nil {
			t.Fatalf("chat %d: %v waiting for %q; got %q", chats[i], err, text, texts(srv.Sent(chats[i])))
		}
	}
	// restart stops the bot (SIGTERM or SIGKILL) once what it took is
	// confirmed to Telegram, and starts it again.
	restart := func(kill bool) {
		t.Helper()
		if err := srv.WaitUntil(ctx, func() bool { return srv.Pending() == 0 }); err != nil {
			t.Fatal(err)
		}
		if kill {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-p.done
		} else if code := p.stop(t, time.Minute); code != 0 {
			t.Fatalf("exit code %d after SIGTERM; want 0", code)
		}
		p = startBot(t, env...)
	}

	name := func(i int) string { return fmt.Sprint("Name", i) }
	again := func(i int) string { return greet.NotANumber + " " + greet.AgeQuestion(name(i)) }
	for i := range users {
		say(i, "/greet")
		waitFor(i, greet.Question)
	}
	restart(false) // everyone waits for their name
	for i := range users {
		say(i, name(i))
		waitFor(i, greet.AgeQuestion(name(i)))
	}
	restart(true) // everyone waits for their age
	for i := range users {
		say(i, "soon")
		waitFor(i, again(i))
	}
	restart(false)
	for i := range users {
		say(i, "also soon")
	}
	restart(true) // the answers may be taken or not yet: either way
	for i := range users {
		say(i, strconv.Itoa(20+i))
	}
	for i := range users {
		waitFor(i, greet.Greeting(name(i), 20+i))
	}
	if code := p.stop(t, time.Minute); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	for i := range users {
		want := []string{greet.Question, greet.AgeQuestion(name(i)), again(i), again(i), greet.Greeting(name(i), 20+i)}
		if got := texts(srv.Sent(chats[i])); !withRepeats(got, want, 2) {
			t.Errorf("chat %d got %q; want %q (each kill may repeat one send)", chats[i], got, want)
		}
	}
}

// TestE2ECountersAfterKills: users send /add in their own chats and in a
// group while the bot is killed at random moments and restarted; every
// chat's count and every user's count is exact — each /add counted once —
// and each chat's replies come in order, one of them repeated at most per
// kill.
func TestE2ECountersAfterKills(t *testing.T) {
	runParallel(t, 7*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := convEnv(t, srv)
	p := startBot(t, env...)

	const users, each = 6, 12
	const group = -7000
	total := 0
	for round := range each {
		for u := range users {
			from := tgbotapi.User{ID: int64(7000 + u), FirstName: fmt.Sprint("U", u)}
			srv.SendUserMessage(from.ID, from, "/add")
			total++
			if round%3 == 0 {
				srv.SendUserMessage(group, from, "/add")
				total++
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for kill := range 3 {
		at := total * (20 + 25*kill + rng.IntN(10)) / 100
		if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= at }); err != nil {
			t.Fatalf("before kill %d: %v (%d replies)", kill+1, err, srv.NumSent())
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
		p = startBot(t, env...)
	}
	counted := func(chat int64) []string { return dedup(texts(srv.Sent(chat))) }
	complete := func() bool {
		n := len(counted(group))
		for u := range users {
			n += len(counted(int64(7000 + u)))
		}
		return n >= total
	}
	start := time.Now()
	if err := srv.WaitUntil(ctx, complete); err != nil {
		t.Fatalf("not every /add was answered: %v", err)
	}
	t.Logf("every /add answered %v after the last start", time.Since(start).Round(time.Millisecond))
	// Each chat counts 1, 2, 3, … in order, each /add once.
	check := func(chat int64, want int) {
		t.Helper()
		got := counted(chat)
		if len(got) != want {
			t.Fatalf("chat %d: %d replies (%q); want %d", chat, len(got), got, want)
		}
		for i, r := range got {
			var c, u int
			if _, err := fmt.Sscanf(r, "chat %d, you %d", &c, &u); err != nil || c != i+1 {
				t.Fatalf("chat %d reply %d is %q; want chat %d", chat, i, r, i+1)
			}
		}
	}
	groupAdds := (each + 2) / 3
	check(group, users*groupAdds)
	for u := range users {
		check(int64(7000+u), each)
	}
	// Each user's own count holds each of their /add once: one more /add,
	// once all is done, says so.
	for u := range users {
		from := tgbotapi.User{ID: int64(7000 + u), FirstName: fmt.Sprint("U", u)}
		// The replies so far, counted before the /add goes: counted after,
		// they may include its answer already, on a loaded machine.
		before := len(srv.Sent(from.ID))
		asked := time.Now()
		srv.SendUserMessage(from.ID, from, "/add")
		sent, err := srv.WaitSent(ctx, from.ID, before+1)
		if err != nil {
			t.Fatalf("user %d's last /add, asked %v ago, unanswered: %v (offset confirmed %d)", u, time.Since(asked).Round(time.Millisecond), err, srv.Offset())
		}
		if got, want := sent[len(sent)-1].Text, tally.Reply(each+1, each+groupAdds+1); got != want {
			t.Errorf("user %d's last /add got %q; want %q", u, got, want)
		}
	}
	if code := p.stop(t, time.Minute); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
}

// withRepeats reports whether got is want with at most extra sends
// repeated right after themselves (the one in flight at each kill).
func withRepeats(got, want []string, extra int) bool {
	j := 0
	for i, s := range got {
		switch {
		case j < len(want) && s == want[j]:
			j++
		case i > 0 && s == got[i-1] && extra > 0:
			extra--
		default:
			return false
		}
	}
	return j == len(want)
}

// TestE2EGroupWhileConversationWaits: in a group, while Ann's /greet waits
// for her answer, Bob's /ping is answered within a second and his button
// press within two; Ann's answer then goes on with her conversation.
func TestE2EGroupWhileConversationWaits(t *testing.T) {
	runParallel(t, 1*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startBot(t, convEnv(t, srv)...)
	const group = -8000
	ann := tgbotapi.User{ID: 8001, FirstName: "Ann"}
	bob := tgbotapi.User{ID: 8002, FirstName: "Bob"}
	srv.SendUserMessage(group, ann, "/greet")
	if _, err := srv.WaitSent(ctx, group, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv.SendUserMessage(group, bob, "/ping")
	sent, err := srv.WaitSent(ctx, group, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second || !strings.HasPrefix(sent[1].Text, "pong") {
		t.Fatalf("Bob's /ping got %q after %v while Ann's conversation waits; want pong within 1 s", sent[1].Text, d)
	}
	srv.SendUserMessage(group, bob, "/menu")
	sent, err = srv.WaitSent(ctx, group, 3)
	if err != nil {
		t.Fatal(err)
	}
	menu := sent[2]
	if len(menu.Keyboard) == 0 || len(menu.Keyboard[0]) == 0 || menu.Keyboard[0][0].CallbackData == nil {
		t.Fatalf("/menu sent %+v; want buttons", menu)
	}
	start = time.Now()
	qid := srv.PushCallback(group, bob, menu.MessageID, *menu.Keyboard[0][0].CallbackData)
	if err := srv.WaitUntil(ctx, func() bool {
		for _, a := range srv.CallbackAnswers() {
			if a.CallbackQueryID == qid {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Bob's press answered after %v while Ann's conversation waits; want within 2 s", d)
	}
	srv.SendUserMessage(group, ann, "Ann")
	if err := srv.WaitUntil(ctx, func() bool {
		return slices.Contains(texts(srv.Sent(group)), greet.AgeQuestion("Ann"))
	}); err != nil {
		t.Fatalf("Ann's answer did not go on with her conversation: %q", texts(srv.Sent(group)))
	}
	if code := p.stop(t, time.Minute); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
}
