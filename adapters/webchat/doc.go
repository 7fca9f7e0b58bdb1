// Package webchat is Herald's local browser chat: an [Adapter] that serves an
// embedded chat page and a WebSocket endpoint, so that a bot can be tried in
// a browser with no account, token or configuration. It is the default
// platform of the example bot: `go run ./examples/bot` and open
// http://127.0.0.1:8080/.
//
// # Chats
//
// Each browser tab is a private chat ([platform.ChatPrivate]) of its own.
// The page gives the tab a random ID kept in sessionStorage, which a reload
// of the tab keeps and other tabs do not share, and keeps the chat's ID,
// chosen by the server on the tab's first visit, in localStorage under a
// key made from the tab's ID: a reload continues the tab's conversation,
// and a new tab starts a new one. (A browser's "duplicate tab" copies
// sessionStorage, so a duplicated tab continues its original's chat.) The
// user's ID and display name are kept in localStorage for the whole
// browser profile, so every tab speaks as the same user. The page forgets
// the chats of tabs unused for 30 days, and keeps at most 50.
// The query parameter ?room=NAME puts every tab that opens it into one group
// chat ([platform.ChatGroup]) with the ID "room:NAME" (see [RoomChatID]).
// The adapter keeps the last messages of each chat in memory and sends them
// to a tab when it connects, so a reload shows the conversation; history
// does not survive a restart of the process. Memory stays bounded: each
// chat keeps at most [Config.HistorySize] messages and
// [Config.HistoryBytes] bytes (attachments of up to 32 KiB included; a
// larger file is a reference of a few bytes, see Files), all chats
// together [Config.MaxHistoryBytes] bytes and, beyond the chats with open
// tabs, [Config.MaxChats] chats; the least recently used chats, then the
// oldest messages, are forgotten first.
//
// Anyone who can reach the page and knows a private chat's ID can join that
// chat: the adapter is meant for a bot's author on their own machine, and
// listens on 127.0.0.1 by default.
//
// # Delivery
//
// [Adapter.Sender] returns at once: a message is accepted when it has been
// added to the chat's history and queued for every open tab of the chat, and
// each tab's connection has a single writer that sends its queue in order,
// so the messages of a chat reach every tab in the order of the Send calls.
// A send to a chat with no open tab fails with [ErrNoConnection], which is
// not [platform.Permanent]: retry middleware tries again (a reloading tab is
// back within a second) and, when the tab stays closed, the send ends in the
// dead letters. A tab that cannot keep up with its queue
// ([Config.QueueSize] frames, [Config.QueueBytes] bytes) is disconnected
// rather than slowing the sender or holding memory; it reconnects and gets
// the missed messages from the history.
//
// What a tab that stops reading can hold is bounded three ways. In the
// adapter, its queue holds at most QueueBytes (or one larger frame), and
// the frames are mostly shared: one frame of a message for every tab of
// the chat, and a history frame made of the chat's kept messages, written
// piece by piece, never a copy per tab. In the kernel, each tab's socket
// has a send buffer of 64 KiB (which Linux doubles), where Linux would
// otherwise grow it to 4 MiB and take a whole large history in. In time,
// a frame is handed to the socket in pieces of at most 32 KiB, each within
// [Config.WriteTimeout]: a tab that has not taken a piece in time is
// closed, and its connection reset, so the kernel drops what it still held
// for it instead of trying to deliver it for minutes. A tab that takes a
// long history slowly but steadily gets all of it, and the server's pings
// go out between the pieces.
//
// A send with [platform.OutboundMessage] EditID set edits a bot message
// still kept in the chat's history: the history keeps the new text and
// buttons in the message's place, marked edited, only the new buttons
// produce callbacks, and every open tab gets an edit frame in order with
// the chat's other messages. An edit needs no open tab, since the tab shows
// the edited message when it connects; an edit of any other message fails
// for good with [ErrNoMessage]. A send with DeleteID set deletes a message
// from the history and from every open tab; a send with a reply keyboard
// shows it under the message box of the chat's tabs until a later message
// replaces or removes it. [Sender.Send] has the details.
//
// # Wire protocol
//
// The page talks to the adapter over one WebSocket at the path "ws" relative
// to the page ("/ws" when [Adapter.Handler] is served at the root). Each
// WebSocket message is one JSON object with a "type" field; binary messages
// are refused. Unknown fields are ignored.
//
// Client to server:
//
//	{"type":"hello","chat_id":"…","user_id":"…","name":"Ann","room":"…"}
//	{"type":"message","text":"/ping"}
//	{"type":"callback","data":"yes","message_id":"17"}
//	{"type":"name","name":"Ann B."}
//	{"type":"file","kind":"photo","file_name":"cat.png","mime":"image/png",
//	 "content":"base64…","caption":"my cat"}
//
// Every client frame may also carry "ref", a string of at most 64 bytes
// that the page chooses; an error frame that refuses the frame carries the
// same ref, so the page can tell which of its messages was refused (and,
// for busy and stopping, give its text back to the user).
//
// hello must be the first frame and may be sent once. With a non-empty room
// the tab joins the group chat "room:"+room and chat_id is ignored;
// otherwise it joins the private chat chat_id, or a new one when chat_id is
// empty. user_id is the tab's user, new when empty. IDs are 1 to 64 ASCII
// letters, digits, '-' or '_'; a room name is 1 to 64 letters, digits, '-',
// '_' or '.'; a name is at most 64 characters (control characters are
// removed; empty means "Guest"). message sends text (not blank, at most
// 16 KiB) as the tab's user; callback presses the button with the given data
// under the bot message message_id, which must still be in the chat's
// history with that button among its current ones (an edit may have
// replaced them); name changes the user's display name for later messages.
// file sends a file as the tab's user: kind is photo, document, video,
// audio, voice or animation, content the file's bytes in base64 (1 byte to
// [Config.MaxUpload]), caption at most 16 KiB, file_name and mime
// optional (a path in the name is dropped, a media type that does not
// parse is replaced by what the bytes look like). The bot gets a message
// whose Text is the caption and whose one attachment names the file by a
// FileID, which [Adapter.Download] fetches and a send can carry back; the
// chat's tabs get it as an echo. A file frame may be larger than
// [Config.ReadLimit]. Such a frame is read as it arrives, at most
// [Config.UploadSlots] at a time: its base64 is decoded straight into
// room reserved for the file in the adapter's file store (see Files), so
// the frame is never held whole; it must not stall for
// [Config.UploadStall] and must arrive whole within [Config.PongWait],
// or the tab is disconnected and its slot goes to the next file. One over
// ReadLimit that is not a file, or holds more than 128 KiB besides its
// content, closes the connection with 1009. With [Config.NoUploads] a
// file frame is refused.
//
// Server to client:
//
//	{"type":"history","chat":{"id":"…","type":"private","title":""},
//	 "user":{"id":"…","name":"Ann"},"bot":{"id":"bot","name":"Herald"},
//	 "max_text":16384,"max_upload":4194304,"keyboard":keyboard,
//	 "file_key":"…","messages":[message, …]}
//	{"type":"message","message":message}
//	{"type":"echo","message":message}
//	{"type":"edit","message":{"id":"17","text":"…","parse_mode":"HTML",
//	 "buttons":[[{"text":"Back","data":"back"}]],"edited":"2026-11-30T09:05:00Z"}}
//	{"type":"delete","message":{"id":"17"}}
//	{"type":"answer","answer":{"query_id":"press-3","message_id":"17","text":"Saved","alert":true}}
//	{"type":"action","action":"typing"}
//	{"type":"error","code":"busy","text":"…","ref":"…"}
//
// history answers hello: it confirms the chat and user IDs (the page stores
// them), says the longest text and the largest file (max_upload, left
// out when files are off) a tab may send, gives the chat's reply keyboard
// if one is up and the key the tab fetches the chat's files with
// (file_key, valid while this connection is open; see Files), and lists
// the chat's kept messages, oldest first. message is a bot
// message; echo is a user's message in the chat, sent to every tab of the
// chat including the author's, so all tabs show one order and a user's
// message always comes before the bot's replies to it. A message object is
//
//	{"id":"17","bot":true,"from":{"id":"bot","name":"Herald"},
//	 "text":"…","parse_mode":"HTML","reply_to":"16",
//	 "attachments":[{"kind":"photo","url":"…","data":"base64…","file":"…","size":4194304,
//	                 "mime":"image/png","file_name":"…","caption":"…"}],
//	 "buttons":[[{"text":"Yes","data":"yes"},{"text":"Docs","url":"https://…"}]],
//	 "keyboard":keyboard,
//	 "time":"2026-11-30T09:00:00Z","edited":"2026-11-30T09:05:00Z"}
//
// with empty fields left out. Message IDs are decimal strings, unique within
// the process. edited, the time of the message's last edit, is present on
// edited messages only; time stays the time it was first sent. An
// attachment's kind is one of platform's attachment kinds (photo,
// document, video, audio, voice, animation, sticker, video_note), and mime
// the type of its bytes. An attachment has one source: url, a link; data,
// the file's bytes, for a file of at most 32 KiB; or file, for a larger
// one, the reference the page fetches it by, with its size in bytes (see
// Files). A keyboard is a reply keyboard,
//
//	{"rows":[["Tea","Coffee"],["Water"]],"one_time":true,"placeholder":"…"}
//
// or its removal, {"remove":true}: a bot message with one shows it under
// the message box, replacing the one shown, or removes the one shown; its
// buttons send their text as a message frame.
//
// delete removes a message, the bot's or a user's, that the tab may show;
// it comes in order with the chat's other frames, and a history sent later
// lacks the message. The page ignores a deletion of a message it does not
// show.
//
// edit changes a bot message the tab has been sent (in the history or a
// message frame): its text, parse_mode and buttons become the edit's,
// where a missing parse_mode means plain text and missing buttons mean
// none, and its other fields (from, time, reply_to, attachments) stay;
// edited is the time of the edit. It comes in order with the chat's other
// frames, after the message it edits; a history sent later has the
// message already edited. The page ignores an edit of a message it does not
// show, as it ignores server frames of types it does not know, so frame
// types, like fields, can be added without breaking older pages.
//
// answer goes to the tab that pressed a button: the bot's answer to the
// press (an event whose QueryID is query_id), a passing notice or, with
// alert, one that stays until dismissed; an empty answer sends no frame.
// action is the bot's chat action ([Adapter.SendChatAction]) to every
// tab of the chat, shown for 5 s or until the bot's next message.
//
// error reports a frame the server refused, with the frame's
// ref if it had one; the connection stays open. Its codes are bad_json (not
// a JSON object), bad_frame (a field missing or invalid, or a binary
// message), unknown_type, not_joined (a frame before hello),
// already_joined (a second hello), unknown_button (no such button in the
// kept history), busy (the bot's event queue is full, or, for a file,
// the file store has no room for it at the moment; the frame was
// dropped, try again) and stopping (the bot is shutting down and takes no
// more messages; its pending replies still arrive). An error before the
// history answers hello means the hello was refused: the page shows it and
// does not retry.
//
// A frame larger than [Config.ReadLimit], other than a file frame, or a
// file frame larger than a file of MaxUpload bytes can make, closes the
// connection with status 1009 (message too big). The server closes with 1001 (going away) when it
// shuts down, with 1013 (try again later), right after the handshake and
// with a reason the page shows, a tab over [Config.MaxConnections], and
// drops a tab that falls too far behind, or stops taking its data, without
// a close frame (its socket may be full); the page reconnects with backoff
// in every case and reloads the history. The server pings
// every [Config.PingInterval] and drops a connection that has not answered
// within [Config.PongWait]; browsers answer pings by themselves.
//
// # Files
//
// A file larger than 32 KiB, a user's or the bot's, never travels in a
// frame: the adapter keeps it in its file store, the frames and the
// history carry a reference to it, and the page fetches it over HTTP:
//
//	GET file/REF?k=KEY
//
// relative to the page, where REF is the attachment's file and KEY the
// file_key of the tab's history frame. A 4 MiB file's echo and the bot's
// answer are then frames of a few hundred bytes, which no tab's queue has
// to hold, and the history keeps the messages whatever the size of their
// files. The answer is 404 Not Found, the same for every case, unless KEY
// is the key of a tab open now and REF names a file kept for that tab's
// chat: a reference works only for the tabs of its chat, and a key only
// while its tab's connection is open (a reconnected tab gets a new one).
// Both are 128 random bits. A message deleted ([Sender.Send] with
// DeleteID) takes its files' references with it. Images (but SVG),
// videos and audio go with their type, for the page to show; any other
// file as an octet stream to be saved; and every file with nosniff, a
// sandboxing Content-Security-Policy and a same-origin
// Cross-Origin-Resource-Policy, so that no file runs as a page of the
// chat's origin and no other site can embed one. Range requests (a
// video's seek) are answered. At most 16 files are sent at once (a
// request waits at most [Config.WriteTimeout] for its turn, else gets
// 503); each piece of 32 KiB must be taken within WriteTimeout and the
// whole within 2 minutes.
//
// The file store holds, all chats together, at most [Config.UploadBytes]:
// the files users sent (kept for [Adapter.Download] and for sending them
// again by FileID), the bot's files (kept once per content: a user's file
// echoed back is the same file), the room reserved for the files being
// read from tabs, and the forgotten files a tab is still fetching.
// Making room forgets the oldest files; the messages that showed a
// forgotten file keep their place, and the page says the file is no
// longer kept. Files over 32 KiB are kept on disk, each in a file no
// directory names, in [Config.FileDir] (the system's temporary directory
// by default), so they cost the process no memory, and nothing is left
// behind by a crash; a file being read from a tab is read into memory
// outside the Go heap (on Unix), given back once the file is on disk.
//
// # Limits and logs
//
// The server Run starts bounds what connections can hold: a request's
// header and body must arrive within 10 s each, keep-alive connections
// close after a minute idle, and it holds at most [Config.MaxConnections]
// + 32 connections, tabs included; at that cap a new connection makes
// room by closing the one that has waited longest without a request in
// progress, so a flood of idle connections, or of connections that never
// send a request, cannot keep a real tab out.
//
// Whatever a tab or request can repeat at will — bad frames, refused
// origins and Host names, messages refused for a full event buffer, tabs
// disconnected for being too slow or refused over MaxConnections, failed
// connections — is logged through a rate limit: the first line of each
// kind at once, then at most one per 10 s, which carries a "suppressed"
// field with the number left out. A thousand bad frames write one line.
//
// # Security
//
// The adapter guards a chat on a loopback address against the pages of
// other sites open in the same browser. With DNS rebinding, a page of
// evil.example makes its name resolve to 127.0.0.1; its requests then
// reach the adapter with Host and Origin both naming evil.example, which a
// same-origin check alone accepts. So a request that arrives on a loopback
// address (every request, when Run listens on one, as with the default
// Addr) must name in its Host header localhost, a loopback IP address such
// as 127.0.0.1 or [::1] (any port), or a host of [Config.AllowedOrigins];
// the page, its files and the WebSocket answer any other Host with 403
// Forbidden. On other addresses (Addr ":8080", to be reachable from other
// machines) there is no Host check: anyone who can reach the port can
// chat.
//
// The WebSocket accepts browser connections only from the page's own origin
// unless [Config.AllowedOrigins] says otherwise (others get 403 Forbidden);
// clients that send no Origin header, which browsers always send, are
// accepted. The page loads nothing from other sites, sends a strict
// Content-Security-Policy, and renders HTML and Markdown text through an
// allow-list of tags, so a bot that echoes user input cannot inject script.
package webchat
