package adaptertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/platform"
)

func TestInbox(t *testing.T) {
	var b adaptertest.Inbox
	go func() {
		b.Add("c", platform.TextMessage("1"))
		b.Add("c", platform.TextMessage("2"), platform.TextMessage("3"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := b.Wait(ctx, "c", 3)
	if err != nil || len(got) != 3 || got[0].Text != "1" || got[2].Text != "3" {
		t.Fatalf("Wait = %+v, %v", got, err)
	}
	short, stop := context.WithCancel(context.Background())
	stop()
	if got, err := b.Wait(short, "other", 1); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("Wait on an empty chat = %+v, %v", got, err)
	}
}
