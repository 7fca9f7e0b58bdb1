// Package telegram is Herald's adapter for the Telegram Bot API, built on
// github.com/go-telegram-bot-api/telegram-bot-api/v5 (v5.5.1) and working
// around that library's traps.
//
// [New] makes an [Adapter] from a [Config]; it does no network I/O. The
// adapter implements platform.Adapter: [Adapter.Run] receives updates and
// hands them to the engine as platform.Events, and [Adapter.Sender] sends
// replies. Tests point [Config.APIEndpoint] at the fake server of package
// telegramtest.
//
// # Receiving: long polling
//
// Polling (the default) needs no public address. Run calls getUpdates in its
// own loop, not the library's GetUpdatesChan, which ignores retry_after,
// sleeps a fixed 3 s after errors, confirms updates before they are handled
// and leaks its goroutine. Each call waits up to [Config.PollTimeout] (30 s)
// on Telegram's side and is bound to Run's context through the HTTP
// client (the library takes no context), so Run returns within a second of
// its context ending, even mid-poll. A failed call is retried after an
// exponential backoff (0.5 s doubling to 30 s, jittered), or after exactly
// the retry_after of a 429; 401 ([ErrUnauthorized]) and 409
// ([ErrConflict]: another process polls with the same token) end Run. The
// offset moves only past updates handed to the engine, so none is lost or
// handled twice; an update that does not decode is skipped with a log line.
// Only one process may poll a bot at a time.
//
// # Receiving: webhook
//
// In [Webhook] mode Telegram POSTs each update to [WebhookConfig.URL]. Run
// listens on [WebhookConfig.Listen] with its own http.Server (never
// http.DefaultServeMux), registers the URL with setWebhook including the
// secret_token (v5.5.1's WebhookConfig has no field for it), and serves
// [Adapter.WebhookHandler], which refuses requests whose
// X-Telegram-Bot-Api-Secret-Token header is wrong with 403. To mount the
// handler in an existing server instead, leave Listen empty. Telegram
// requires HTTPS on ports 443, 80, 88 or 8443: put a TLS-terminating proxy in
// front of Listen.
//
// # Events
//
// Messages and channel posts become EventMessage, edits EventEditedMessage,
// inline button presses EventCallback (answered at once so the user's
// spinner stops), new and departing members EventMemberJoined and
// EventMemberLeft, one event per member; everything else is EventOther, with
// the *tgbotapi.Update in Raw. Chat and user IDs are Telegram's int64 IDs in
// decimal. "/cmd@ThisBot args" arrives as "/cmd args"; a command addressed to
// another bot is dropped.
//
// # Sending and limits
//
// Telegram allows a text of 4096 characters, counted in UTF-16 code units
// after markup is parsed. The adapter counts UTF-16 code units of the text
// as sent, markup included, which is never less, so its parts always fit;
// longer texts are split at line breaks, else spaces, else between
// characters, and sent in order (markup spanning a cut breaks: keep entities
// within a line). Captions are limited to 1024 characters and callback data
// to 64 bytes; longer ones are refused as permanent errors.
//
// Telegram limits a bot to about one message per second in a chat, 20 per
// minute in a group and 30 per second overall, and answers floods with 429
// and a retry_after that can reach hours. The adapter does not throttle: it
// returns a 429 as a platform retry-after error, which Herald's sender chain
// (Retry and RateLimit with Telegram's limits) honours. Errors are mapped
// for that chain: 429 is retry-after, other 4xx (a blocked bot, a missing
// chat, a bad request) are permanent, 5xx and network failures retryable; a
// group that became a supergroup is followed to its new chat once.
//
// The token is part of every request URL. No error returned and no line
// logged by this package contains it.
package telegram
