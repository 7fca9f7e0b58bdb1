package sender_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestRecover(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	cause := errors.New("nil map")
	tests := []struct {
		name  string
		value any
		wrap  error
	}{
		{"string", "boom", nil},
		{"error", cause, cause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sender.Recover(zap.New(core))(platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
				panic(tt.value)
			}))
			_, err := s.Send(context.Background(), platform.SendRequest{Platform: "p", Target: platform.Chat{ID: "c"}})
			if !errors.Is(err, sender.ErrSenderPanicked) || !platform.IsPermanent(err) {
				t.Fatalf("err = %v; want a permanent ErrSenderPanicked", err)
			}
			if tt.wrap != nil && !errors.Is(err, tt.wrap) {
				t.Fatalf("err = %v does not wrap the panic's error", err)
			}
		})
	}
	if n := logs.FilterMessage("sender: platform sender panicked").Len(); n != 2 {
		t.Fatalf("%d log lines; want 2", n)
	}
	ok := sender.Recover(nil)(platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		return platform.SendResult{MessageID: "1"}, nil
	}))
	if res, err := ok.Send(context.Background(), platform.SendRequest{}); err != nil || res.MessageID != "1" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
}

// In the default chain a panicking platform sender ends as a dead letter
// after one attempt, and is counted.
func TestDefaultRecoversIntoDeadLetters(t *testing.T) {
	store := sender.NewDeadLetterStore(10)
	counters := new(sender.Counters)
	s := sender.Default(sender.DefaultConfig{DeadLetters: store, Counters: counters})(
		platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
			panic("bug")
		}))
	_, err := s.Send(context.Background(), platform.SendRequest{Platform: "p", Target: platform.Chat{ID: "c"}, Message: platform.TextMessage("x")})
	if !errors.Is(err, sender.ErrSenderPanicked) {
		t.Fatalf("err = %v", err)
	}
	if dls := store.List(); len(dls) != 1 || dls[0].Attempts != 1 {
		t.Fatalf("dead letters = %+v", dls)
	}
	if st := counters.Snapshot(); st.DeadLettered != 1 || st.Attempts != 1 {
		t.Fatalf("counters = %+v", st)
	}
}
