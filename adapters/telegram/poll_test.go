package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

func TestPollDeliversOnceInOrder(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)

	// More than one getUpdates batch (100) across several chats.
	var ids []int
	for i := range 150 {
		ids = append(ids, h.srv.SendUserMessage(int64(1+i%7), ann, fmt.Sprint("m", i)))
	}
	r := h.run(t)
	for i, ev := range r.next(t, 150) {
		if ev.ID != strconv.Itoa(ids[i]) || ev.Text != fmt.Sprint("m", i) || ev.Kind != platform.EventMessage ||
			ev.Chat.ID != strconv.Itoa(1+i%7) || ev.From.ID != "7" || ev.Platform != "telegram" {
			t.Fatalf("event %d = %+v", i, ev)
		}
		if raw, ok := ev.Raw.(json.RawMessage); !ok || !strings.Contains(string(raw), `"update_id":`+ev.ID) {
			t.Fatalf("Raw = %T %s; want the update's JSON", ev.Raw, ev.Raw)
		}
	}
	late := h.srv.SendUserMessage(3, ann, "late")
	if ev := r.next(t, 1)[0]; ev.ID != strconv.Itoa(late) {
		t.Fatalf("late event = %+v", ev)
	}
	// The next long poll confirms everything and waits: nothing more comes.
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	r.none(t)
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}

	// A second Run continues after the last update handled, and a third
	// after the second: what a Run handled is not delivered again. (The
	// confirming call a Run makes on its way out when it stops between
	// polls has half a second of real time, too little to count on when
	// the machine is loaded; TestPollConfirmsOnTheWayOut checks it in fake
	// time. Here the stop comes once the next poll has confirmed.)
	last := h.srv.SendUserMessage(4, ann, "before restart")
	r2 := h.run(t)
	if ev := r2.next(t, 1)[0]; ev.ID != strconv.Itoa(last) {
		t.Fatalf("after restart: %+v", ev)
	}
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Offset() == last+1 && h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	if h.srv.Offset() != last+1 || h.srv.Pending() != 0 {
		t.Fatalf("Offset %d, Pending %d after stop; want %d, 0 (last batch confirmed)", h.srv.Offset(), h.srv.Pending(), last+1)
	}
	// The long poll of the Run stopped may still count as waiting until the
	// server sees its connection go: wait for one of the third Run's.
	polls := h.srv.Requests("getUpdates")
	r3 := h.run(t)
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Requests("getUpdates") > polls && h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	r3.none(t)
	if err := r3.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Requests("deleteWebhook"); got != 3 {
		t.Fatalf("deleteWebhook calls = %d; want one per Run", got)
	}
}

func TestPollCommandsAndCallbacks(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	h.srv.SendUserMessage(-100, ann, "/echo@herald_test_bot hi there")
	h.srv.SendUserMessage(-100, ann, "/echo@other_bot not for us")
	cb := h.srv.PushCallback(-100, ann, 12, "vote:yes")
	h.srv.SendUserMessage(-100, ann, "after")
	r := h.run(t)
	evs := r.next(t, 3)
	if evs[0].Text != "/echo hi there" || evs[0].Chat.Type != platform.ChatGroup {
		t.Fatalf("command = %+v", evs[0])
	}
	if evs[1].Kind != platform.EventCallback || evs[1].Text != "vote:yes" || evs[1].MessageID != "12" || evs[1].Chat.ID != "-100" {
		t.Fatalf("callback = %+v", evs[1])
	}
	if evs[2].Text != "after" {
		t.Fatalf("third event = %+v", evs[2])
	}
	// The press waits for its answer: the handler's.
	if evs[1].QueryID != cb || len(h.srv.CallbackAnswers()) != 0 {
		t.Fatalf("press %+v, answers %+v; want the query %s, unanswered", evs[1], h.srv.CallbackAnswers(), cb)
	}
	if err := h.a.AnswerCallback(ctx, evs[1], platform.CallbackAnswer{Text: "Voted", Alert: true}); err != nil {
		t.Fatal(err)
	}
	if a := h.srv.CallbackAnswers(); len(a) != 1 || a[0].CallbackQueryID != cb || a[0].Text != "Voted" || !a[0].ShowAlert {
		t.Fatalf("answered %+v; want %s with the text, as an alert", a, cb)
	}
	if err := h.a.AnswerCallback(ctx, evs[1], platform.CallbackAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) || !platform.IsPermanent(err) {
		t.Fatalf("second answer = %v; want a permanent ErrAlreadyAnswered", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestRunStopsMidLongPoll(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv := telegramtest.NewServer()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint()}) // 30 s polls
	if err != nil {
		t.Fatal(err)
	}
	r := runAdapter(t, a)
	if err := srv.WaitUntil(waitCtx(t), func() bool { return srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	t.Logf("Run returned %v after cancel", time.Since(start))
	srv.Close()
	verifyNoLeaks(t, before)
}

func TestRunUnauthorized(t *testing.T) {
	t.Run("getMe", func(t *testing.T) {
		h := newHarness(t, nil, telegramtest.WithToken("999:right"))
		err := h.run(t).wait(t, waitPeriod)
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("Run = %v; want ErrUnauthorized", err)
		}
		assertNoToken(t, err)
	})
	t.Run("getUpdates", func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: http.StatusUnauthorized})
		if err := h.run(t).wait(t, waitPeriod); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("Run = %v; want ErrUnauthorized", err)
		}
	})
}

