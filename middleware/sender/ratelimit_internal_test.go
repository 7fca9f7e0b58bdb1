package sender

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldbot/herald/platform"
)

func TestRateLimitEvictsIdleChats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		next := platform.SenderFunc(func(_ context.Context, req platform.SendRequest) (platform.SendResult, error) {
			if req.Target.ID == "busy" {
				<-release
			}
			return platform.SendResult{}, nil
		})
		l := RateLimit(RateLimitConfig{PerChat: 100, IdleTTL: time.Minute})(next).(*rateLimiter)
		send := func(chat string) {
			if _, err := l.Send(context.Background(), platform.SendRequest{Platform: "p", Target: platform.Chat{ID: chat}}); err != nil {
				t.Errorf("Send(%s) = %v", chat, err)
			}
		}
		for i := range 100 {
			send(fmt.Sprint(i))
		}
		if n := l.live(); n != 100 {
			t.Fatalf("%d live chats; want 100", n)
		}
		var wg sync.WaitGroup
		wg.Go(func() { send("busy") }) // in use across the sweep: kept
		synctest.Wait()

		time.Sleep(59 * time.Second)
		send("x") // a sweep runs, but nobody has been idle for a minute
		if n := l.live(); n != 102 {
			t.Fatalf("%d live chats after 59s; want 102", n)
		}
		time.Sleep(31 * time.Second) // the next sweep is due 30s after the last
		send("y")
		if n := l.live(); n != 3 { // busy, x and y
			t.Fatalf("%d live chats after 90s; want 3 (busy, x, y)", n)
		}
		close(release)
		wg.Wait()
		time.Sleep(2 * time.Minute)
		send("z")
		if n := l.live(); n != 1 {
			t.Fatalf("%d live chats after everyone went idle; want 1", n)
		}
	})
}

func TestRateLimitKeepsPausedChats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := platform.SenderFunc(func(_ context.Context, req platform.SendRequest) (platform.SendResult, error) {
			if req.Target.ID == "flooded" {
				return platform.SendResult{}, platform.NewRetryAfter(time.Hour, nil)
			}
			return platform.SendResult{}, nil
		})
		l := RateLimit(RateLimitConfig{PerChat: 100, IdleTTL: time.Minute})(next).(*rateLimiter)
		_, _ = l.Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "flooded"}})
		time.Sleep(10 * time.Minute)
		_, _ = l.Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "other"}})
		if n := l.live(); n != 2 {
			t.Fatalf("%d live chats; want 2: a paused chat is kept while paused", n)
		}
	})
}

func TestRateLimitIdleTTLFloor(t *testing.T) {
	tests := []struct {
		cfg  RateLimitConfig
		want time.Duration
	}{
		{RateLimitConfig{PerChat: 1}, DefaultIdleTTL},
		{RateLimitConfig{PerChat: 1, PerChatBurst: 3, IdleTTL: time.Second}, 3 * time.Second},
		{RateLimitConfig{PerChat: 1, PerGroup: rate.Every(3 * time.Second), PerGroupBurst: 3, IdleTTL: time.Second}, 9 * time.Second},
		{RateLimitConfig{Global: 1, IdleTTL: time.Second}, time.Second},
	}
	for _, tt := range tests {
		if got := tt.cfg.withDefaults().IdleTTL; got != tt.want {
			t.Errorf("IdleTTL of %+v = %v; want %v", tt.cfg, got, tt.want)
		}
	}
}
