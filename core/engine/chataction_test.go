package engine_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// actionTimes returns when the chat actions of chat were shown, after
// start, and which.
func actionTimes(mem *memory.Adapter, chat string, start time.Time) ([]time.Duration, []platform.ChatAction) {
	var ts []time.Duration
	var as []platform.ChatAction
	for _, a := range mem.Actions(chat) {
		ts = append(ts, a.At.Sub(start))
		as = append(as, a.Action)
	}
	return ts, as
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Typing repeats every 4 s while the handler works and stops when it
// replies, when it returns, when it calls StopChatAction; a second
// ChatAction takes the first one's place.
func TestChatActionRepeats(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler func(c *engine.Context)
		want    []time.Duration
		actions []platform.ChatAction
	}{
		{"until return", func(c *engine.Context) {
			must(t, c.Typing())
			time.Sleep(10 * time.Second)
		}, []time.Duration{0, 4 * time.Second, 8 * time.Second}, nil},
		{"until reply", func(c *engine.Context) {
			must(t, c.Typing())
			time.Sleep(5 * time.Second)
			c.ReplyText("done")
			time.Sleep(10 * time.Second)
		}, []time.Duration{0, 4 * time.Second}, nil},
		{"until stopped", func(c *engine.Context) {
			must(t, c.Typing())
			time.Sleep(time.Second)
			c.StopChatAction()
			time.Sleep(10 * time.Second)
		}, []time.Duration{0}, nil},
		{"replaced", func(c *engine.Context) {
			must(t, c.Typing())
			time.Sleep(2 * time.Second)
			must(t, c.ChatAction(platform.ActionUploadPhoto))
			time.Sleep(7 * time.Second)
		}, []time.Duration{0, 2 * time.Second, 6 * time.Second},
			[]platform.ChatAction{platform.ActionTyping, platform.ActionUploadPhoto, platform.ActionUploadPhoto}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, mem := newEngine(t)
				e.OnCommand("work", func(c *engine.Context) error {
					tt.handler(c)
					return nil
				})
				start := time.Now()
				must(t, e.HandleEvent(msg(dm, ann, "/work")))
				time.Sleep(time.Minute)
				synctest.Wait()
				ts, as := actionTimes(mem, dm.ID, start)
				if !equalDurations(ts, tt.want) {
					t.Errorf("actions shown at %v; want at %v", ts, tt.want)
				}
				want := tt.actions
				if want == nil {
					for range tt.want {
						want = append(want, platform.ActionTyping)
					}
				}
				for i := range min(len(as), len(want)) {
					if as[i] != want[i] {
						t.Errorf("action %d is %q; want %q", i, as[i], want[i])
					}
				}
			})
		})
	}
}

// ChatAction fails at once where it cannot work: no chat, no ChatActor,
// no action, after the handling.
func TestChatActionRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newEngine(t)
		late := make(chan *engine.Context, 1)
		e.OnEvent(platform.EventInlineQuery, func(c *engine.Context) error {
			if err := c.Typing(); !errors.Is(err, engine.ErrNoChat) {
				t.Errorf("Typing without a chat = %v; want ErrNoChat", err)
			}
			return nil
		})
		e.OnCommand("x", func(c *engine.Context) error {
			if err := c.ChatAction(""); !errors.Is(err, platform.ErrInvalidMessage) {
				t.Errorf("an empty ChatAction = %v; want ErrInvalidMessage", err)
			}
			late <- c
			return nil
		})
		handleAndWait(t, e, platform.Event{ID: "q", Platform: memory.DefaultName, Kind: platform.EventInlineQuery, From: ann, QueryID: "q"})
		handleAndWait(t, e, msg(dm, ann, "/x"))
		if err := (<-late).Typing(); err == nil {
			t.Error("Typing after the handling ended = nil; want the context's error")
		}

		bare, err := engine.New(engine.WithAdapter(bareAdapter{memory.New()}))
		must(t, err)
		defer bare.Shutdown(t.Context())
		bare.OnCommand("x", func(c *engine.Context) error {
			if err := c.Typing(); !errors.Is(err, platform.ErrUnsupported) || !platform.IsPermanent(err) {
				t.Errorf("Typing without a ChatActor = %v; want a permanent ErrUnsupported", err)
			}
			return nil
		})
		handleAndWait(t, bare, msg(dm, ann, "/x"))
	})
}
