package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/natstest"
)

// The disk-full tests fill the journal's store while the bot works — the
// NATS server's store up to its max_file_store, or the embedded store's
// real file system — and give the room back after a while: an outage like
// any other. Nothing accepted is lost, nothing is sent twice but the one
// send in flight per chat, each chat's replies keep their order, no update
// is confirmed to Telegram while the journal refuses, every chat is
// answered soon after the room is back, with no restart, and the journal
// logs the outage once each way.

const (
	// diskOutage is how long the store stays full: the scenario's
	// length, not a wait for something to happen.
	diskOutage = 8 * time.Second
	// journalBackWithin bounds how long after the room is back the
	// journal records again: a probe's heartbeat, and for the embedded
	// store a heartbeat on the disk's room, its server's start and the
	// connection's return (about 3 s in all), with room for a loaded
	// machine.
	journalBackWithin = 8 * time.Second
	// answeredWithin bounds how long after the room is back every chat
	// has its next reply: the Telegram adapter asks for a refused update
	// again after up to 16 s (its backoff), then the journal takes it.
	answeredWithin = 16*time.Second + journalBackWithin
)

// The bot's log messages about its journal.
const (
	journalRefuses = "cluster: the journal's store refuses writes; events are refused and sends fail until it takes them again"
	// embeddedOff is the embedded server's, as it turns JetStream off
	// for a full disk.
	embeddedOff  = "embedded: the store could not write (its disk is full?); JetStream is off until there is room"
	journalTakes = "cluster: the journal's store takes writes again"
)

// diskRun is the load of a disk-full test: a first wave of chats whose
// handlings are done (their replies journaled, being sent under
// Telegram's limits) when the store fills, and a second wave sent while
// it is full.
type diskRun struct {
	srv          *telegramtest.Server
	first, again scaleRun
	secondIDs    []int // the update IDs of the second wave
	// met are the log lines that say the bot met the full store, any of
	// them: journalRefuses unless set.
	met []string
}

func newDiskRun(srv *telegramtest.Server, base int64) *diskRun {
	return &diskRun{srv: srv,
		first: scaleRun{srv: srv, chats: 30, count: 8, first: base},
		again: scaleRun{srv: srv, chats: 20, count: 3, first: base + 1000}}
}

// sendSecond sends the second wave, keeping its update IDs.
func (r *diskRun) sendSecond() {
	for c := range r.again.chats {
		id := r.again.first + int64(c)
		r.secondIDs = append(r.secondIDs, r.srv.SendUserMessage(id, tgbotapi.User{ID: id, FirstName: fmt.Sprint("User", c)},
			fmt.Sprintf("/count %d", r.again.count)))
	}
}

// confirmed returns how many updates of the second wave Telegram counts
// as confirmed now.
func (r *diskRun) confirmed() int {
	off := r.srv.Offset()
	n := 0
	for _, id := range r.secondIDs {
		if id < off {
			n++
		}
	}
	return n
}

