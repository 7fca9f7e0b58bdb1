package webchat_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestShutdownFlushesQueue stops Run while a tab has messages waiting in
// its queue (the tab reads nothing until then, so its writer is stuck on
// the first): the tab still gets every accepted message, in order, and
// only then the close frame 1001.
func TestShutdownFlushesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		a, ps, stop := runInBubble(t, webchat.Config{QueueSize: n}, func(platform.Event) error { return nil })
		tab := ps.dial(t)
		chat := sendHello(t, tab, "").Chat.ID
		for i := 1; i <= n; i++ {
			if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
				Target: platform.Chat{ID: chat}, Message: platform.TextMessage(strconv.Itoa(i))}); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		synctest.Wait() // the writer is blocked on message 1, the rest queued

		stopped := make(chan struct{})
		go func() {
			stop()
			close(stopped)
		}()
		got := 0
		for {
			var f frame
			err := tab.ReadJSON(&f)
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				if ce.Code != websocket.CloseGoingAway {
					t.Errorf("closed with %d; want %d", ce.Code, websocket.CloseGoingAway)
				}
				break
			}
			if err != nil {
				t.Fatalf("after %d messages: %v; want the rest, then close 1001", got, err)
			}
			got++
			if f.Message == nil || f.Message.Text != strconv.Itoa(got) {
				t.Fatalf("frame %d = %+v; want message %d", got, f, got)
			}
		}
		if got != n {
			t.Errorf("%d messages before the close; want all %d", got, n)
		}
		<-stopped
		tab.Close()
	})
}
