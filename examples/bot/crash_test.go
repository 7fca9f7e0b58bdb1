package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/testport"
	"github.com/heraldbot/herald/plugins/greet"
)

// The crash tests kill the bot with SIGKILL while it works, as the OOM
// killer or a power cut at the process level would, and restart it on the
// same DATA_DIR against the same fake Bot API: no reply may be lost, each
// chat's replies keep their order, and a chat may get a reply twice at most
// once per kill (the one in flight when it died: Telegram has no
// idempotency key).

const (
	crashChats   = 30
	crashCount   = 8
	crashSecret  = "e2e-webhook-secret"
	crashToken   = "123456:e2e-secret-token"
	crashTimeout = 4 * time.Minute
)

func TestE2ECrashPolling(t *testing.T) {
	runParallel(t, 15*time.Second)
	crashTest(t, false)
}

func TestE2ECrashWebhook(t *testing.T) {
	runParallel(t, 15*time.Second)
	crashTest(t, true)
}

func crashTest(t *testing.T, webhook bool) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), crashTimeout)
	defer cancel()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"DATA_DIR=" + t.TempDir(),
	}
	var push *webhookPusher
	if webhook {
		addr := testport.Addr(t)
		env = append(env,
			"TELEGRAM_WEBHOOK_URL=https://bot.example/hook",
			"TELEGRAM_WEBHOOK_LISTEN="+addr,
			"TELEGRAM_WEBHOOK_SECRET="+crashSecret)
		push = newWebhookPusher(ctx, "http://"+addr+"/")
		defer push.stop()
	}
	p := startBot(t, env...)

	for c := range crashChats {
		id := int64(3000 + c)
		from := tgbotapi.User{ID: id, FirstName: fmt.Sprint("User", c)}
		text := fmt.Sprintf("/count %d", crashCount)
		if webhook {
			push.message(id, from, text)
		} else {
			srv.SendUserMessage(id, from, text)
		}
	}

	total := crashChats * crashCount
	for kill, at := range []int{total * 15 / 100, total * 45 / 100, total * 75 / 100} {
		if err := srv.WaitUntil(ctx, func() bool { return srv.NumSent() >= at }); err != nil {
			t.Fatalf("before kill %d: %v (%d replies sent)", kill+1, err, srv.NumSent())
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
		t.Logf("kill %d after %d replies", kill+1, srv.NumSent())
		p = startBot(t, env...)
	}

	complete := func() bool {
		if srv.NumSent() < crashChats*crashCount { // cheap, before the copies
			return false
		}
		for c := range crashChats {
			if got := dedup(texts(srv.Sent(int64(3000 + c)))); len(got) < crashCount {
				return false
			}
		}
		return true
	}
	if err := srv.WaitUntil(ctx, complete); err != nil {
		for c := range crashChats {
			t.Logf("chat %d: %q", 3000+c, texts(srv.Sent(int64(3000+c))))
		}
		t.Fatalf("not every reply arrived: %v", err)
	}
	if code := p.stop(t, 90*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}

	want := make([]string, crashCount)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	dups := 0
	for c := range crashChats {
		id := int64(3000 + c)
		got := texts(srv.Sent(id))
		if d := dedup(got); !slices.Equal(d, want) {
			t.Fatalf("chat %d got %q; want %q in order (repeats of one reply allowed)", id, got, want)
		}
		if extra := len(got) - crashCount; extra > 3 {
			t.Fatalf("chat %d got %d replies twice over 3 kills: %q", id, extra, got)
		} else {
			dups += extra
		}
	}
	t.Logf("%d replies, %d sent twice, over 3 kills", total, dups)
}

