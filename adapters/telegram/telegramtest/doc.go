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
// keyboards and their removal, and the methods of later Bot API versions
// bots use: sendMessageDraft (private chats only), setMessageReaction,
// sendInvoice (Telegram Stars: one price, no provider token),
// answerPreCheckoutQuery (once per query), refundStarPayment (once per
// payment), setMyCommands, approveChatJoinRequest and
// declineChatJoinRequest (once per request) and deleteBusinessMessages;
// any other method answers 404 unless [Server.SetResult] gives it a
// result. Sends record their topic (message_thread_id), business
// connection (which must be one the server knows), reply_parameters
// (quotes, replies in other chats), link preview options, flags, effect
// and entities ([SentMessage]), and every request is recorded as it was
// sent ([Server.Calls]). All of it the way Telegram does, including Telegram's error shape
// ({"ok":false,"error_code":...,"description":...,"parameters":{...}})
// with the HTTP status equal to the error code. Made [InMemory], it opens
// no socket and serves the client of [Server.Client] on the caller's
// goroutine, for tests in fake time (testing/synctest).
//
// A test pushes what users do ([Server.SendUserMessage],
// [Server.SendUserFile], [Server.SendTopicMessage],
// [Server.SendBusinessMessage], [Server.PushCallback],
// [Server.PushInlineQuery], [Server.PushChosenInlineResult],
// [Server.PushReaction], [Server.PushMyChatMember],
// [Server.PushChatMember], [Server.PushJoinRequest],
// [Server.PushPreCheckout], [Server.PushSuccessfulPayment],
// [Server.PushBusinessConnection], [Server.PushUpdate], and any update of
// any kind as JSON with [Server.PushJSON]; the …Update forms and
// [Server.UpdateJSON] build an update for a webhook instead of queueing
// it), holds files for
// the bot to send or download ([Server.AddFile], [Server.FileData]), reads
// what the bot sent ([Server.Sent], [Server.WaitSent]), its answers
// ([Server.CallbackAnswers], [Server.InlineAnswers]), chat actions
// ([Server.ChatActions]), deletions ([Server.Deletions]), drafts
// ([Server.Drafts]), reactions ([Server.Reactions]), payment answers and
// refunds ([Server.CheckoutAnswers], [Server.Refunds]), join request
// answers ([Server.JoinAnswers]) and command menus
// ([Server.CommandMenus]), and how it
// edited its messages ([Server.Edits],
// [Server.WaitEdits], and [Server.Message] for a message as it is now),
// makes Telegram start update IDs afresh ([Server.ResetUpdateIDs]) and
// injects failures: flood control with retry_after for one chat or for all
// ([Server.FloodWait]), a blocked chat ([Server.Block]), a group migrated
// to a supergroup ([Server.Migrate]), or any [Fault] — an HTTP status, a
// delay, a proxy's HTML error page, a connection reset after the request
// was handled (the message is sent, the answer lost) or before — for the
// next N matching requests or chosen by a rule function
// ([Server.InjectFunc]). Made [WithLimits] (such as
// [TelegramLimits]), it answers 429 to sends, edits and drafts over a
// chat's or group's budget, and counts them ([Server.Throttled]); without
// it, it takes every request at once, so tests stay fast.
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
