// Package telegram is Herald's adapter for the Telegram Bot API, built on
// github.com/go-telegram-bot-api/telegram-bot-api/v5 (v5.5.1) and working
// around that library's traps.
//
// [New] makes an [Adapter] from a [Config]; it does no network I/O. The
// adapter implements platform.Adapter: [Adapter.Run] receives updates and
// hands them to the engine as platform.Events, and
// [Adapter.Sender] sends replies. Tests point [Config.APIEndpoint] at the
// fake server of package telegramtest.
//
// # Receiving: long polling
//
// Polling (the default) needs no public address. Run calls
// getUpdates in its own loop, not the library's GetUpdatesChan, which
// ignores retry_after, sleeps a fixed 3 s after errors, confirms updates
// before they are handled and leaks its goroutine. Each call waits up to
// [Config.PollTimeout] (30 s) on Telegram's side and is bound to the run's
// context through the HTTP client (the library takes no context), so
// Run returns within a second of being told to stop, even
// mid-poll (plus the confirming call described below, when updates are
// left to confirm). A failed call is retried after an exponential backoff
// (0.5 s doubling to 30 s, jittered), or after exactly the retry_after of
// a 429; 401 ([ErrUnauthorized]) ends the run, and so does 409
// ([ErrConflict]: another process polls with the same token) when it
// comes three times within a minute — a single one is what a process
// paused while it polled (a gateway whose lease passed on) causes when it
// resumes and polls once more before it stops. Only one process may poll a bot
// at a time.
//
// The getUpdates offset confirms updates to Telegram, and it moves only
// past updates the engine took. When the engine refuses an event (the
// chat's inbound queue is full, or it is stopping), the rest of the batch
// waits: the offset stays at that update, and after a pause (1 s, doubling
// to 16 s while the same update is refused) the next poll gets it again
// with those after it. Updates are confirmed as the run goes: after a
// batch, the next getUpdates has timeout 0 and is answered at once, so the
// batch is known to be confirmed before the adapter waits in a long poll.
// When the run stops, the updates taken since the last answered poll are
// confirmed with one short call, bounded by what is left of the engine's
// shutdown timeout (platform.Inbound's Stop); not after ErrConflict
// or ErrUnauthorized, as that call would end the long poll of the process
// that won. getUpdates is trusted: the offset becomes the last
// returned update's ID plus one even when that is lower than before, as
// after Telegram starts update IDs afresh following a week without updates
// (go-telegram-bot-api issue #156); true repeats are dropped by a window of
// the last 1024 update IDs taken. An update that does not decode is skipped
// with a log line.
//
// # Receiving: webhook
//
// In [Webhook] mode Telegram POSTs each update to [WebhookConfig.URL].
// Run listens on [WebhookConfig.Listen] with its own http.Server
// (never http.DefaultServeMux), registers the URL with setWebhook including
// the secret_token (v5.5.1's WebhookConfig has no field for it) and
// max_connections, and serves [Adapter.WebhookHandler], which refuses
// requests whose X-Telegram-Bot-Api-Secret-Token header is wrong with 403.
// An update is answered 200 once the engine took it, and 503 when the
// engine refused it, so Telegram sends it again; an update Telegram sends
// again after it was taken (after a timeout) is dropped. With
// [WebhookConfig.MaxConnections] 1, the default, Telegram sends one update
// at a time, so they arrive in order; more connections are faster but may
// reorder a chat's updates. The run's server bounds a request's header
// and body (10 s each: a stalled body is cut), idle connections (60 s)
// and open connections (256, the idle ones closed first to make room),
// and the handler reads at most 16 MiB of large bodies at once, answering
// the others 503 with Retry-After (see [Adapter.WebhookHandler]). To mount
// the handler in an existing server instead, leave Listen empty. Telegram
// requires HTTPS on ports 443, 80, 88 or 8443: put a TLS-terminating proxy
// in front of Listen. [Adapter.Stats] counts the updates taken, dropped as
// duplicates, refused and skipped, and the webhook requests refused.
//
// # Guarantees
//
// Every update is handed to the engine once, whole, in Telegram's order,
// however often the engine refuses it: within a run, and across runs of
// one Adapter, whose offset and window of taken update IDs outlive a run.
// An update of several events (several new members) that the engine took
// in part is resumed after the events taken. Two cases fall outside, where
// an update may be handed on again, never lost: after a crash, a run ended
// by ErrConflict or ErrUnauthorized, or a confirming call that failed or
// outlasted the shutdown timeout, the updates taken since the last
// answered poll (at most the batch being handed on, 100, and for one round
// trip after it those just handed on) were not confirmed and go to the
// next process that polls; and in webhook mode Telegram may
// repeat an update after more than 1024 others, when it is forgotten.
// Order holds per chat in polling mode and, with MaxConnections 1, in
// webhook mode.
//
// # Events
//
// Every update is decoded from the JSON Telegram sent with Herald's own
// types, which read only the fields the adapter maps, so no update of Bot
// API 10.2, nor one of a kind or with fields added later, is dropped or
// fails to decode for what it carries; every event's Raw is the update's
// JSON as Telegram sent it (a json.RawMessage, kept when the journal
// stores the event), so a handler can read any field of it. By default
// the adapter asks for every update type ([UpdateTypes]), chat_member and
// reactions included, which Telegram sends only when asked. The kinds:
//
//   - Messages, channel posts and business messages become EventMessage,
//     with their files as Attachments (photos with all their sizes,
//     documents, animations, videos, video notes, audio, voice notes,
//     stickers: file ID, name, MIME type, size, dimensions, duration,
//     caption), which [Adapter.Download] fetches within a size limit;
//     their edits EventEditedMessage. A message in a forum topic carries
//     the topic in Chat.Thread (its first message, which every message of
//     the topic replies to, is not taken as ReplyToID), and a business
//     message its connection in Chat.BusinessConnectionID: a reply to the
//     event lands in the topic, through the connection. From's
//     LanguageCode is the user's language_code.
//   - Inline button presses are EventCallback with the callback query's
//     ID in QueryID, answered by [Adapter.AnswerCallback] (the handler's
//     answer, or the engine's empty one when the handling ended) or, when
//     nothing answered within 10 s, by the run itself, so the user's
//     button never spins for long; inline queries EventInlineQuery,
//     answered with [Adapter.AnswerInline], and chosen inline results
//     EventInlineResult.
//   - New and departing members (service messages) are EventMemberJoined
//     and EventMemberLeft, one event per member; chat_member updates
//     EventMemberUpdated; the bot's own membership (my_chat_member)
//     EventBotBlocked, EventBotUnblocked (private chats), EventBotAdded,
//     EventBotRemoved (groups and channels) or EventBotMemberChanged; join
//     requests EventJoinRequest, answered with [Adapter.AnswerJoinRequest].
//   - Reactions are EventReaction (a user's, old and new) and
//     EventReactionCount (anonymous ones).
//   - Payments: pre-checkout queries are EventPreCheckout, answered with
//     [Adapter.AnswerPreCheckout] or, when nothing answered within 8 s,
//     refused by the run (Telegram cancels the payment after 10 s anyway,
//     and the user is told why); successful and refunded payments
//     EventPayment and EventRefund, with the charge ID
//     [Adapter.RefundStarPayment] takes.
//   - Business connections are EventBusinessConnection, and messages
//     deleted from a business account's chats EventMessagesDeleted.
//   - Everything else (shipping queries, paid media purchases, polls and
//     poll answers, boosts, guest messages, managed bots, subscriptions,
//     and kinds newer than 10.2) is EventOther, with the chat, user,
//     query ID and payload the update names, and Raw.
//
// Chat and user IDs are Telegram's int64 IDs in decimal. "/cmd@ThisBot
// args" arrives as "/cmd args"; a command addressed to another bot is
// dropped. Every event's Platform is the adapter's name, [Config.Name], so
// one engine can run several bots.
//
// # Sending and limits
//
// Telegram allows a text of 4096 characters, counted in UTF-16 code units
// after markup is parsed. The adapter counts UTF-16 code units of the text
// as sent, markup included, which is never less, so its parts always fit.
// A longer text is split at line breaks, else spaces, else between
// characters; in HTML only where no element is open and never inside a
// tag or character reference, in legacy Markdown only where no entity
// (*bold*, _italic_, `code`, ```pre```, [text](url)) is open. Only when no
// such place fits (an element longer than 4096 characters) does a cut fall
// inside markup, and Telegram then refuses the parts it breaks. Captions
// are limited to 1024 characters and callback data to 64 bytes; longer
// ones are refused as permanent errors.
//
// Telegram limits a bot to about one message per second in a chat, 20 per
// minute in a group and 30 per second overall, and answers floods with 429
// and a retry_after that can reach hours. The adapter returns a 429 as a
// platform retry-after error, which Herald's sender chain (Retry and
// RateLimit with Telegram's limits) honours. Errors are mapped for that
// chain: 429 is retry-after, other 4xx (a blocked bot, a missing chat, a
// bad request) are permanent, 5xx and network failures retryable; a group
// that became a supergroup is followed to its new chat once.
//
// A send that failed after its request was written (the connection reset,
// no answer before the deadline, a 5xx or a proxy's error page) may have
// been delivered, and its error matches platform.ErrMaybeDelivered. It
// stays retryable, so through the sender chain a reply is delivered at
// least once, possibly twice; with [Config.AvoidDuplicates] it is
// permanent and goes to the dead letters instead, so a reply is delivered
// at most once. A failure before the request was written (a refused dial,
// DNS, a context that ended first) is retried either way, and edits, which
// a repeat cannot duplicate, are never ambiguous.
//
// The parts of a long message are one send to the chain, which must not
// retry it once part 1 was delivered. So Send paces the later parts itself
// (1 s apart in a private chat, 3 s in a group or channel, less when the
// send's deadline leaves less room), retries a failing later part itself
// (a 429 waited out exactly if the deadline allows, a 5xx backed off, 4
// attempts in all), and if it still fails returns a permanent error naming
// the part and saying the earlier parts were delivered: it is
// dead-lettered, never sent again whole by Retry. With sender.Default's
// 10 s per-attempt timeout, a text of more than about 10 parts in a private
// chat, or 4 in a group, is paced tighter than Telegram's limits; raise
// DefaultConfig.Timeout if a bot sends such texts often.
//
// # Topics, business accounts and send options
//
// A send goes to its target's topic ([platform.Chat] Thread, as
// message_thread_id) and through its business connection
// (BusinessConnectionID, as business_connection_id); an event carries
// both in its Chat, so a reply to it lands where it came from, while
// queues and rate limits stay per chat. A message's send options become
// Telegram's parameters: Reply (reply_parameters: replies to and quotes of
// a message, also in another chat), LinkPreview (link_preview_options),
// Silent (disable_notification), Protected (protect_content), EffectID
// (message_effect_id), PaidBroadcast (allow_paid_broadcast) and Entities.
// Herald builds every request's parameters itself, so nothing is ever
// sent as "null" (v5.5.1's configs send empty entities and
// caption_entities so).
//
// # Reactions, payments, membership, method calls
//
// A message with ReactID sets the bot's reaction (setMessageReaction). One
// with an Invoice is a sendInvoice, in Telegram Stars unless it says
// otherwise; [Adapter.AnswerPreCheckout] answers the pre-checkout query
// (once: the run refuses one nothing answered within 8 s, as it answers
// button presses) and [Adapter.RefundStarPayment] refunds a payment.
// [Adapter.AnswerJoinRequest] approves or declines a join request. A
// message with Call ([platform.CallMethod]) calls any Bot API method by
// name through the sender chain, and its result's Raw is Telegram's
// answer.
//
// # Streamed replies and the commands menu
//
// The adapter is a [platform.StreamingAdapter]: a [platform.Stream] to a
// private chat grows as a message draft (sendMessageDraft) and ends as
// one message; to a group or channel, or with [Config.NoDrafts], or once
// Telegram refused a draft, its first part sends a message and the later
// ones edit it, paced by [Adapter.StreamInterval] (1 s, 3 s in groups)
// within Telegram's budget, each showing only text whose markup is
// closed. [Adapter.SetCommands] sends the commands menu (setMyCommands),
// unless [Config.NoCommandMenu].
//
// # Media, keyboards, deletions and chat actions
//
// Every kind of file goes out with its own method, by URL, file ID or
// upload, and several as one album (sendMediaGroup), which Herald's rate
// limiter counts as its parts (platform.OutboundMessage Cost). A message
// carries inline buttons or a reply keyboard (or its removal). A message
// with DeleteID deletes one. [Adapter.SendChatAction] shows "typing" and
// the other chat actions, which the engine's Context.ChatAction repeats
// every 4 s while a handler works.
//
// # Editing messages
//
// A message with EditID set edits the bot's earlier message in the chat
// (editMessageText; a nil Buttons removes its keyboard), and Context.Edit
// of Herald's engine sends one, so a button's handler can update the menu
// it sits under. An edit that changes nothing counts as done; a photo's or
// document's caption is edited instead of a text it does not have; a text
// over 4096 characters is refused before any request, since an edit cannot
// be split; a message not found or no longer editable is a permanent
// error, a 429 a retry-after error; a group that became a supergroup is not
// followed, as its messages are numbered afresh. See [Adapter.Send].
//
// The token is part of every request URL. New accepts only tokens of the
// form @BotFather gives; no error returned (New's included), no
// APIError's Description and no line logged by this package contains the
// token, in any escaping, or the webhook's secret token, even where an
// answer, a configured URL or a path quotes them.
package telegram
