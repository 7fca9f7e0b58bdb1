package webchat_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// This example runs the chat with a bot that answers "/ping". A program
// would use the default Config (http://127.0.0.1:8080/) and let a person
// open a.URL() in a browser; here the address is a free port and a
// WebSocket client plays the browser tab.
func Example() {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			if ev.Text == "/ping" {
				// Send does not block: it queues the reply for the chat's tabs.
				a.Sender().Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.TextMessage("pong")})
			}
			return nil
		}})
	}()
	<-a.Ready() // a.URL() is now the page's address

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+a.Addr()+"/ws", nil)
	if err != nil {
		log.Fatal(err)
	}
	ws.WriteJSON(map[string]string{"type": "hello", "name": "Ann"})
	ws.WriteJSON(map[string]string{"type": "message", "text": "/ping"})
	for {
		var f struct {
			Type    string
			Message struct{ Text string }
		}
		if err := ws.ReadJSON(&f); err != nil {
			log.Fatal(err)
		}
		fmt.Println(strings.TrimSpace(f.Type + " " + f.Message.Text))
		if f.Type == "message" {
			break
		}
	}
	ws.Close()

	cancel()
	fmt.Println("Run returned", <-done)
	// Output:
	// history
	// echo /ping
	// message pong
	// Run returned <nil>
}
