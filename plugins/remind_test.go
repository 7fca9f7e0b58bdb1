package plugins_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/plugins/remind"
)

// /remind answers at once and reminds when the time has passed; a bad
// duration or no text gets the usage.
func TestRemind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mem := runBot(t, nil, remind.New())
		ann, dm, group := memory.User("1", "Ann"), memory.Private("1"), memory.Group("g")
		for _, in := range []string{"/remind", "/remind 10m", "/remind tea 10m", "/remind 10 tea", "/remind -5m tea",
			"/remind 0s tea", "/remind 721h tea", "/remind 500ms tea"} {
			mem.Say(dm, ann, in)
		}
		synctest.Wait()
		for i, got := range mem.Texts(dm.ID) {
			if got != remind.Usage {
				t.Errorf("reply %d: %q; want the usage", i, got)
			}
		}
		start := time.Now()
		mem.Say(dm, ann, "/remind 1h30m  stretch your legs")
		mem.Say(dm, ann, "/remind 6s tea")
		mem.Say(group, ann, "/remind 10m stand-up")
		synctest.Wait()
		time.Sleep(2 * time.Hour)
		want := []string{
			remind.Ack("1h30m", "stretch your legs"), remind.Ack("6s", "tea"),
			"⏰ tea", "⏰ stretch your legs",
		}
		if got := mem.Texts(dm.ID)[8:]; !slices.Equal(got, want) {
			t.Errorf("private chat got %q; want %q", got, want)
		}
		sent := mem.Sent(dm.ID)
		if at := sent[len(sent)-1].At.Sub(start); at != 90*time.Minute {
			t.Errorf("reminded after %v; want 1h30m", at)
		}
		if got, want := mem.Texts(group.ID), []string{remind.Ack("10m", "stand-up"), "⏰ Ann: stand-up"}; !slices.Equal(got, want) {
			t.Errorf("group got %q; want %q", got, want)
		}
	})
}

// A reminder lives in the schedule store: a bot that stopped before it
// was due leaves it to the next on the same store (a restart, with a
// store that lasts), which sends it at start if its time passed.
func TestRemindKeptInTheScheduleStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		ann, dm := memory.User("1", "Ann"), memory.Private("1")
		e, mem := runBot(t, []engine.Option{engine.WithScheduleStore(store)}, remind.New())
		mem.Say(dm, ann, "/remind 10m tea")
		synctest.Wait()
		if err := e.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		_, mem = runBot(t, []engine.Option{engine.WithScheduleStore(store)}, remind.New())
		synctest.Wait()
		if got := mem.Texts(dm.ID); !slices.Equal(got, []string{"⏰ tea"}) {
			t.Fatalf("after the restart the chat got %q", got)
		}
	})
}

// /remind cancel takes back the chat's reminders not sent yet, and only
// the chat's: the pattern of a per-chat job.
func TestRemindCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mem := runBot(t, nil, remind.New())
		ann, dm, group := memory.User("1", "Ann"), memory.Private("1"), memory.Group("g")
		mem.Say(dm, ann, "/remind 1h tea")
		mem.Say(dm, ann, "/remind 2h lunch")
		mem.Say(group, ann, "/remind 1h stand-up")
		synctest.Wait()
		mem.Say(dm, ann, "/remind cancel")
		synctest.Wait()
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		want := []string{remind.Ack("1h", "tea"), remind.Ack("2h", "lunch"), remind.Cancelled(2)}
		if got := mem.Texts(dm.ID); !slices.Equal(got, want) {
			t.Errorf("private chat got %q; want %q", got, want)
		}
		if got, want := mem.Texts(group.ID), []string{remind.Ack("1h", "stand-up"), "⏰ Ann: stand-up"}; !slices.Equal(got, want) {
			t.Errorf("group got %q; want %q", got, want)
		}
	})
}