// scenario runs the disk-full scenario on the bot that bot keeps, whose
// metrics are at metrics: fill fills the store and returns the function
// that gives the room back. It checks every reply and logs what it
// measured.
func (r *diskRun) scenario(ctx context.Context, t *testing.T, bot *supervisor, metrics string, fill func() (restore func())) {
	t.Helper()
	r.first.send(ctx, 0)
	// The first wave is handled: every chat has its first reply and no
	// event is left to handle; its replies wait in OUT.
	if err := r.srv.WaitUntil(ctx, func() bool {
		for c := range r.first.chats {
			if len(r.srv.Sent(r.first.first+int64(c))) == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("the first wave was not handled: %v", err)
	}
	for journalPending(metrics, "events") != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the first wave's events were never all handled")
		case <-time.After(20 * time.Millisecond):
		}
	}
	restore := fill()
	full := time.Now()
	sentAtFill := r.srv.NumSent()
	// The second wave comes once the bot met the full store (r.met: the
	// journal, as the first wave's sends, draining, write their progress;
	// or the embedded server, which turns JetStream off): a handling
	// under way when the store fills is the engine's to take up again (it
	// must not count a handling whose sends the journal refused as done),
	// and no event of the second wave can be recorded.
	met := r.met
	if len(met) == 0 {
		met = []string{journalRefuses}
	}
	if err := (&lineWaiter{bot.current().stderr}).waitAny(ctx, met...); err != nil {
		t.Fatalf("the bot never met the full store: %v", err)
	}
	r.sendSecond()
	// The store stays full for the outage's length; the bot polls the
	// second wave meanwhile, and must not confirm it.
	hold := time.NewTimer(diskOutage) // the scenario's length
	<-hold.C
	confirmedWhileFull := r.confirmed()
	restore()
	back := time.Now()
	t.Logf("store full for %v; %d replies sent when it filled, %d when the room came back; %d of %d updates confirmed while full",
		back.Sub(full).Round(time.Millisecond), sentAtFill, r.srv.NumSent(), confirmedWhileFull, len(r.secondIDs))

	// Every chat gets its next reply within answeredWithin of the room's
	// return, and everything arrives.
	next := map[int64]int{}
	for _, run := range []scaleRun{r.first, r.again} {
		for c := range run.chats {
			id := run.first + int64(c)
			next[id] = len(r.srv.Sent(id))
		}
	}
	var slowest time.Duration
	for _, run := range []scaleRun{r.first, r.again} {
		run.wait(ctx, t)
		for c := range run.chats {
			id := run.first + int64(c)
			sent := r.srv.Sent(id)
			if n := next[id]; n < len(sent) && n < run.count {
				slowest = max(slowest, sent[n].At.Sub(back))
			}
		}
	}
	p := bot.current()
	var journalBack time.Duration = -1
	if ts := logTimes(&node{p: p}, journalTakes); len(ts) > 0 {
		journalBack = ts[len(ts)-1].Sub(back)
	}
	t.Logf("the journal recorded again %v after the room's return; every chat had its next reply within %v",
		journalBack.Round(time.Millisecond), slowest.Round(time.Millisecond))
	if code := bot.stop(t, 90*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	if n := bot.restarts(); n > 0 {
		// nats-server deadlocked (see embedded.Server.Stuck): the bot
		// exited and was started again, as after a crash. Everything is
		// answered, in order; the replies made while the store refused
		// their records of being done are made again after the start.
		dups := r.first.checkAfterRestarts(t, 1+n) + r.again.checkAfterRestarts(t, 1+n)
		t.Logf("the embedded server was stuck: the bot exited and was started again %d time(s); lost 0, sent twice %d", n, dups)
		if confirmedWhileFull != 0 {
			t.Errorf("%d updates were confirmed to Telegram while the journal refused", confirmedWhileFull)
		}
		return
	}
	dups := r.first.check(t, 1) + r.again.check(t, 1)
	logs := p.stderr.String()
	journalDown, journalUp := strings.Count(logs, journalRefuses), strings.Count(logs, journalTakes)
	engineDown, engineBack := strings.Count(logs, "engine: the journal refuses"), strings.Count(logs, "engine: the journal is back")
	serverOff, serverOn := strings.Count(logs, embeddedOff), strings.Count(logs, "JetStream is back")
	t.Logf("lost 0, sent twice %d; log lines: journal %d down / %d back, engine %d / %d, embedded server %d off / %d on",
		dups, journalDown, journalUp, engineDown, engineBack, serverOff, serverOn)
	if confirmedWhileFull != 0 {
		t.Errorf("%d updates were confirmed to Telegram while the journal refused", confirmedWhileFull)
	}
	if journalBack < 0 || journalBack > journalBackWithin {
		t.Errorf("the journal recorded again %v after the room came back; want within %v", journalBack, journalBackWithin)
	}
	if slowest > answeredWithin {
		t.Errorf("a chat waited %v after the room came back; want within %v", slowest, answeredWithin)
	}
	if journalDown != 1 || journalUp != 1 {
		t.Errorf("the journal logged the outage %d times and its end %d times; want once each", journalDown, journalUp)
	}
}

// journalPending reads herald_journal_pending{kind=kind} from the bot's
// metrics, or -1 while it cannot be read.
func journalPending(addr, kind string) int {
	n := &node{metrics: addr}
	resp := n.sample(`herald_journal_pending{kind="` + kind + `"}`)
	if resp < 0 {
		return -1
	}
	return int(resp)
}

// metricsText returns the bot's metrics at addr, or "" while they cannot
// be read.
func metricsText(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return ""
	}
	return string(b)
}

// sample reads one sample, its name and labels exactly as given, from the
// node's metrics, or -1 while it cannot be read.
func (n *node) sample(series string) float64 {
	v := -1.0
	for _, line := range strings.Split(metricsText(n.metrics), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(rest, 64); err == nil {
				v = f
			}
		}
	}
	return v
}

// TestE2EDiskFullNATS: the bot on a NATS server whose store fills up to
// its max_file_store (another stream takes the room) while the bot sends
// 240 replies, and empties after diskOutage.
func TestE2EDiskFullNATS(t *testing.T) {
	runParallel(t, 21*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url := startLimitedNATS(t, 64<<20)
	n := startNode(t, "n1", scaleEnv(srv, url))
	waitSpread(ctx, t, []*node{n})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	newDiskRun(srv, 30000).scenario(ctx, t, &supervisor{p: n.p}, n.metrics, func() func() { return fillStream(ctx, t, nc) })
}

// startLimitedNATS starts a NATS server with JetStream on a loopback port,
// its store in a directory of the test's bounded to maxStore bytes
// (max_file_store), and returns its URL.
func startLimitedNATS(t *testing.T, maxStore int64) string {
	t.Helper()
	return natstest.Start(t, natstest.Options{MaxStore: maxStore}).URL()
}

// fillStream fills the server's store to its limit with a stream of its
// own, and returns the function that deletes the stream.
func fillStream(ctx context.Context, t *testing.T, nc *nats.Conn) func() {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILLER", Subjects: []string{"filler"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 512<<10)
	for {
		_, err := js.Publish(ctx, "filler", chunk)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == 10023 { // insufficient resources: the store is full
			break
		}
		if err != nil {
			t.Fatalf("filling the store: %v", err)
		}
	}
	return func() {
		if err := js.DeleteStream(ctx, "FILLER"); err != nil {
			t.Errorf("emptying the store: %v", err)
		}
	}
}
