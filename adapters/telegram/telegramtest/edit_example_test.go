package telegramtest_test

import (
	"fmt"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

// A bot edits a menu in place: the fake records each edit and shows the
// message as it is now, while Sent keeps it as sent. This server runs in
// memory, as tests in fake time need: the bot reaches it only through
// srv.Client().
func ExampleServer_Edits() {
	srv := telegramtest.NewServer(telegramtest.InMemory())
	defer srv.Close()
	bot, err := tgbotapi.NewBotAPIWithClient("123:test", srv.Endpoint(), srv.Client())
	if err != nil {
		fmt.Println(err)
		return
	}

	menu := tgbotapi.NewMessage(42, "Pick one")
	menu.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Tea", "tea"), tgbotapi.NewInlineKeyboardButtonData("Coffee", "coffee")))
	sent, _ := bot.Send(menu)

	// No reply_markup: the keyboard goes, as on Telegram.
	_, err = bot.Send(tgbotapi.NewEditMessageText(42, sent.MessageID, "You picked tea"))
	fmt.Println("edit:", err)
	_, err = bot.Send(tgbotapi.NewEditMessageText(42, sent.MessageID, "You picked tea"))
	fmt.Println("again:", err)
	photo := tgbotapi.NewPhoto(42, tgbotapi.FileBytes{Name: "cat.jpg", Bytes: []byte("jpeg")})
	cat, _ := bot.Send(photo)
	_, err = bot.Send(tgbotapi.NewEditMessageText(42, cat.MessageID, "a cat"))
	fmt.Println("text of a photo:", err)

	now, _ := srv.Message(42, sent.MessageID)
	fmt.Printf("now: %q, %d keyboard rows\n", now.Text, len(now.Keyboard))
	fmt.Printf("as sent: %q, %d keyboard rows\n", srv.Sent(42)[0].Text, len(srv.Sent(42)[0].Keyboard))
	fmt.Println("edits:", len(srv.Edits(42)), "| editMessageText calls:", srv.Requests("editMessageText"))
	// Output:
	// edit: <nil>
	// again: Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message
	// text of a photo: Bad Request: there is no text in the message to edit
	// now: "You picked tea", 0 keyboard rows
	// as sent: "Pick one", 1 keyboard rows
	// edits: 1 | editMessageText calls: 3
}
