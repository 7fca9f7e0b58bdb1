// Package onebot is Herald's OneBot v11 adapter: it connects Herald to QQ
// bots run by OneBot implementations (go-cqhttp, NapCat, Lagrange, …) over
// WebSocket, turning their events into [platform.Event]s, sending replies
// with the send_private_msg and send_group_msg actions and deleting
// messages with delete_msg.
//
// # Connections
//
// In [Reverse] mode (the default) the implementation dials Herald: serve
// [Adapter.Handler], or set [Config.Listen] and let [Adapter.Run] serve it,
// and point the implementation's Universal reverse WebSocket at it, e.g.
// ws://127.0.0.1:6701/onebot/v11/ws. Several bot accounts may connect at
// once, each identified by its X-Self-ID header. In [Forward] mode Herald
// dials the implementation's WebSocket server ([Config.URL]) and redials
// with capped, jittered exponential backoff; the bot's self ID is learnt
// from the lifecycle connect event. Both modes use one connection for events
// and actions; the access token is checked (reverse) or sent (forward) as
// the OneBot specification says.
//
// Each connection has one reader and one writer goroutine, pings the
// implementation every [Config.PingInterval], drops frames larger than
// [Config.ReadLimit] by closing, and skips malformed frames with a log line
// (rate limited, as are all lines a peer can cause per frame, event or
// request: see [Config.Logger]).
//
// # Events
//
// Private messages have a chat of type private whose ID names the user,
// group messages one of type group whose ID names the group; IDs have the
// form "<self_id>:<id>" so that they stay unambiguous with several bots
// connected (see [ChatID]). The message, which may arrive as a CQ-code
// string or as an array of segments, becomes Text (its text segments,
// unescaped), ReplyToID (its reply segment) and Attachments (its image,
// record, video and file segments: photos and stickers, voice messages,
// videos, documents, each with the file name it can be sent again by and
// the URL, name and size the implementation gives); the decoded [*Event],
// with every segment and the original JSON, is in Raw. Members joining or leaving
// a group become member events; other notices and requests are
// [platform.EventOther]. Heartbeat and lifecycle meta events are handled by
// the adapter and not passed on.
//
// # Sending, and duplicates
//
// See [Adapter.Sender] for how a [platform.OutboundMessage] maps onto
// segments (OneBot has no buttons and no Markdown; mentions need
// [Config.CQCodeText]): photos, stickers and GIFs go as images, videos as
// videos, voice notes and audio as records, documents by URL as links,
// and a deletion as delete_msg. What OneBot v11 cannot carry is refused
// with a permanent error wrapping [platform.ErrUnsupported]: edits, reply
// keyboards, video notes, and documents as bytes or by file ID.
//
// WARNING: retries can post a message twice. OneBot implementations
// sometimes answer "failed" for a send they did deliver (go-cqhttp's
// retcode 100 under risk control), and a send that gets no response in
// time (within [Config.ActionTimeout], or before its context ends), or
// whose connection drops after its action was written, may have been
// delivered as well. The adapter cannot tell; such errors, and only such,
// match [platform.ErrMaybeDelivered] ([ErrMaybeDelivered] is the same
// value). By default they are retryable, as OneBot v11 has it (only
// retcodes 1400, 1401, 1403 and 1404 are permanent), so the retry
// middleware sends again and the chat may see the message twice: at least
// once. Set [Config.AvoidDuplicates] to make them [platform.Permanent]
// instead: they then go to the dead letters, where a person can check and
// replay them, and no message is posted twice, at the risk of one that was
// in fact never delivered: at most once.
package onebot
