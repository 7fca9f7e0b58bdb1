package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// sendAPI is an in-memory Bot API for send tests in fake time: it answers
// the n-th send request (counting from 0) with answer(n), or accepts it
// when answer returns a zero reply, and records every request.
type sendAPI struct {
	answer func(n int, text string) reply

	mu    sync.Mutex
	calls []sendCall
}

type sendCall struct {
	chat, text string
	at         time.Time
	accepted   bool
}

func (api *sendAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	params, _ := url.ParseQuery(string(body))
	api.mu.Lock()
	n := len(api.calls)
	api.mu.Unlock()
	var r reply
	if api.answer != nil {
		r = api.answer(n, params.Get("text"))
	}
	if r.status == 0 {
		r = ok(fmt.Sprintf(`{"message_id":%d,"date":1,"chat":{"id":1,"type":"private"}}`, n+1))
	}
	api.mu.Lock()
	api.calls = append(api.calls, sendCall{params.Get("chat_id"), params.Get("text"), time.Now(), r.status == http.StatusOK})
	api.mu.Unlock()
	return &http.Response{
		StatusCode: r.status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(r.body)),
		Request:    req,
	}, nil
}

// sent returns the requests made, accepted or not.
func (api *sendAPI) sent() []sendCall {
	api.mu.Lock()
	defer api.mu.Unlock()
	return slices.Clone(api.calls)
}

// delivered returns the texts the API accepted, in order.
func (api *sendAPI) delivered() []string {
	var out []string
	for _, c := range api.sent() {
		if c.accepted {
			out = append(out, c.text)
		}
	}
	return out
}

func newSendAdapter(t *testing.T, api *sendAPI) (*Adapter, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: api}, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	return a, logs
}

// lines returns a text of n parts: each part is 40 lines of 100 units.
func lines(n int) string {
	var b strings.Builder
	for i := range n * 40 {
		fmt.Fprintf(&b, "%03d %s\n", i, strings.Repeat("x", 95))
	}
	return b.String()
}

func gaps(calls []sendCall) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(calls); i++ {
		out = append(out, calls[i].at.Sub(calls[i-1].at))
	}
	return out
}

const (
	tooMany = `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`
	failed  = `{"ok":false,"error_code":500,"description":"Internal Server Error"}`
	blocked = `{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}`
)

func flood(secs int) reply { return reply{429, fmt.Sprintf(tooMany, secs, secs)} }

// Parts after the first are paced: a second apart in a private chat,
// three in a group, unless the deadline leaves too little room, when the
// pauses shrink so every part still goes out before it.
func TestSendPacesParts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target platform.Chat
		want   time.Duration
	}{
		{"private", platform.Chat{ID: "42", Type: platform.ChatPrivate}, time.Second},
		{"group", platform.Chat{ID: "-42", Type: platform.ChatGroup}, 3 * time.Second},
		{"group by ID", platform.Chat{ID: "-1001234"}, 3 * time.Second},
		{"channel by username", platform.Chat{ID: "@news"}, 3 * time.Second},
		{"private by ID", platform.Chat{ID: "42"}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &sendAPI{}
				a, _ := newSendAdapter(t, api)
				text := lines(4)
				_, err := a.Send(t.Context(), platform.SendRequest{Target: tc.target, Message: platform.TextMessage(text)})
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(api.delivered(), ""); got != text {
					t.Fatalf("delivered %d parts that do not add up to the text", len(api.delivered()))
				}
				want := []time.Duration{tc.want, tc.want, tc.want}
				if g := gaps(api.sent()); !slices.Equal(g, want) {
					t.Fatalf("parts %v apart; want %v", g, want)
				}
			})
		})
	}

	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := &sendAPI{}
			a, _ := newSendAdapter(t, api)
			// 6 parts to a group would take 15 s of pauses; 5 s are left.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := a.Send(ctx, sendTo("-42", platform.TextMessage(lines(6)))); err != nil {
				t.Fatal(err)
			}
			calls := api.sent()
			if len(calls) != 6 {
				t.Fatalf("%d requests; want 6", len(calls))
			}
			for i, g := range gaps(calls) {
				if g <= 0 || g >= groupPause {
					t.Errorf("pause %d = %v; want shortened but not dropped", i+1, g)
				}
			}
			// Half a second is kept back for each part after the last
			// pause.
			if end := calls[5].at.Sub(start); end > 5*time.Second-partReserve {
				t.Errorf("last part sent %v after the start; want by %v", end, 5*time.Second-partReserve)
			}
		})
	})
}