// dedup drops immediate repeats: the reply in flight at a kill is sent
// again first, right after its first copy.
func dedup(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// TestE2ECrashConversation: a conversation survives a kill while it waits
// for the answer; after the restart the answer is taken, once, and the
// question is not asked again.
func TestE2ECrashConversation(t *testing.T) {
	runParallel(t, 1*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metrics := testport.Addr(t)
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"DATA_DIR=" + t.TempDir(),
		"METRICS_ADDR=" + metrics,
	}
	p := startBot(t, env...)
	const chat = 4000
	ann := tgbotapi.User{ID: chat, FirstName: "Ann"}
	srv.SendUserMessage(chat, ann, "/greet")
	if _, err := srv.WaitSent(ctx, chat, 1); err != nil {
		t.Fatal(err)
	}
	// The question went out; kill the bot while it waits for the answer:
	// once the update is confirmed (the restart is not simply handed
	// /greet again by Telegram) and the question's send is over (a send
	// still in flight at a kill is made again).
	if err := srv.WaitUntil(ctx, func() bool { return srv.Pending() == 0 }); err != nil {
		t.Fatal(err)
	}
	for pendingSends(t, metrics) != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the question's send never ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done

	srv.SendUserMessage(chat, ann, "Ann") // answered while the bot was down
	p = startBot(t, env...)
	sent, err := srv.WaitSent(ctx, chat, 2)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // nothing more should come
	if code := p.stop(t, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	if got := texts(srv.Sent(chat)); !slices.Equal(got, []string{greet.Question, greet.AgeQuestion("Ann")}) {
		t.Fatalf("chat got %q (first wait: %q); want the question once and the next one", got, texts(sent))
	}
}

// pendingSends reads herald_journal_pending{kind="sends"} from the bot's
// metrics, or -1 while they cannot be read.
func pendingSends(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `herald_journal_pending{kind="sends"} `); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// webhookPusher posts updates to the bot's webhook as Telegram does with
// max_connections 1: one at a time, in order, each again until the bot
// answers 200 — across the bot's deaths and restarts. Given several URLs
// (the processes of one bot behind a load balancer), it posts each update
// to the next in turn, and a failed post again to the one after.
type webhookPusher struct {
	urls   []string
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan []byte
	done   chan struct{}

	mu     sync.Mutex
	nextID int
	msgIDs map[int64]int
}

func newWebhookPusher(ctx context.Context, urls ...string) *webhookPusher {
	ctx, cancel := context.WithCancel(ctx)
	w := &webhookPusher{urls: urls, ctx: ctx, cancel: cancel, queue: make(chan []byte, 1024), done: make(chan struct{}),
		nextID: 500000, msgIDs: map[int64]int{}}
	go w.run()
	return w
}

// message queues a private message from from in chat.
func (w *webhookPusher) message(chat int64, from tgbotapi.User, text string) {
	w.mu.Lock()
	w.nextID++
	w.msgIDs[chat]++
	u := map[string]any{
		"update_id": w.nextID,
		"message": map[string]any{
			"message_id": w.msgIDs[chat],
			"from":       map[string]any{"id": from.ID, "is_bot": false, "first_name": from.FirstName},
			"chat":       map[string]any{"id": chat, "type": "private", "first_name": from.FirstName},
			"date":       time.Now().Unix(),
			"text":       text,
		},
	}
	w.mu.Unlock()
	b, _ := json.Marshal(u)
	w.queue <- b
}

func (w *webhookPusher) run() {
	defer close(w.done)
	client := &http.Client{Timeout: 10 * time.Second}
	next := 0
	for {
		var body []byte
		select {
		case body = <-w.queue:
		case <-w.ctx.Done():
			return
		}
		for {
			url := w.urls[next%len(w.urls)]
			next++
			req, _ := http.NewRequestWithContext(w.ctx, http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", crashSecret)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-time.After(100 * time.Millisecond): // the bot is down, or refused it: again
			case <-w.ctx.Done():
				return
			}
		}
	}
}

func (w *webhookPusher) stop() {
	w.cancel()
	<-w.done
}

// TestE2ECrashNoteAndRemind: a note and a pending reminder survive a
// SIGKILL of the bot in durable mode: after the restart the note is
// listed, and the reminder comes once, when due.
func TestE2ECrashNoteAndRemind(t *testing.T) {
	runParallel(t, 10*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"DATA_DIR=" + t.TempDir(),
	}
	p := startBot(t, env...)
	const chat = 4100
	// The reminder is due 8 s after it is asked, after the restart unless
	// the machine is slow enough to start the bot later than that: it then
	// comes at the start, once all the same.
	ann := tgbotapi.User{ID: chat, FirstName: "Ann"}
	srv.SendUserMessage(chat, ann, "/note add buy milk")
	if _, err := srv.WaitSent(ctx, chat, 1); err != nil {
		t.Fatal(err)
	}
	srv.SendUserMessage(chat, ann, "/remind 8s tea")
	sent, err := srv.WaitSent(ctx, chat, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[1].Text, "tea") {
		t.Fatalf("the reminder was answered %q", sent[1].Text)
	}
	asked := time.Now()
	if err := srv.WaitUntil(ctx, func() bool { return srv.Pending() == 0 }); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done

	p = startBot(t, env...)
	srv.SendUserMessage(chat, ann, "/note list")
	count := func(prefix string) int {
		n := 0
		for _, s := range texts(srv.Sent(chat)) {
			if strings.HasPrefix(s, prefix) {
				n++
			}
		}
		return n
	}
	if err := srv.WaitUntil(ctx, func() bool { return count("Your notes:") == 1 && count("⏰") == 1 }); err != nil {
		t.Fatalf("the note list and the reminder: %v (%q)", err, texts(srv.Sent(chat)))
	}
	time.Sleep(2 * time.Second) // a second reminder would come now
	if code := p.stop(t, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	got := texts(srv.Sent(chat))
	var list, reminders int
	for _, s := range got {
		if strings.HasPrefix(s, "Your notes:") && strings.Contains(s, "1. buy milk") {
			list++
		}
		if strings.HasPrefix(s, "⏰") && strings.Contains(s, "tea") {
			reminders++
		}
	}
	// The kill may cut the handling of /remind short (its event is then
	// handled again: its answer may come twice, its reminder never).
	if list != 1 || reminders != 1 || len(got) > 5 {
		t.Fatalf("chat got %q; want the note listed and the reminder once", got)
	}
	for _, m := range srv.Sent(chat) {
		if strings.HasPrefix(m.Text, "⏰") && m.At.Sub(asked) < 7*time.Second {
			t.Fatalf("the reminder came %v after it was asked; want 8 s", m.At.Sub(asked))
		}
	}
}
