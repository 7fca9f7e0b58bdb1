package onebot_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/heraldbot/herald/adapters/onebot"
	"github.com/heraldbot/herald/platform"
)

// ExampleNew configures a reverse-mode adapter: the OneBot implementation's
// Universal reverse WebSocket is pointed at ws://<host>:6701/onebot/v11/ws
// with the same access token.
func ExampleNew() {
	a, err := onebot.New(onebot.Config{
		Mode:        onebot.Reverse,
		Listen:      ":6701",
		AccessToken: "change-me",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Name())
	// An event's chat can be replied to as it is; to start a conversation,
	// name the bot and the group.
	fmt.Println(onebot.GroupChat(10001, 123456).ID)

	// A bad configuration names the field.
	_, err = onebot.New(onebot.Config{Mode: onebot.Forward, URL: "http://127.0.0.1:6700/"})
	fmt.Println(err)
	// Output:
	// onebot
	// 10001:123456
	// onebot: invalid config: URL: scheme "http": want ws or wss
}

// ExampleAdapter_Run answers every private "/ping" with "pong". In a Herald
// bot the engine calls Run and sends replies through its dispatcher; this
// shows the adapter alone.
func ExampleAdapter_Run() {
	a, err := onebot.New(onebot.Config{Listen: "127.0.0.1:6701", AccessToken: os.Getenv("ONEBOT_ACCESS_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err = a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
		if ev.Kind != platform.EventMessage || ev.Text != "/ping" {
			return nil
		}
		// handle must not block: send from a goroutine (the engine's
		// dispatcher does this for real bots).
		go func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			msg := platform.OutboundMessage{Text: "pong", ReplyToID: ev.MessageID}
			if _, err := a.Sender().Send(sctx, platform.SendRequest{Target: ev.Chat, Message: msg}); err != nil {
				log.Print(err)
			}
		}()
		return nil
	}})
	if err != nil {
		log.Fatal(err)
	}
}

// ExampleCQ builds a text with a mention for an adapter with CQCodeText
// set; the user's words are escaped so they cannot add CQ codes of their
// own.
func ExampleCQ() {
	userText := "[CQ:at,qq=all] hi"
	text := onebot.CQ(onebot.At(42), onebot.Text(" you said: ")) + onebot.EscapeText(userText)
	fmt.Println(text)
	for _, s := range onebot.ParseCQ(text) {
		fmt.Println(s.Type, s.Data)
	}
	// Output:
	// [CQ:at,qq=42] you said: &#91;CQ:at,qq=all&#93; hi
	// at map[qq:42]
	// text map[text: you said: [CQ:at,qq=all] hi]
}
