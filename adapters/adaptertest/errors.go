package adaptertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// expectOnly checks that chat received exactly one message, text: the
// sends before it failed and delivered nothing.
func (e *env) expectOnly(chat platform.Chat, text string) {
	e.t.Helper()
	if got := texts(e.received(chat, 1)); !slices.Equal(got, []string{text}) {
		e.t.Errorf("chat %s received %q; want only %q (nothing from the failed sends)", chat.ID, got, text)
	}
}

// testInvalid sends invalid messages: each must fail promptly with a
// permanent error wrapping platform.ErrInvalidMessage, and reach no one.
func testInvalid(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	invalid := []struct {
		name string
		msg  platform.OutboundMessage
	}{
		{"empty", platform.OutboundMessage{}},
		{"unknown parse mode", platform.OutboundMessage{Text: "x", ParseMode: "BBCode"}},
		{"button without action", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "b"}}}}},
		{"photo without source", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto}}}},
	}
	for _, chat := range e.chats(0) {
		for _, tc := range invalid {
			ctx, cancel := e.ctx(patience)
			r := e.send(ctx, chat, tc.msg, promptly)
			cancel()
			switch {
			case r.err == nil:
				t.Errorf("chat %s: Send of an invalid message (%s) succeeded: %+v", chat.ID, tc.name, r.res)
			case !platform.IsPermanent(r.err):
				t.Errorf("chat %s: Send of an invalid message (%s) = %v; want a permanent error", chat.ID, tc.name, r.err)
			case !errors.Is(r.err, platform.ErrInvalidMessage):
				t.Errorf("chat %s: Send of an invalid message (%s) = %v; want it to wrap platform.ErrInvalidMessage", chat.ID, tc.name, r.err)
			}
		}
		e.mustSend(chat, platform.TextMessage("after the invalid ones"))
		e.expectOnly(chat, "after the invalid ones")
	}
}

// testCanceled sends with a context already cancelled: Send must fail at
// once with an error wrapping context.Canceled and deliver nothing.
func testCanceled(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := e.send(ctx, chat, platform.TextMessage("never sent"), promptly)
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("chat %s: Send with a cancelled context = %+v, %v; want an error wrapping context.Canceled", chat.ID, r.res, r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the cancelled one"))
		e.expectOnly(chat, "after the cancelled one")
	}
}

// testDeadlineExceeded sends with a context past its deadline: Send must
// fail at once with an error wrapping context.DeadlineExceeded and deliver
// nothing.
func testDeadlineExceeded(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		r := e.send(ctx, chat, platform.TextMessage("never sent"), promptly)
		cancel()
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("chat %s: Send past its deadline = %+v, %v; want an error wrapping context.DeadlineExceeded", chat.ID, r.res, r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the expired one"))
		e.expectOnly(chat, "after the expired one")
	}
}

// testCancelInFlight cancels a send the peer holds up: Send must return
// promptly with an error wrapping context.Canceled, and the message must
// not be delivered.
func testCancelInFlight(t *testing.T, h Harness, f Features) {
	if f.NoStall {
		t.Skip("Features.NoStall: Send does not wait for the peer")
	}
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		e.inject(chat, Fault{Kind: FaultStall})
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(stallCancelAfter, cancel)
		r := e.send(ctx, chat, platform.TextMessage("held up"), stallCancelAfter+promptly)
		timer.Stop()
		cancel()
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("chat %s: Send held up by the peer, then cancelled = %+v, %v; want an error wrapping context.Canceled",
				chat.ID, r.res, r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the held-up one"))
		e.expectOnly(chat, "after the held-up one")
	}
}

// testDeadlineInFlight lets a send the peer holds up reach its deadline:
// Send must return promptly with an error wrapping
// context.DeadlineExceeded, and the message must not be delivered.
func testDeadlineInFlight(t *testing.T, h Harness, f Features) {
	if f.NoStall {
		t.Skip("Features.NoStall: Send does not wait for the peer")
	}
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		e.inject(chat, Fault{Kind: FaultStall})
		ctx, cancel := context.WithTimeout(context.Background(), stallCancelAfter)
		r := e.send(ctx, chat, platform.TextMessage("held up"), stallCancelAfter+promptly)
		cancel()
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("chat %s: Send held up by the peer past its deadline = %+v, %v; want an error wrapping context.DeadlineExceeded",
				chat.ID, r.res, r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the held-up one"))
		e.expectOnly(chat, "after the held-up one")
	}
}

