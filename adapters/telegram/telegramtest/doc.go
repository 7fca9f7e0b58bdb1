// Package telegramtest provides a fake Telegram Bot API server for tests of
// bots built on Herald's Telegram adapter (or on any client of the Bot API).
//
// A [Server] is an [net/http/httptest] server on 127.0.0.1 that answers
// getMe, getUpdates (long polling with offsets), sendMessage, sendPhoto,
// sendDocument (by URL and by multipart upload), answerCallbackQuery,
// setWebhook and deleteWebhook the way Telegram does, including Telegram's
// error shape ({"ok":false,"error_code":...,"description":...,"parameters":
// {...}}) with the HTTP status equal to the error code.
//
// A test pushes what users do ([Server.SendUserMessage], [Server.PushCallback],
// [Server.PushUpdate]), reads what the bot sent ([Server.Sent],
// [Server.WaitSent]), makes Telegram start update IDs afresh
// ([Server.ResetUpdateIDs]) and injects failures: flood control with retry_after for
// one chat or for all ([Server.FloodWait]), a blocked chat
// ([Server.Block]), a group migrated to a supergroup ([Server.Migrate]), or
// any [Fault] — an HTTP status, a delay, a proxy's HTML error page — for the
// next N matching requests or chosen by a rule function
// ([Server.InjectFunc]).
//
// Point a bot at the server with its [Server.Endpoint], a "%s/%s" format like
// tgbotapi.APIEndpoint (the token, then the method):
//
//	srv := telegramtest.NewServer()
//	defer srv.Close()
//	adapter, err := telegram.New(telegram.Config{Token: "123:test", APIEndpoint: srv.Endpoint()})
//
// A bot run as a subprocess can be pointed at it through its own
// configuration (Herald's example bot reads TELEGRAM_API_ENDPOINT). Nothing in
// this package needs a *testing.T, and every method is safe for concurrent
// use.
package telegramtest