// A 429 on a later part is waited out inside Send, exactly, and the part
// is sent again: the earlier parts are not.
func TestSendLaterPartRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &sendAPI{answer: func(n int, _ string) reply {
			if n == 1 {
				return flood(5)
			}
			return reply{}
		}}
		a, logs := newSendAdapter(t, api)
		text := lines(3)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := a.Send(ctx, sendTo("42", platform.TextMessage(text))); err != nil {
			t.Fatal(err)
		}
		if got := api.delivered(); len(got) != 3 || strings.Join(got, "") != text {
			t.Fatalf("delivered %d parts; want the 3 parts once each", len(got))
		}
		// Pause, 429, exactly 5 s, accepted, pause.
		if g, want := gaps(api.sent()), []time.Duration{time.Second, 5 * time.Second, time.Second}; !slices.Equal(g, want) {
			t.Fatalf("requests %v apart; want %v", g, want)
		}
		if logged(logs, "retrying it") != 1 {
			t.Fatal("retry not logged")
		}
		assertNoTokenInLogs(t, logs)
	})
}

// A later part that cannot be sent fails the message for good: the error
// is permanent, so no retry sends the delivered parts again, and says
// which part failed and that the earlier ones were delivered.
func TestSendLaterPartFails(t *testing.T) {
	tests := []struct {
		name     string
		answers  []reply // for requests 1, 2, ... (request 0, part 1, succeeds)
		deadline time.Duration
		attempts int // requests for part 2
		elapsed  time.Duration
		check    func(error) bool
	}{
		{
			name: "retry_after outlasts the deadline", answers: []reply{flood(30)}, deadline: 10 * time.Second,
			attempts: 1, elapsed: time.Second, // the pause only: no waiting
			check: func(err error) bool { d, ok := platform.RetryAfterOf(err); return ok && d == 30*time.Second },
		},
		{
			name: "retry_after over a minute", answers: []reply{flood(3600)},
			attempts: 1, elapsed: time.Second,
			check: func(err error) bool { _, ok := platform.RetryAfterOf(err); return ok },
		},
		{
			name: "500 every time", answers: []reply{{500, failed}, {500, failed}, {500, failed}, {500, failed}},
			attempts: maxPartAttempts,
			check: func(err error) bool {
				var ae *APIError
				return errors.As(err, &ae) && ae.Code == 500
			},
		},
		{
			name: "403", answers: []reply{{403, blocked}},
			attempts: 1, elapsed: time.Second,
			check: func(err error) bool {
				var ae *APIError
				return errors.As(err, &ae) && ae.Code == 403
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &sendAPI{answer: func(n int, _ string) reply {
					if n >= 1 && n <= len(tt.answers) {
						return tt.answers[n-1]
					}
					return reply{}
				}}
				a, _ := newSendAdapter(t, api)
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				start := time.Now()
				_, err := a.Send(ctx, sendTo("42", platform.TextMessage(lines(3))))
				elapsed := time.Since(start)
				if !platform.IsPermanent(err) || !strings.Contains(err.Error(), "part 2 of 3 failed; part 1 was delivered") || !tt.check(err) {
					t.Fatalf("Send = %v; want a permanent error naming part 2 of 3", err)
				}
				assertNoToken(t, err)
				calls := api.sent()
				if len(calls) != 1+tt.attempts || len(api.delivered()) != 1 {
					t.Fatalf("%d requests, %d delivered; want 1 + %d and 1", len(calls), len(api.delivered()), tt.attempts)
				}
				if tt.elapsed > 0 && elapsed != tt.elapsed {
					t.Fatalf("Send took %v; want %v", elapsed, tt.elapsed)
				}
				// Backoffs after 500s: [0.25, 0.5), [0.5, 1), [1, 2) s.
				for i, g := range gaps(calls)[1:] {
					if d := minPartBackoff << i; g < d/2 || g >= d {
						t.Errorf("wait %d after a 500 = %v; want in [%v, %v)", i+1, g, d/2, d)
					}
				}
			})
		})
	}
}

