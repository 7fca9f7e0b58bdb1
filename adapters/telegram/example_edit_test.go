package telegram_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// An edit is a message with EditID set: Send replaces the text and buttons
// of that earlier message of the bot (editMessageText, or
// editMessageCaption for a photo or document). An edit that changes
// nothing succeeds; one of a message that is not there fails for good.
func ExampleAdapter_Send_edit() {
	srv := telegramtest.NewServer()
	defer srv.Close()
	adapter, err := telegram.New(telegram.Config{Token: "123456:example-token", APIEndpoint: srv.Endpoint()})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send := func(m platform.OutboundMessage) (platform.SendResult, error) {
		return adapter.Send(ctx, platform.SendRequest{Target: platform.Chat{ID: "42"}, Message: m})
	}

	menu, _ := send(platform.OutboundMessage{Text: "Pick one", Buttons: [][]platform.Button{{
		{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"},
	}}})
	res, err := send(platform.OutboundMessage{
		Text: "You picked <b>tea</b>", ParseMode: platform.ParseHTML, EditID: menu.MessageID,
		Buttons: [][]platform.Button{{{Text: "Back", Data: "back"}}},
	})
	fmt.Println("edited message", res.MessageID, err)
	_, err = send(platform.EditMessage(menu.MessageID, "Closed")) // nil Buttons: the keyboard goes
	fmt.Println("edited again:", err)
	_, err = send(platform.EditMessage(menu.MessageID, "Closed"))
	fmt.Println("the same again:", err)
	_, err = send(platform.EditMessage("99", "x"))
	fmt.Println("message 99:", err, "| permanent:", platform.IsPermanent(err))

	now, _ := srv.Message(42, 1)
	fmt.Printf("chat 42 shows %q with %d keyboard rows, after %d edits\n", now.Text, len(now.Keyboard), len(srv.Edits(42)))
	// Output:
	// edited message 1 <nil>
	// edited again: <nil>
	// the same again: <nil>
	// message 99: telegram: editMessageText: 400 Bad Request: message to edit not found | permanent: true
	// chat 42 shows "Closed" with 0 keyboard rows, after 2 edits
}
