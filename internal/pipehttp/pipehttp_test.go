package pipehttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/internal/pipehttp"
)

func TestWebSocketAndPlainResponses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := websocket.Upgrader{}
		s := pipehttp.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ws" {
				http.Error(w, "nope", http.StatusNotFound)
				return
			}
			ws, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			_, msg, err := ws.ReadMessage()
			if err == nil {
				ws.WriteMessage(websocket.TextMessage, append([]byte("echo "), msg...))
			}
		}))
		ws, _, err := s.Dialer().Dial("ws://any.test/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(time.Second))
		if err := ws.WriteMessage(websocket.TextMessage, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, got, err := ws.ReadMessage(); err != nil || string(got) != "echo hi" {
			t.Fatalf("ReadMessage = %q, %v", got, err)
		}
		ws.Close()

		_, resp, err := s.Dialer().Dial("ws://any.test/other", nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("dial to a plain 404 = %v, %v", resp, err)
		}
		s.Wait()
	})
}
