// Package adaptertest is the conformance suite every Herald platform adapter
// passes: one set of tests, run by [TestAdapter], that checks a
// [platform.Adapter] and its [platform.Sender] against the contracts in
// package platform, the way Watermill's tests.TestPubSub checks every
// Pub/Sub. It is a test-helper library like net/http/httptest: it is
// imported only from _test.go files, and it imports nothing but the
// standard library and package platform.
//
// # Usage
//
// An adapter's package provides a [Harness]: a function that, for one
// subtest, builds a new adapter wired to a new fake peer (a fake Telegram
// server, a WebSocket client playing a browser tab, a fake OneBot
// implementation, all on 127.0.0.1) and returns the [Peer] through which
// the suite drives that fake. It calls TestAdapter with the harness and a
// [Features] value that says what the platform cannot do:
//
//	func TestConformance(t *testing.T) {
//		adaptertest.TestAdapter(t, func(t *testing.T) adaptertest.Peer {
//			srv := fake.NewServer()
//			t.Cleanup(srv.Close)
//			a, err := myadapter.New(myadapter.Config{Endpoint: srv.URL()})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return &peer{srv: srv, a: a}
//		}, adaptertest.Features{NoButtons: true})
//	}
//
// # What the suite checks
//
// Each subtest gets a fresh adapter and peer. The suite itself calls
// [platform.Adapter.Run] in a goroutine it owns, waits for [Peer.Ready], and
// when the subtest ends cancels Run's context and waits for Run to return,
// so no goroutine of the suite outlives the subtest of a conforming adapter.
// It checks that:
//
//   - Name is not empty and does not change, and every event carries it;
//   - Run delivers what users say, once each, in order for each chat and
//     user, with the right Kind, Chat, From and Text (markup, CQ codes and
//     emoji included, unchanged), a unique ID, a MessageID and the
//     current time;
//     handle is never called concurrently with itself;
//   - Run returns nil within 5 seconds of its context ending, even while
//     users keep talking or when the context had ended before Run was
//     called, and handle is not called after it returned;
//   - once Run's Inbound.Receiving closes, no event reaches Handle, sends
//     still arrive, and Run, if it returns before its context ends,
//     returns nil;
//   - Send delivers a text unchanged and returns a SendResult with the
//     chat's ID, a MessageID (unless [Features.NoMessageID]) and the time;
//   - an event's Chat works as a send's target as it is, and an answer
//     with ReplyToID set to the event's MessageID arrives as a reply;
//   - 50 sequential sends to a chat arrive in order, sequential sends to
//     many chats made concurrently all arrive, each chat's in order, and
//     concurrent sends to one chat all arrive, once each;
//   - parse modes, inline buttons, photos and long texts arrive as sent, as
//     far as the platform has them;
//   - an edit (EditID) returns a result naming the edited message, changes
//     its text and buttons in place as a [ShowingPeer] shows the chat, and
//     fails for good for a message that does not exist; on a platform
//     without edits ([Features.NoEdit]) it is refused with a permanent
//     error wrapping [platform.ErrUnsupported];
//   - Send refuses an invalid message with a [platform.IsPermanent] error
//     wrapping [platform.ErrInvalidMessage], and nothing reaches the peer;
//     the Sender refuses it as permanent before Run too, and after Run it
//     still answers promptly;
//   - Send with a cancelled or expired context fails at once with an error
//     wrapping the context's error, and nothing reaches the peer; a send the
//     peer holds up returns within 5 seconds of its context's end;
//   - every attachment kind arrives with its bytes and caption, an album
//     of three photos arrives in order, a deletion (DeleteID) removes
//     the message, and a reply keyboard and its removal arrive as sent;
//     on a platform without one of them ([Features.UnsupportedMedia],
//     [Features.NoAlbum], [Features.NoDelete],
//     [Features.NoReplyKeyboard]) it is refused with a permanent error
//     wrapping [platform.ErrUnsupported];
//   - a file a user sends ([FilePeer]) arrives as an event attachment
//     that the adapter's [platform.Downloader] fetches whole and refuses
//     with [platform.ErrFileTooLarge] under a smaller limit; a button
//     press ([PressPeer]) arrives with a QueryID and the
//     [platform.CallbackAnswerer]'s answer reaches the peer; "typing"
//     through the [platform.ChatActor] succeeds and reaches an
//     [ActionPeer]; an inline query and a chosen result ([InlinePeer])
//     arrive as events and the [platform.InlineAnswerer]'s answer reaches
//     the peer; an adapter without one of these (see [Features]) refuses
//     it with [platform.ErrUnsupported], if it has the method at all;
//   - a message said in a topic of a group ([TopicPeer]) arrives with the
//     topic in Chat.Thread and no reply to the topic's root, and a reply to
//     its Chat lands in the topic; on a platform without topics
//     ([Features.NoTopics]) a send with a Thread still arrives;
//   - the bot's reaction to a message, and its removal, reach a
//     [ReactionPeer], and a user's reaction arrives as an EventReaction;
//     without reactions ([Features.NoReactions]) one is refused with
//     [platform.ErrUnsupported];
//   - a reply streamed with [platform.Stream] (paced by the adapter's
//     StreamInterval when it is a [platform.StreamingAdapter], else its
//     final part only) ends as exactly one message with the whole text;
//   - failures the peer answers with map onto the platform's error kinds:
//     a refusal is permanent, a flood limit is a retry-after error with the
//     requested wait, a temporary failure is neither; the failed message is
//     not delivered, other chats are not affected and the next send works.
//
// Each check that needs something a fake cannot do, or a platform does not
// have, is skipped when Features says so (see each field's doc).
//
// The package's own tests run the suite against an in-memory fake and
// against variants of it that each break one rule (reordered sends, an
// ignored context, a lost retry-after, handle called after Run returned,
// duplicated events, …), and check that the suite fails each, naming the
// problem.
//
// Waits for deliveries are bounded by 30 seconds, and "promptly" means
// within 5 seconds: generous for a loaded machine running with -race, yet
// far shorter than the stalls the suite injects (an hour).
package adaptertest