// testSendAfterRun checks that the Sender still answers after Run has
// returned: an invalid message is refused as permanent, and a valid one
// returns promptly, delivered or not.
func testSendAfterRun(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	e.stop()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if r := e.send(ctx, chat, platform.OutboundMessage{}, promptly); !platform.IsPermanent(r.err) {
		t.Errorf("Send of an empty message after Run returned = %v; want a permanent error", r.err)
	}
	e.send(ctx, chat, platform.TextMessage("after Run"), promptly) // may fail: not connected
}

// testFaultPermanent has the peer refuse a message for good: the error
// must be permanent.
func testFaultPermanent(t *testing.T, h Harness, f Features) {
	if f.NoPermanentFailure {
		t.Skip("Features.NoPermanentFailure: the peer cannot refuse a message")
	}
	testFault(t, h, f, Fault{Kind: FaultPermanent}, func(err error) string {
		switch _, ra := platform.RetryAfterOf(err); {
		case !platform.IsPermanent(err):
			return "want a permanent error"
		case ra:
			return "want a permanent error, not a retry-after"
		}
		return ""
	})
}

// testFaultRetryAfter has the peer ask for a wait: the error must be a
// retry-after with that wait, and not permanent.
func testFaultRetryAfter(t *testing.T, h Harness, f Features) {
	if f.NoRetryAfter {
		t.Skip("Features.NoRetryAfter: the platform never asks to wait")
	}
	const wait = 3 * time.Second
	testFault(t, h, f, Fault{Kind: FaultRetryAfter, RetryAfter: wait}, func(err error) string {
		d, ok := platform.RetryAfterOf(err)
		switch {
		case !ok:
			return "want a platform retry-after error"
		case d != wait:
			return "want a retry-after of " + wait.String() + ", got " + d.String()
		case platform.IsPermanent(err):
			return "want a retry-after error that is not permanent"
		}
		return ""
	})
}

// testFaultTransient has the peer fail a send temporarily: the error must
// be neither permanent nor a retry-after.
func testFaultTransient(t *testing.T, h Harness, f Features) {
	if f.NoTransientFailure {
		t.Skip("Features.NoTransientFailure: the peer cannot fail a send temporarily")
	}
	testFault(t, h, f, Fault{Kind: FaultTransient}, func(err error) string {
		switch _, ra := platform.RetryAfterOf(err); {
		case platform.IsPermanent(err):
			return "want a retryable error, not a permanent one"
		case ra:
			return "want a plain retryable error, not a retry-after"
		}
		return ""
	})
}

// testFault injects fault into the next send to a chat and checks, with
// wrong, the error that send returns; wrong returns what is wrong with the
// error or "". A send to another chat in between must not be affected,
// the failed message must not be delivered, and the next send must work.
func testFault(t *testing.T, h Harness, f Features, fault Fault, wrong func(error) string) {
	e := setup(t, h, f)
	targets := e.chats(0)
	other := e.chat(5, platform.ChatPrivate)
	e.mustSend(other, platform.TextMessage("warm-up")) // the other chat works
	for _, chat := range targets {
		e.inject(chat, fault)
		e.mustSend(other, platform.TextMessage("not affected by "+chat.ID))
		ctx, cancel := e.ctx(patience)
		r := e.send(ctx, chat, platform.TextMessage("refused"), patience+promptly)
		cancel()
		switch {
		case r.err == nil:
			t.Errorf("chat %s: Send the peer failed (%s) succeeded: %+v", chat.ID, fault.Kind, r.res)
		case wrong(r.err) != "":
			t.Errorf("chat %s: Send the peer failed (%s) = %v; %s", chat.ID, fault.Kind, r.err, wrong(r.err))
		}
		e.mustSend(chat, platform.TextMessage("after the failure"))
		e.expectOnly(chat, "after the failure")
	}
	want := []string{"warm-up"}
	for _, chat := range targets {
		want = append(want, "not affected by "+chat.ID)
	}
	if got := texts(e.received(other, len(want))); !slices.Equal(got, want) {
		t.Errorf("the other chat %s received %q; want %q", other.ID, got, want)
	}
}