func TestRunConflict(t *testing.T) {
	t.Parallel()
	t.Run("injected", func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: http.StatusConflict})
		err := h.run(t).wait(t, waitPeriod)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("Run = %v; want ErrConflict", err)
		}
		assertNoToken(t, err)
	})
	t.Run("once", func(t *testing.T) {
		// A single 409 is what a paused process that polls once more as
		// it resumes causes: the run goes on.
		h := newHarness(t, nil)
		h.srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: http.StatusConflict, Times: 1})
		r := h.run(t)
		h.srv.SendUserMessage(1, ann, "after the conflict")
		if ev := r.next(t, 1)[0]; ev.Text != "after the conflict" {
			t.Fatalf("event %+v", ev)
		}
		if err := r.stop(t); err != nil {
			t.Fatalf("Run = %v after one 409; want nil", err)
		}
	})
	t.Run("second poller", func(t *testing.T) {
		h := newHarness(t, nil)
		first := h.run(t)
		if err := h.srv.WaitUntil(waitCtx(t), func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
			t.Fatal(err)
		}
		other, err := New(Config{Token: testToken, APIEndpoint: h.srv.Endpoint()})
		if err != nil {
			t.Fatal(err)
		}
		second := runAdapter(t, other)
		if err := first.wait(t, waitPeriod); !errors.Is(err, ErrConflict) {
			t.Fatalf("first poller's Run = %v; want ErrConflict", err)
		}
		if err := second.stop(t); err != nil {
			t.Fatalf("second poller's Run = %v", err)
		}
	})
	t.Run("already running", func(t *testing.T) {
		h := newHarness(t, nil)
		r := h.run(t)
		if err := h.srv.WaitUntil(waitCtx(t), func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
			t.Fatal(err)
		}
		if err := h.a.Run(t.Context(), platform.Inbound{Handle: func(platform.Event) error { return nil }}); !errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("second Run = %v; want ErrAlreadyRunning", err)
		}
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPollDeletesWebhook(t *testing.T) {
	h := newHarness(t, nil)
	resp, err := http.PostForm(fmt.Sprintf(h.srv.Endpoint(), testToken, "setWebhook"), url.Values{"url": {"https://old.example/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.srv.SendUserMessage(1, ann, "queued while the webhook was set")
	r := h.run(t)
	if ev := r.next(t, 1)[0]; ev.Text != "queued while the webhook was set" {
		t.Fatalf("event = %+v", ev)
	}
	if h.srv.Webhook().URL != "" {
		t.Fatal("webhook still set")
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestPollSkipsMalformedUpdates(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	first := h.srv.SendUserMessage(1, ann, "first")
	bad := h.srv.PushRawUpdate([]byte(`{"update_id":` + strconv.Itoa(first+1) + `,"message":"not an object"}`))
	h.srv.PushRawUpdate([]byte(`{"message":{"message_id":1,"text":"no update_id"}}`))
	last := h.srv.SendUserMessage(1, ann, "last")
	// One answer that is a proxy's HTML page: retried after a backoff.
	h.srv.Inject(telegramtest.Fault{Method: "getUpdates", HTML: true, Times: 1})

	r := h.run(t)
	evs := r.next(t, 2)
	if evs[0].ID != strconv.Itoa(first) || evs[1].ID != strconv.Itoa(last) {
		t.Fatalf("events %+v; want updates %d and %d", evs, first, last)
	}
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	r.none(t)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	// Both skipped and counted; logged once, as such lines are at most
	// once every 10 s.
	skipped := h.logs.FilterMessageSnippet("skipping a malformed update").All()
	if len(skipped) != 1 || skipped[0].ContextMap()["update_id"] != int64(bad) || h.a.Stats().Malformed != 2 {
		t.Fatalf("skip log lines = %+v, stats %+v; want one line naming update %d, 2 malformed", skipped, h.a.Stats(), bad)
	}
	failed := h.logs.FilterMessageSnippet("getUpdates failed").All()
	if len(failed) != 1 {
		t.Fatalf("getUpdates failure log lines = %d; want 1", len(failed))
	}
	if msg := fmt.Sprint(failed[0].ContextMap()["error"]); !containsAll(msg, "HTTP 502", "not Bot API JSON") {
		t.Fatalf("logged error %q", msg)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestPollAllowedUpdatesParam(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		want    []string // values of allowed_updates sent
	}{
		{"nil means every kind of Bot API 10.2", nil, []string{`["message","edited_message","channel_post","edited_channel_post",` +
			`"business_connection","business_message","edited_business_message","deleted_business_messages","guest_message",` +
			`"message_reaction","message_reaction_count","inline_query","chosen_inline_result","callback_query","shipping_query",` +
			`"pre_checkout_query","purchased_paid_media","poll","poll_answer","my_chat_member","chat_member","chat_join_request",` +
			`"chat_boost","removed_chat_boost","managed_bot","subscription"]`}},
		{"empty list is sent", []string{}, []string{"[]"}},
		{"list", []string{"message", "callback_query"}, []string{`["message","callback_query"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.AllowedUpdates = tc.allowed; c.PollTimeout = 7 * time.Second })
			var mu sync.Mutex
			var got url.Values
			h.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
				if r.Method == "getUpdates" {
					mu.Lock()
					got = r.Params
					mu.Unlock()
				}
				return nil
			})
			r := h.run(t)
			if err := h.srv.WaitUntil(waitCtx(t), func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
				t.Fatal(err)
			}
			if err := r.stop(t); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(got["allowed_updates"], tc.want) || got.Get("timeout") != "7" || got.Get("limit") != "100" {
				t.Fatalf("getUpdates params %v", got)
			}
		})
	}
}

// After a fatal getUpdates answer Run does not confirm what it handled:
// the confirming call would itself be a getUpdates, and after a 409 it
// would end the long poll of the process that won.
func TestPollNoConfirmAfterFatalError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   error
		polls  int // the getUpdates calls: the first, then the refused ones
	}{
		{http.StatusConflict, ErrConflict, 1 + conflictTolerance},
		{http.StatusUnauthorized, ErrUnauthorized, 2},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			h := newHarness(t, nil)
			var (
				mu    sync.Mutex
				polls int
			)
			// The first poll gets the update; the second, which would
			// confirm it, is refused.
			h.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
				if r.Method != "getUpdates" {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				if polls++; polls >= 2 {
					return &telegramtest.Fault{Status: tc.status}
				}
				return nil
			})
			h.srv.SendUserMessage(1, ann, "handled, not confirmed")
			r := h.run(t)
			r.next(t, 1)
			if err := r.wait(t, waitPeriod); !errors.Is(err, tc.want) {
				t.Fatalf("Run = %v; want %v", err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if polls != tc.polls || h.srv.Offset() != 0 {
				t.Fatalf("%d getUpdates calls, server offset %d; want %d and 0 (no confirming call after the %d)", polls, h.srv.Offset(), tc.polls, tc.status)
			}
		})
	}
}

// After Telegram starts update IDs afresh below the adapter's offset, the
// new updates are handled, once, and confirmed; a restart does not see
// them again.
func TestPollAfterUpdateIDsReset(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	h.srv.ResetUpdateIDs(727334707)
	h.srv.SendUserMessage(1, ann, "before")
	r := h.run(t)
	if ev := r.next(t, 1)[0]; ev.Text != "before" {
		t.Fatalf("event %+v", ev)
	}
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Pending() == 0 && h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}

	h.srv.ResetUpdateIDs(117314199) // a week later
	var want []string
	for i := range 3 {
		want = append(want, fmt.Sprint("after a week ", i))
		h.srv.SendUserMessage(int64(1+i), ann, want[i])
	}
	var got []string
	for _, ev := range r.next(t, 3) {
		got = append(got, ev.Text)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("handled %q; want %q", got, want)
	}
	// Confirmed by the next poll, which then waits: no tight loop.
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Pending() == 0 && h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	polls := h.srv.Requests("getUpdates")
	r.none(t)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	// Each call that brings updates (at most one per update) is followed
	// by at most one that confirms them and brings none; then the waiting
	// one. However the updates were batched: no tight loop.
	if polls > 2*4+1 {
		t.Errorf("%d getUpdates calls for 4 updates; want at most 9", polls)
	}

	r2 := h.run(t)
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	r2.none(t)
	late := h.srv.SendUserMessage(9, ann, "later")
	if ev := r2.next(t, 1)[0]; ev.ID != strconv.Itoa(late) {
		t.Fatalf("after restart: %+v", ev)
	}
}
