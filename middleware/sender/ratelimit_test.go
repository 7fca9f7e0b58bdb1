package sender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// checkBucket fails unless the times (sorted) obey a token bucket of limit
// per second and burst b: for every i < j, the j−i+1 sends between times[i]
// and times[j] fit in b + limit·(times[j]−times[i]).
func checkBucket(t *testing.T, name string, times []time.Time, limit float64, b int) {
	t.Helper()
	times = slices.Clone(times)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for i := range times {
		for j := i; j < len(times); j++ {
			allowed := float64(b) + limit*times[j].Sub(times[i]).Seconds() + 1e-6
			if float64(j-i+1) > allowed {
				t.Fatalf("%s: %d sends in %v; a bucket of %v/s, burst %d allows %.3f",
					name, j-i+1, times[j].Sub(times[i]), limit, b, allowed)
			}
		}
	}
}

// sendAll sends n requests made by mk, one after another, and fails the test
// on any error.
func sendAll(t *testing.T, s platform.Sender, n int, mk func() platform.SendRequest) {
	t.Helper()
	for range n {
		if _, err := s.Send(context.Background(), mk()); err != nil {
			t.Errorf("Send = %v", err)
			return
		}
	}
}

func timesOf(calls []call, chat string) []time.Time {
	var ts []time.Time
	for _, c := range calls {
		if chat == "" || c.req.Target.ID == chat {
			ts = append(ts, c.at)
		}
	}
	return ts
}

func TestRateLimitGlobal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		s := sender.RateLimit(sender.RateLimitConfig{Global: 100, GlobalBurst: 5})(r)
		start := time.Now()
		var wg sync.WaitGroup
		for c := range 30 {
			wg.Go(func() { sendAll(t, s, 10, func() platform.SendRequest { return req(fmt.Sprint(c)) }) })
		}
		wg.Wait()
		calls := r.snapshot()
		if len(calls) != 300 {
			t.Fatalf("%d sends; want 300", len(calls))
		}
		ts := timesOf(calls, "")
		checkBucket(t, "global", ts, 100, 5)
		// 5 at once, then one every 10ms: the 300th goes at 2.95s.
		last := slices.MaxFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		if got := last.Sub(start); got < 2949*time.Millisecond || got > 2951*time.Millisecond {
			t.Fatalf("last send at %v; want 2.95s", got)
		}
	})
}

func TestRateLimitPerChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		s := sender.RateLimit(sender.RateLimitConfig{PerChat: 50, PerChatBurst: 3})(r)
		start := time.Now()
		var wg sync.WaitGroup
		for _, chat := range []string{"a", "b"} {
			wg.Go(func() { sendAll(t, s, 200, func() platform.SendRequest { return req(chat) }) })
		}
		wg.Wait()
		// The chats are limited separately: both finish at (200−3)/50 = 3.94s,
		// not twice that.
		if got := time.Since(start); got < 3939*time.Millisecond || got > 3941*time.Millisecond {
			t.Fatalf("400 sends to 2 chats took %v; want 3.94s", got)
		}
		calls := r.snapshot()
		for _, chat := range []string{"a", "b"} {
			ts := timesOf(calls, chat)
			if len(ts) != 200 {
				t.Fatalf("chat %s: %d sends; want 200", chat, len(ts))
			}
			checkBucket(t, "chat "+chat, ts, 50, 3)
		}
		// Same chat ID on another platform is another chat.
		other := req("a")
		other.Platform = "other"
		before := time.Now()
		for range 3 {
			if _, err := s.Send(context.Background(), other); err != nil {
				t.Fatal(err)
			}
		}
		if time.Since(before) != 0 {
			t.Fatal("another platform's chat with the same ID was limited")
		}
	})
}

func TestRateLimitGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		s := sender.RateLimit(sender.RateLimitConfig{PerChat: 10, PerChatBurst: 1, PerGroup: 2, PerGroupBurst: 2})(r)
		start := time.Now()
		var wg sync.WaitGroup
		var groupDone, privateDone time.Duration
		wg.Go(func() {
			sendAll(t, s, 20, func() platform.SendRequest { return groupReq("g") })
			groupDone = time.Since(start)
		})
		wg.Go(func() {
			sendAll(t, s, 20, func() platform.SendRequest { return req("p") })
			privateDone = time.Since(start)
		})
		wg.Wait()
		calls := r.snapshot()
		checkBucket(t, "group", timesOf(calls, "g"), 2, 2)
		checkBucket(t, "group's chat limit", timesOf(calls, "g"), 10, 1)
		checkBucket(t, "private", timesOf(calls, "p"), 10, 1)
		// The group is held to its group budget: (20−2)/2 = 9s; the private
		// chat only to its chat limit: (20−1)/10 = 1.9s.
		if groupDone < 8999*time.Millisecond || groupDone > 9001*time.Millisecond {
			t.Fatalf("group took %v; want 9s", groupDone)
		}
		if privateDone < 1899*time.Millisecond || privateDone > 1901*time.Millisecond {
			t.Fatalf("private chat took %v; want 1.9s", privateDone)
		}
	})
}

func TestRateLimitPausesAfterRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		cfg        sender.RateLimitConfig
		flood      platform.SendRequest // the request that gets the retry-after
		otherWaits bool                 // whether another chat waits too
	}{
		{"chat", sender.RateLimitConfig{PerChat: 1000, PerChatBurst: 10}, req("a"), false},
		{"GlobalPause", sender.RateLimitConfig{PerChat: 1000, PerChatBurst: 10, GlobalPause: true}, req("a"), true},
		{"empty chat ID", sender.RateLimitConfig{Global: 1000, GlobalBurst: 10}, req(""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				flood := platform.NewRetryAfter(40*time.Millisecond, errors.New("429 Too Many Requests"))
				r := &recorder{reply: failFirst(1, flood)}
				s := sender.RateLimit(tt.cfg)(r)
				start := time.Now()
				if _, err := s.Send(context.Background(), tt.flood); !errors.Is(err, flood) {
					t.Fatalf("first Send = %v; want the retry-after error", err)
				}
				var wg sync.WaitGroup
				var sameAt, otherAt time.Duration
				wg.Go(func() {
					if _, err := s.Send(context.Background(), tt.flood); err != nil {
						t.Errorf("Send = %v", err)
					}
					sameAt = time.Since(start)
				})
				wg.Go(func() {
					if _, err := s.Send(context.Background(), req("b")); err != nil {
						t.Errorf("Send = %v", err)
					}
					otherAt = time.Since(start)
				})
				wg.Wait()
				if sameAt != 40*time.Millisecond {
					t.Errorf("the flooded chat sent again after %v; want exactly 40ms", sameAt)
				}
				wantOther := time.Duration(0)
				if tt.otherWaits {
					wantOther = 40 * time.Millisecond
				}
				if otherAt != wantOther {
					t.Errorf("another chat sent after %v; want %v", otherAt, wantOther)
				}
			})
		})
	}
}

func TestRateLimitPauseBeyondDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{reply: failFirst(1, platform.NewRetryAfter(time.Hour, nil))}
		s := sender.RateLimit(sender.RateLimitConfig{PerChat: 1000})(r)
		_, _ = s.Send(context.Background(), req("a"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := s.Send(ctx, req("a"))
		if time.Since(start) != 0 || r.count() != 1 {
			t.Fatalf("a send to a chat paused for an hour waited %v and made %d calls; want at once, none", time.Since(start), r.count()-1)
		}
		if d, ok := platform.RetryAfterOf(err); !ok || d != time.Hour || !errors.Is(err, sender.ErrWouldExceedDeadline) {
			t.Fatalf("Send = %v (retry-after %v, %v); want ErrWouldExceedDeadline with retry-after 1h", err, d, ok)
		}
	})
}

func TestRateLimitGivesTokensBack(t *testing.T) {
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		want   error
		waited time.Duration
	}{
		{"deadline too soon", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 500*time.Millisecond)
		}, sender.ErrWouldExceedDeadline, 0},
		{"cancelled while waiting", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				time.Sleep(200 * time.Millisecond)
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		for _, cfg := range []sender.RateLimitConfig{{PerChat: 1}, {Global: 1}} {
			for _, mode := range sendModes {
				testRateLimitGivesTokensBack(t, tt.name, tt.ctx, tt.want, tt.waited, cfg, mode.name, mode.resumed)
			}
		}
	}
}