// A later part that meets a 500 is retried after a backoff, and delivered
// once.
func TestSendLaterPartTransient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &sendAPI{answer: func(n int, _ string) reply {
			if n == 2 || n == 3 {
				return reply{502, "<html>bad gateway</html>"}
			}
			return reply{}
		}}
		a, _ := newSendAdapter(t, api)
		text := lines(3)
		if _, err := a.Send(t.Context(), sendTo("42", platform.TextMessage(text))); err != nil {
			t.Fatal(err)
		}
		if got := api.delivered(); strings.Join(got, "") != text || len(got) != 3 {
			t.Fatalf("delivered %d parts", len(got))
		}
		if n := len(api.sent()); n != 5 {
			t.Fatalf("%d requests; want 5 (part 3 twice refused)", n)
		}
	})
}

// The end of ctx during a later part's pause or retry is permanent too.
func TestSendLaterPartCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &sendAPI{}
		a, _ := newSendAdapter(t, api)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel) // during the first pause
		_, err := a.Send(ctx, sendTo("42", platform.TextMessage(lines(3))))
		if !platform.IsPermanent(err) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "part 2 of 3") {
			t.Fatalf("Send = %v; want a permanent, cancelled part 2 of 3", err)
		}
		if len(api.sent()) != 1 {
			t.Fatalf("%d requests; want 1", len(api.sent()))
		}
	})
}

// Through the default sender chain, a 429 on part 2 of 3 no longer makes
// Retry send the whole text again: each part reaches the chat once.
func TestSendPartsThroughDefaultChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &sendAPI{answer: func(n int, _ string) reply {
			if n == 1 {
				return flood(1)
			}
			return reply{}
		}}
		a, _ := newSendAdapter(t, api)
		s := sender.Default(sender.DefaultConfig{})(a.Sender())
		text := lines(3)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // the dispatcher's SendTimeout
		defer cancel()
		if _, err := s.Send(ctx, sendTo("42", platform.TextMessage(text))); err != nil {
			t.Fatal(err)
		}
		if got := api.delivered(); strings.Join(got, "") != text {
			t.Fatalf("the chat got %d parts, %d units; the text has 3 parts, %d units", len(got), utf16Len(strings.Join(got, "")), utf16Len(text))
		}
	})
}

// Through RateLimit with Telegram's limits, two long texts to a group
// stay within 20 messages a minute (and a burst of 3).
func TestSendPartsRespectGroupLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &sendAPI{}
		a, _ := newSendAdapter(t, api)
		s := sender.RateLimit(sender.TelegramLimits())(a.Sender())
		target := platform.Chat{ID: "-42", Type: platform.ChatGroup}
		for range 2 {
			if _, err := s.Send(t.Context(), platform.SendRequest{Target: target, Message: platform.TextMessage(lines(10))}); err != nil {
				t.Fatal(err)
			}
		}
		calls := api.sent()
		if len(calls) != 20 {
			t.Fatalf("%d messages; want 20", len(calls))
		}
		for i, c := range calls {
			// At most 3 + 20 in any minute: the (i+1)-th message comes at
			// least (i+1-3)·3 s after the first.
			if i >= 3 {
				if min := time.Duration(i-2) * groupPause; c.at.Sub(calls[0].at) < min {
					t.Fatalf("message %d sent %v after the first; want at least %v", i+1, c.at.Sub(calls[0].at), min)
				}
			}
		}
	})
}
