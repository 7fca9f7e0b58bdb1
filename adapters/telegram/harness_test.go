package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// testToken is the token of every test adapter; no log line or error may
// contain it, or its secret part.
const (
	testToken  = "123456:TEST-token_s3cr3t"
	tokenPart  = "token_s3cr3t"
	waitPeriod = 10 * time.Second // bound on waits that should end at once
	// stopBound bounds, in real time, how long Run may take to return
	// once its context ends. Run promises a second, which
	// TestRunStopsWithinASecond checks exactly, in fake time; on a loaded
	// machine a real second can pass before Run's goroutine even runs, so
	// the tests on real sockets allow more, still far less than the 30 s
	// long poll (or the 7 s one of TestPollAllowedUpdatesParam) that Run
	// must not wait out.
	stopBound = 5 * time.Second
)

var ann = tgbotapi.User{ID: 7, FirstName: "Ann", UserName: "ann"}

type harness struct {
	srv  *telegramtest.Server
	a    *Adapter
	logs *observer.ObservedLogs
}

// newHarness starts a fake server and makes an adapter for it; mutate may
// change the config. At cleanup it checks that no log line holds the
// token.
func newHarness(t *testing.T, mutate func(*Config), opts ...telegramtest.Option) *harness {
	t.Helper()
	srv := telegramtest.NewServer(opts...)
	t.Cleanup(srv.Close)
	core, logs := observer.New(zap.DebugLevel)
	cfg := Config{Token: testToken, APIEndpoint: srv.Endpoint(), Logger: zap.New(core)}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		assertNoTokenInLogs(t, logs)
		assertNoNullParams(t, srv)
	})
	return &harness{srv: srv, a: a, logs: logs}
}

// assertNoNullParams fails the test if any request the server got had a
// parameter sent as "null", as v5.5.1's configs send empty entities.
func assertNoNullParams(t *testing.T, srv *telegramtest.Server) {
	t.Helper()
	for _, c := range srv.Calls("") {
		for k, vs := range c.Params {
			for _, v := range vs {
				if v == "null" {
					t.Errorf("%s sent %s=null", c.Method, k)
				}
			}
		}
	}
}

func assertNoTokenInLogs(t *testing.T, logs *observer.ObservedLogs) {
	t.Helper()
	for _, e := range logs.All() {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, tokenPart) {
			t.Errorf("log line contains the token: %s", line)
		}
	}
}

func assertNoToken(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), tokenPart) {
		t.Errorf("error contains the token: %v", err)
	}
}

// logged reports whether a log line's message contains msg.
func logged(logs *observer.ObservedLogs, msg string) int {
	return logs.FilterMessageSnippet(msg).Len()
}

// loggedLimited returns how many lines whose message contains msg were
// written, and how many occurrences they account for: each line, plus the
// occurrences left out before it (its "suppressed" field). Occurrences
// left out since the last line are not counted: ratelog reports them with
// the next line.
func loggedLimited(logs *observer.ObservedLogs, msg string) (lines, occurrences int) {
	for _, e := range logs.FilterMessageSnippet(msg).All() {
		lines++
		occurrences++
		if n, ok := e.ContextMap()["suppressed"].(int64); ok {
			occurrences += int(n)
		}
	}
	return lines, occurrences
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitPeriod)
	t.Cleanup(cancel)
	return ctx
}

// running is an adapter's Run in a goroutine.
type running struct {
	events chan platform.Event
	cancel context.CancelFunc
	done   chan error
}

func (h *harness) run(t *testing.T) *running {
	t.Helper()
	return runAdapter(t, h.a)
}

func runAdapter(t *testing.T, a *Adapter) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{events: make(chan platform.Event, 1000), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			select {
			case r.events <- ev:
			default:
				t.Errorf("event buffer full; dropped %+v", ev)
			}
			return nil
		}})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(waitPeriod):
			t.Error("Run did not return at cleanup")
		}
	})
	return r
}

// stop cancels Run and returns its error; Run must return within
// stopBound.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t, stopBound)
}

// wait returns Run's error, failing if it takes longer than d.
func (r *running) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for cleanup
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %v", d)
		return nil
	}
}

// next returns the next n events.
func (r *running) next(t *testing.T, n int) []platform.Event {
	t.Helper()
	var evs []platform.Event
	timeout := time.After(waitPeriod)
	for len(evs) < n {
		select {
		case ev := <-r.events:
			evs = append(evs, ev)
		case err := <-r.done:
			r.done <- err
			// Run may have returned after handing over the events still
			// buffered: select picks among ready cases at random, so take
			// them before calling it a failure.
			for len(evs) < n {
				select {
				case ev := <-r.events:
					evs = append(evs, ev)
					continue
				default:
				}
				t.Fatalf("Run returned %v after %d of %d events", err, len(evs), n)
			}
		case <-timeout:
			t.Fatalf("got %d of %d events", len(evs), n)
		}
	}
	return evs
}

// none checks that no event is waiting.
func (r *running) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-r.events:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func telegramFault400(method, desc string) telegramtest.Fault {
	return telegramtest.Fault{Method: method, Status: http.StatusBadRequest, Description: desc}
}

// succeedsSoon calls fn until it returns nil, with growing pauses, and
// fails the test if it still fails after waitPeriod.
func succeedsSoon(t *testing.T, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(waitPeriod)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", waitPeriod, err)
		}
		time.Sleep(pause)
	}
}

// verifyNoLeaks fails the test if goroutines other than those opts
// ignore are still running once goroutines that are ending have had time
// to end (see package leakcheck): after a server closes, the HTTP client's
// connection readers see it only when they next run.
func verifyNoLeaks(t *testing.T, opts ...goleak.Option) {
	t.Helper()
	if err := leakcheck.Find(opts...); err != nil {
		t.Errorf("goroutines left after %v: %v", leakcheck.Patience, err)
	}
}

func testLogger() *zap.Logger { return zap.NewNop() }

func updateFor(id int) *update {
	return decoded(&tgbotapi.Update{UpdateID: id, Message: &tgbotapi.Message{MessageID: id, Chat: &tgbotapi.Chat{ID: 1, Type: "private"}, Text: "x"}})
}

// decoded returns u as the adapter decodes it from its JSON. It panics if
// u does not round-trip, which a tgbotapi.Update always does.
func decoded(u *tgbotapi.Update) *update {
	raw, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	d, err := decodeUpdate(raw)
	if err != nil {
		panic(err)
	}
	return d
}

// testRunState returns a runState delivering to handle, with its own
// ledger, as a Run of the bot "herald_bot" would make it.
func testRunState(handle func(platform.Event) error) *runState {
	return &runState{name: DefaultName, handle: handle, taking: func() bool { return true }, username: "herald_bot", presses: newPressTracker(), log: testLogger(),
		limited: ratelog.New(testLogger(), 0), taken: newLedger(), stats: &counters{}}
}

// activate makes a Run of a seem active, delivering to handle, without
// polling or serving: for tests of WebhookHandler alone. It is undone at
// the end of the test.
func activate(t *testing.T, a *Adapter, handle func(platform.Event) error) *runState {
	rs := testRunState(handle)
	rs.log, rs.limited, rs.taken, rs.stats, rs.presses, rs.name = a.log, a.limited, a.taken, &a.stats, a.presses, a.Name()
	a.run.Store(rs)
	t.Cleanup(func() { a.run.Store(nil) })
	return rs
}
