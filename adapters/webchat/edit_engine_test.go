package webchat_test

import (
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// drinkMenu is the menu of the edit tests: /menu sends it, and its Back
// button brings it back.
func drinkMenu() platform.OutboundMessage {
	return platform.OutboundMessage{Text: "Pick a drink", Buttons: [][]platform.Button{
		{{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"}},
	}}
}

// TestEngineEditMenu runs a menu that updates itself in place under the
// real engine and sender chain: each press edits the message the button
// is under through Context.Edit, the tab sees the edits in place, a press
// of a button an edit removed is refused, and a reconnecting tab sees the
// menu as last edited.
func TestEngineEditMenu(t *testing.T) {
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("menu", func(c *engine.Context) error {
			c.Reply(drinkMenu())
			return nil
		})
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			menu := drinkMenu()
			if c.Text() != "back" {
				menu = platform.OutboundMessage{Text: "You picked " + c.Text(), Buttons: [][]platform.Button{
					{{Text: "Back", Data: "back"}},
				}}
			}
			c.Edit(c.Event().MessageID, menu)
			return nil
		})
		return nil
	})
	tab, hist := join(t, ec.a, hello{Name: "Ann"})
	tab.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := tab.WriteJSON(map[string]string{"type": "message", "text": "/menu"}); err != nil {
		t.Fatal(err)
	}
	expectFrame(t, tab, "echo", "")
	id := expectFrame(t, tab, "message", "").Message.ID

	steps := []struct {
		press string
		text  string
		rows  [][]string
	}{
		{"tea", "You picked tea", [][]string{{"Back=back"}}},
		{"back", "Pick a drink", [][]string{{"Tea=tea", "Coffee=coffee"}}},
		{"coffee", "You picked coffee", [][]string{{"Back=back"}}},
	}
	for _, s := range steps {
		press(t, tab, id, s.press)
		m := expectFrame(t, tab, "edit", id).Message
		if m.Text != s.text || !sameButtons(*m, s.rows...) || m.Edited.IsZero() {
			t.Fatalf("after pressing %s the menu is %+v; want %q with %q", s.press, m, s.text, s.rows)
		}
	}
	// Tea is no longer under the menu.
	press(t, tab, id, "tea")
	if f := readFrame(t, tab); f.Type != "error" || f.Code != "unknown_button" {
		t.Fatalf("press of a button the last edit removed answered %v; want unknown_button", f)
	}

	_, h := join(t, ec.a, hello{ChatID: hist.Chat.ID})
	if got := texts(messagesOf(h)); len(got) != 2 || got[0] != "user:/menu" || got[1] != "You picked coffee" {
		t.Fatalf("history = %q; want /menu and the menu as last edited", got)
	}
	if m := h.Messages[1]; m.ID != id || !sameButtons(m, []string{"Back=back"}) || m.Edited.IsZero() {
		t.Errorf("menu in the history = %+v", m)
	}

	if err := ec.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st := ec.e.Stats(); st.Sends.Delivered != 1+uint64(len(steps)) || st.Sends.Retries != 0 || st.DeadLetters != 0 ||
		st.HandlerErrors != 0 || st.HandlerPanics != 0 {
		t.Errorf("engine stats = %+v; want the menu and %d edits delivered, no failures", st, len(steps))
	}
}
