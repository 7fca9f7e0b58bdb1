package webchat_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestStalledUploadsFreeTheirSlots: four tabs that stop in the middle of
// a file frame hold the four upload slots only until UploadStall has
// passed without a byte from them, even one that keeps sending pongs
// meanwhile; then they are closed, and another user's file of 100 KB,
// which waited 59 s behind them, goes through. In fake time, so the wait
// is exact.
func TestStalledUploadsFreeTheirSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, ps, stop := runInBubble(t, webchat.Config{}, func(platform.Event) error { return nil })
		big, err := json.Marshal(fileFrame(platform.AttachDocument, "big.bin", "", make([]byte, 1<<20), ""))
		if err != nil {
			t.Fatal(err)
		}
		var stalled []*websocket.Conn
		for range webchat.DefaultUploadSlots {
			ws := ps.dial(t)
			sendHello(t, ws, "")
			w, err := ws.NextWriter(websocket.TextMessage)
			if err != nil {
				t.Fatal(err)
			}
			go w.Write(big[:200_000]) // and nothing more: the pipe blocks until the adapter reads
			stalled = append(stalled, ws)
		}
		synctest.Wait()
		if n := webchat.UploadSlotsTaken(a); n != webchat.DefaultUploadSlots {
			t.Fatalf("%d upload slots taken; want all %d by the stalled tabs", n, webchat.DefaultUploadSlots)
		}
		// One of them answers pings and sends pongs of its own, which
		// must not buy it time.
		pongs := make(chan struct{})
		go func() {
			defer close(pongs)
			for {
				time.Sleep(time.Second)
				if stalled[0].WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second)) != nil {
					return
				}
			}
		}()

		other := ps.dial(t)
		sendHello(t, other, "")
		began := time.Now()
		go other.WriteJSON(fileFrame(platform.AttachDocument, "small.bin", "", make([]byte, 100_000), ""))
		var f frame
		if err := other.ReadJSON(&f); err != nil || f.Type != "echo" {
			t.Fatalf("the other file: %+v, %v; want its echo", f, err)
		}
		if waited := time.Since(began); waited > webchat.DefaultUploadStall {
			t.Errorf("the other file waited %v; want at most UploadStall, %v", waited, webchat.DefaultUploadStall)
		}
		synctest.Wait()
		if n := webchat.OpenTabs(a); n != 1 || time.Since(began) > webchat.DefaultUploadStall {
			t.Fatalf("%d tabs open %v after the stall began; want only the other, every stalled one closed by UploadStall",
				n, time.Since(began))
		}
		for i, ws := range stalled {
			if _, _, err := ws.ReadMessage(); err == nil {
				t.Errorf("stalled tab %d still open", i)
			}
			ws.Close()
		}
		<-pongs
		if n := webchat.UploadSlotsTaken(a); n != 0 {
			t.Errorf("%d upload slots taken after the stalled tabs went; want none", n)
		}
		stop()
		other.Close()
	})
}
