package plugins_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/menu"
)

// /menu shows the buttons; a press edits the menu in place to the choice,
// and "Change" edits it back. Where the platform refuses edits, each press
// answers with a new message instead. Each press is answered with a text.
// Other callbacks, and made-up choices, are not the menu's.
func TestMenu(t *testing.T) {
	for _, edits := range []bool{true, false} {
		t.Run(fmt.Sprint("edits=", edits), func(t *testing.T) {
			mem := memory.New()
			if !edits {
				mem.FailWhen(func(req platform.SendRequest) error {
					if req.Message.EditID != "" {
						return platform.Permanent(fmt.Errorf("no edits here: %w", platform.ErrUnsupported))
					}
					return nil
				})
			}
			e, err := engine.New(engine.WithAdapter(mem))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Use(menu.New()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			chat, ann := memory.Private("1"), memory.User("1", "Ann")
			presses := 0
			handle := func(ev platform.Event) {
				t.Helper()
				ev.Platform, ev.Chat, ev.From = mem.Name(), chat, ann
				if ev.Kind == platform.EventCallback {
					presses++
					ev.QueryID = fmt.Sprint("q", presses) // to answer it by
				}
				if err := e.HandleEvent(ev); err != nil {
					t.Fatal(err)
				}
			}
			handle(platform.Event{Kind: platform.EventMessage, Text: "/menu"})
			sent, err := mem.WaitSent(ctx, "1", 1)
			if err != nil {
				t.Fatal(err)
			}
			id := sent[0].MessageID
			handle(platform.Event{Kind: platform.EventCallback, MessageID: id, Text: menu.Prefix + "coffee"})
			handle(platform.Event{Kind: platform.EventCallback, MessageID: id, Text: "someone else's button"})
			handle(platform.Event{Kind: platform.EventCallback, MessageID: id, Text: menu.Prefix + "whisky"}) // not on the menu
			handle(platform.Event{Kind: platform.EventCallback, MessageID: id, Text: menu.Prefix + "again"})
			if err := e.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			var got []string
			for _, s := range mem.Shown("1") {
				got = append(got, fmt.Sprintf("%s %d", s.Message.Text, len(s.Message.Buttons[0])))
			}
			want := []string{menu.Question + " 3"}
			if !edits {
				want = append(want, "You picked coffee. 1", menu.Question+" 3")
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("chat shows %q; want %q", got, want)
			}
			if edits {
				if texts := mem.Texts("1"); len(texts) != 3 || texts[1] != "You picked coffee." {
					t.Fatalf("sent %q; want the menu, then the two edits", texts)
				}
			}
			// Each press of the menu is answered with its text; the others
			// get the engine's empty answer.
			var answers []string
			for _, a := range mem.Answers() {
				answers = append(answers, a.Callback.Text)
			}
			if want := []string{menu.Answered("Coffee"), "", "", menu.Answered("")}; fmt.Sprint(answers) != fmt.Sprint(want) {
				t.Fatalf("answers %q; want %q", answers, want)
			}
		})
	}
}
