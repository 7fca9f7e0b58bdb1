package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Harness builds, for one subtest, a new adapter wired to a new fake peer,
// and returns the [Peer] that drives them. [TestAdapter] calls it once per
// subtest, from the subtest's goroutine, with the subtest's t.
//
// The adapter must not be running: the suite calls its Run. Everything the
// harness starts (servers, connections, goroutines) must stop through
// t.Cleanup; the suite registers its own cleanups after the harness
// returns, so they run first (t.Cleanup runs in last-in, first-out order)
// and Run has returned by the time the harness's cleanups run. The harness
// may call t.Fatal when it cannot build the peer.
type Harness func(t *testing.T) Peer

// Peer is the fake platform on the other side of one adapter: it plays the
// users who talk to the bot, records what the bot sent, and fails sends on
// request. The suite numbers users and chats with small integers, and the
// peer maps them onto the platform's IDs.
//
// Methods that take a context must return when it ends, with an error
// wrapping its error. All methods must be safe for concurrent use; the
// suite calls Received and Say from several goroutines at once, for
// different chats.
type Peer interface {
	// Adapter returns the adapter under test, the same value at every
	// call. It is not running when the harness returns it.
	Adapter() platform.Adapter

	// Ready waits until the adapter, whose Run the suite has started, is
	// connected to the peer: events said from now on reach Run, and sends
	// to the chats Chat returns can succeed. A peer that dials the adapter
	// (a browser tab, a OneBot implementation in reverse mode) dials here,
	// retrying until Run accepts it.
	Ready(ctx context.Context) error

	// User returns user n (n ≥ 0). Different n give users with different
	// IDs; a non-empty Name must be the name the adapter's events give
	// the user, and the suite then checks it.
	User(n int) platform.User

	// Chat returns chat n of type typ ([platform.ChatPrivate], or
	// [platform.ChatGroup] unless [Features.NoGroups]), ready to receive
	// messages: a peer whose chats exist only while a client is in them
	// (a web chat tab) opens one here. The private chat n is the one
	// between the bot and User(n), and only that user speaks in it.
	// Different (n, typ) give different chats; the ID, the type and a
	// non-empty Title must be what the adapter's events carry for the
	// chat. The suite calls Chat after Ready.
	Chat(ctx context.Context, n int, typ platform.ChatType) (platform.Chat, error)

	// Say makes from send the plain text message text to chat now, as a
	// user of the platform would (the platform's message carries the
	// current time); the adapter's Run is to deliver it as an
	// [platform.EventMessage]. Messages one user says in one chat must
	// reach the adapter in the order of the Say calls. Say returns once
	// the peer has passed the message on; after Run has stopped it may
	// fail.
	Say(ctx context.Context, chat platform.Chat, from platform.User, text string) error

	// Received waits until the peer has received at least n messages from
	// the bot in chat, and returns all the messages it has received there,
	// in the order it received them, read back into OutboundMessages as
	// far as the platform carries them: the text, the parse mode, the
	// buttons, and photos as attachments with their URL or bytes and
	// caption. A platform that shows a caption as text may leave it in
	// Text. A send the peer failed or held up (see Inject) is not
	// received. If ctx ends first, Received returns what it has with an
	// error.
	Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error)

	// Inject makes the peer answer the next send to chat with f, once;
	// later sends to chat, and sends to other chats, are not affected. A
	// peer that cannot inject f's kind returns an error wrapping
	// [ErrUnsupported]; [Features] then says so and the suite does not ask.
	Inject(chat platform.Chat, f Fault) error
}

// ShowingPeer is a [Peer] that can also show a chat as its users see it
// now, with edits applied: the suite's edit check then verifies that an
// edit changed the message in place. Peers of platforms that can edit
// messages should implement it; [Inbox] does most of the work.
type ShowingPeer interface {
	Peer
	// Shown returns the messages the peer has received in chat, in the
	// order it received them, each as it shows now: with the text, parse
	// mode and buttons of its latest edit. Edits are not messages of their
	// own.
	Shown(ctx context.Context, chat platform.Chat) ([]platform.OutboundMessage, error)
}

// ErrUnsupported is wrapped by the errors of a [Peer.Inject] that cannot
// inject the fault asked for.
var ErrUnsupported = errors.New("adaptertest: fault not supported by this peer")

// FaultKind says how a peer fails a send; see [Fault].
type FaultKind int

// The kinds of fault a peer can inject, and the error kind the adapter
// must map each to.
const (
	// FaultPermanent: the peer refuses the message for good, as Telegram
	// answers 403 for a bot the user blocked. Send must fail with a
	// [platform.IsPermanent] error.
	FaultPermanent FaultKind = iota + 1

	// FaultRetryAfter: the peer refuses the message under flood control
	// and asks to wait Fault.RetryAfter, as Telegram answers 429 with
	// retry_after. Send must fail with an error for which
	// [platform.RetryAfterOf] reports exactly that wait.
	FaultRetryAfter

	// FaultTransient: the peer fails the send with an error that may go
	// away, as a 500 does. Send must fail with an error that is neither
	// permanent nor a retry-after.
	FaultTransient

	// FaultStall: the peer holds the send up and never answers it (the
	// suite's contexts end first); the message is not delivered. Send
	// must return once its context ends.
	//
	// The stall belongs to the next Send call for the chat, not to the
	// next request that reaches the peer: the suite may end that Send's
	// context before its request arrives (on a loaded machine, before the
	// adapter wrote it), and a stall still armed then would hold up the
	// following send, which the suite expects to go through. A peer can
	// bind it by wrapping the adapter's Sender, as the repository's
	// telegram and onebot peers do, and hold every request of that send.
	FaultStall
)

// String returns the kind's name, such as "permanent".
func (k FaultKind) String() string {
	switch k {
	case FaultPermanent:
		return "permanent"
	case FaultRetryAfter:
		return "retry-after"
	case FaultTransient:
		return "transient"
	case FaultStall:
		return "stall"
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// Fault is a failure a [Peer] injects into one send. It is a plain value.
type Fault struct {
	// Kind is the kind of failure.
	Kind FaultKind
	// RetryAfter is the wait a FaultRetryAfter asks for; the suite uses
	// whole seconds, which every platform can express. Other kinds ignore
	// it.
	RetryAfter time.Duration
}
