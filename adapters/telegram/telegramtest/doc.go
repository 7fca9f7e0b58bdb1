// Package telegramtest provides a fake Telegram Bot API server for tests of
// bots built on Herald's Telegram adapter (or on any client of the Bot API).
//
// A [Server] is an [net/http/httptest] server on 127.0.0.1 that answers
// getMe, getUpdates (long polling with offsets), sendMessage, sendPhoto,
// sendDocument, sendVideo, sendAudio, sendVoice, sendAnimation,
// sendSticker, sendVideoNote (by URL, by file ID and by multipart upload),
// sendMediaGroup (albums), editMessageText, editMessageCaption,
// deleteMessage, answerCallbackQuery (once per query), sendChatAction,
// answerInlineQuery, getFile and file downloads (GET /file/bot…; 400
// "file is too big" over 20 MB), setWebhook and deleteWebhook, with reply
// keyboards and their removal, the way Telegram does, including Telegram's error shape
// ({"ok":false,"error_code":...,"description":...,"parameters":{...}})
// with the HTTP status equal to the error code. Made [InMemory], it opens
// no socket and serves the client of [Server.Client] on the caller's
// goroutine, for tests in fake time (testing/synctest).
//
// A test pushes what users do ([Server.SendUserMessage],
// [Server.SendUserFile], [Server.PushCallback], [Server.PushInlineQuery],
// [Server.PushChosenInlineResult], [Server.PushUpdate]; the …Update forms
// build an update for a webhook instead of queueing it), holds files for
// the bot to send or download ([Server.AddFile], [Server.FileData]), reads
// what the bot sent ([Server.Sent], [Server.WaitSent]), its answers
// ([Server.CallbackAnswers], [Server.InlineAnswers]), chat actions
// ([Server.ChatActions]) and deletions ([Server.Deletions]), and how it
// edited its messages ([Server.Edits],
// [Server.WaitEdits], and [Server.Message] for a message as it is now),
// makes Telegram start update IDs afresh ([Server.ResetUpdateIDs]) and
// injects failures: flood control with retry_after for one chat or for all
// ([Server.FloodWait]), a blocked chat ([Server.Block]), a group migrated
// to a supergroup ([Server.Migrate]), or any [Fault] — an HTTP status, a
// delay, a proxy's HTML error page, a connection reset after the request
// was handled (the message is sent, the answer lost) or before — for the
// next N matching requests or chosen by a rule function
// ([Server.InjectFunc]).
//
// Edits behave as on Telegram: only the bot's own messages in a chat can
// be edited (400 "Bad Request: message to edit not found" otherwise, or
// "message can't be edited" for a user's message); editMessageText needs a
// text message and editMessageCaption a photo or document ("there is no
// text in the message to edit", "there is no caption in the message to
// edit"); an edit that changes nothing is refused with "message is not
// modified: ..."; and an edit without reply_markup removes the message's
// inline keyboard. A channel can be named by its @username once the server
// knows it ([WithChannel]).
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