func testRateLimitGivesTokensBack(t *testing.T, name string, mkCtx func() (context.Context, context.CancelFunc), want error, waited time.Duration, cfg sender.RateLimitConfig, modeName string, resumed bool) {
	t.Run(fmt.Sprintf("%s/%+v/%s", name, cfg, modeName), func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := &recorder{}
			s, res := inMode(resumed, sender.RateLimit(cfg)(r))
			start := time.Now()
			if _, err := s.Send(context.Background(), req("a")); err != nil {
				t.Fatal(err) // takes the only token
			}
			ctx, cancel := mkCtx()
			defer cancel()
			_, err := s.Send(ctx, req("a"))
			if !errors.Is(err, want) {
				t.Fatalf("Send = %v; want %v", err, want)
			}
			if got := time.Since(start); got != waited {
				t.Fatalf("gave up after %v; want %v", got, waited)
			}
			// The token reserved for the failed send was given back: the
			// next send goes when the first token is replaced, at 1s.
			if _, err := s.Send(context.Background(), req("a")); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != time.Second {
				t.Fatalf("next send at %v; want 1s", got)
			}
			if waited > 0 {
				checkResumed(t, res, 2)
			}
		})
	})
}

func TestRateLimitCancelledBeforeSend(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &recorder{}
	_, err := sender.RateLimit(sender.RateLimitConfig{PerChat: 1})(r).Send(ctx, req("a"))
	if !errors.Is(err, context.Canceled) || r.count() != 0 {
		t.Fatalf("Send = %v after %d calls; want Canceled, none", err, r.count())
	}
}

func TestRateLimitUnderRetry(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) { testRateLimitUnderRetry(t, mode.resumed) })
	}
}

func testRateLimitUnderRetry(t *testing.T, resumed bool) {
	synctest.Test(t, func(t *testing.T) {
		// Retry re-enters RateLimit: a retry spends a token and so waits for
		// the chat's next one, and a retry-after pause is waited out once.
		r := &recorder{reply: failFirst(1, errFlaky)}
		s := sender.Chain(
			sender.Retry(noJitter(3, time.Millisecond, time.Millisecond)),
			sender.RateLimit(sender.RateLimitConfig{PerChat: 1}),
		)(r)
		s, res := inMode(resumed, s)
		start := time.Now()
		if _, err := s.Send(context.Background(), req("a")); err != nil {
			t.Fatal(err)
		}
		calls := r.snapshot()
		if len(calls) != 2 || calls[1].at.Sub(start) != time.Second {
			t.Fatalf("%d calls, retry at %v; want 2, at 1s", len(calls), calls[len(calls)-1].at.Sub(start))
		}

		r2 := &recorder{reply: failFirst(1, platform.NewRetryAfter(3*time.Second, nil))}
		s2, res2 := inMode(resumed, sender.Chain(sender.Retry(sender.RetryConfig{}), sender.RateLimit(sender.RateLimitConfig{PerChat: 10}))(r2))
		start = time.Now()
		if _, err := s2.Send(context.Background(), req("a")); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("retry-after 3s under Retry and RateLimit took %v; want 3s", got)
		}
		checkResumed(t, res, 2)  // a backoff, then the token
		checkResumed(t, res2, 1) // the retry-after, which the chat pause it set ends with
	})
}

func TestRateLimitZeroConfig(t *testing.T) {
	r := &recorder{}
	for _, cfg := range []sender.RateLimitConfig{{}, {Global: rate.Inf, PerChat: -1, IdleTTL: time.Second}} {
		if got := sender.RateLimit(cfg)(r); got != platform.Sender(r) {
			t.Fatalf("RateLimit(%+v) = %T; want the sender unchanged", cfg, got)
		}
	}
}

func TestTelegramLimits(t *testing.T) {
	got := sender.TelegramLimits()
	if got.Global != 30 || got.PerChat != 1 || got.PerChatBurst != 3 || got.PerGroup != 17.0/60 || got.PerGroupBurst != 3 {
		t.Fatalf("TelegramLimits = %+v", got)
	}
	if got.GlobalBurst < 1 || got.GlobalBurst > 5 {
		t.Fatalf("GlobalBurst = %d; want small", got.GlobalBurst)
	}
}

