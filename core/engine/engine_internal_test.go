package engine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/platform"
)

// A Shutdown that finds another one running waits for it only as long as
// its own context allows, and a little more for the work it then cancels
// (a running Shutdown that never ends is the test's own token here).
func TestShutdownWaitsWithItsOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := New()
		if err != nil {
			t.Fatal(err)
		}
		e.shutSem <- struct{}{} // another Shutdown is running
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v; want DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 20*time.Millisecond+2*forceGrace {
			t.Fatalf("Shutdown took %v", d)
		}
		if err := e.HandleEvent(testEvent()); !errors.Is(err, ErrEngineClosed) {
			t.Fatalf("HandleEvent after Shutdown began = %v", err)
		}
		<-e.shutSem
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func testEvent() platform.Event {
	return platform.Event{Platform: "p", Kind: platform.EventMessage, Chat: platform.Chat{ID: "c"}, Text: "x"}
}

// The IsGroup rule (and GroupOnly) agree with platform.Chat.IsGroup.
func TestIsGroupRuleAgreesWithChat(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []platform.ChatType{platform.ChatGroup, platform.ChatChannel, platform.ChatPrivate, ""} {
		chat := platform.Chat{ID: "1", Type: typ}
		c := e.newContext(context.Background(), platform.Event{Platform: "p", Chat: chat})
		if got, want := IsGroup()(c), chat.IsGroup(); got != want {
			t.Errorf("IsGroup() for %q = %v; Chat.IsGroup() = %v", typ, got, want)
		}
	}
}

// A journal call's success ends only an outage that began before the
// call: a removal that finishes after the journal began to refuse does not
// log the journal back (and the next refusal a second outage).
func TestOutageEndsOnlyAfterItBegan(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	js := newJournalState(zap.New(core))
	since := js.begin() // a call begins; the journal refuses meanwhile
	js.failed("send", errors.New("refused"))
	js.ok(since)
	if !js.down.Load() {
		t.Fatal("a call begun before the outage ended it")
	}
	js.ok(js.begin()) // a call begun during the outage succeeds
	if js.down.Load() {
		t.Fatal("a call begun during the outage did not end it")
	}
	if began, back := logs.FilterMessageSnippet("refuses").Len(), logs.FilterMessageSnippet("is back").Len(); began != 1 || back != 1 {
		t.Fatalf("%d outage lines and %d back; want 1 and 1", began, back)
	}
}