// A paused send keeps the tokens it reserved: resumed, it goes at the time
// its reservation gave it, ahead of sends that reserved after it.
func TestRateLimitResumedKeepsItsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		limited := sender.RateLimit(sender.RateLimitConfig{Global: 1})(r)
		start := time.Now()
		if _, err := limited.Send(context.Background(), req("a")); err != nil {
			t.Fatal(err) // takes the only token
		}
		resumed, res := inMode(true, limited)
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := resumed.Send(context.Background(), req("b")); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			time.Sleep(500 * time.Millisecond) // after b reserved its token
			if _, err := limited.Send(context.Background(), req("c")); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		for chat, want := range map[string]time.Duration{"b": time.Second, "c": 2 * time.Second} {
			if at := timesOf(r.snapshot(), chat); len(at) != 1 || at[0].Sub(start) != want {
				t.Errorf("chat %s sent at %v; want once, at %v", chat, at, want)
			}
		}
		checkResumed(t, res, 1)
	})
}

// An album costs a token per attachment, also above the burst, in place
// and resumed; a cancelled album gives all of its tokens back.
func TestRateLimitAlbumCost(t *testing.T) {
	album := func(n int) platform.SendRequest {
		r := req("a")
		r.Message = platform.OutboundMessage{Album: true}
		for range n {
			r.Message.Attachments = append(r.Message.Attachments, platform.Attachment{Kind: platform.AttachPhoto, URL: "u"})
		}
		return r
	}
	for _, mode := range sendModes {
		for _, cfg := range []sender.RateLimitConfig{{PerChat: 1, PerChatBurst: 3}, {Global: 1, GlobalBurst: 3}} {
			t.Run(fmt.Sprintf("%+v/%s", cfg, mode.name), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := &recorder{}
					s, _ := inMode(mode.resumed, sender.RateLimit(cfg)(r))
					start := time.Now()
					// 3 tokens at once: an album of 5 waits for 2 more.
					if _, err := s.Send(context.Background(), album(5)); err != nil {
						t.Fatal(err)
					}
					if got := time.Since(start); got != 2*time.Second {
						t.Fatalf("album of 5 sent at %v; want 2s", got)
					}
					// The bucket is empty: a text waits a second.
					if _, err := s.Send(context.Background(), req("a")); err != nil {
						t.Fatal(err)
					}
					if got := time.Since(start); got != 3*time.Second {
						t.Fatalf("text after the album at %v; want 3s", got)
					}
					// An album of 4 given up at once gives its 4 tokens back.
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					_, err := s.Send(ctx, album(4))
					cancel()
					if !errors.Is(err, sender.ErrWouldExceedDeadline) {
						t.Fatalf("album that cannot wait = %v; want ErrWouldExceedDeadline", err)
					}
					if _, err := s.Send(context.Background(), req("a")); err != nil {
						t.Fatal(err)
					}
					if got := time.Since(start); got != 4*time.Second {
						t.Fatalf("text after the cancelled album at %v; want 4s", got)
					}
				})
			})
		}
	}
}

// Telegram counts a group's 20 messages a minute over any 60 seconds: the
// default budget never lets a 21st through, its burst included (a bucket
// of 20 a minute with a burst of 3 would let 23 through in the first).
func TestTelegramLimitsGroupMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		s := sender.RateLimit(sender.TelegramLimits())(r)
		sendAll(t, s, 60, func() platform.SendRequest { return groupReq("-100") })
		ts := timesOf(r.snapshot(), "-100")
		if len(ts) != 60 {
			t.Fatalf("%d sends; want 60", len(ts))
		}
		for i := range ts {
			n := 0
			for _, at := range ts[i:] {
				if at.Sub(ts[i]) <= time.Minute {
					n++
				}
			}
			if n > 20 {
				t.Fatalf("%d sends to the group within a minute of %v; Telegram allows 20", n, ts[i].Sub(ts[0]))
			}
		}
		// And the budget is used: the 20th goes within the first minute.
		if got := ts[19].Sub(ts[0]); got > time.Minute {
			t.Fatalf("the 20th send went %v after the first; want within a minute", got)
		}
	})
}
