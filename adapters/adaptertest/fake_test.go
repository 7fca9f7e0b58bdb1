package adaptertest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/platform"
)

// fake is an in-memory adapter and its peer in one, like package memory's,
// with switches that break one part of the contract each, so that the
// suite's own tests can check that it notices.
type fake struct {
	defect    string          // "" for a correct adapter; see defects in suite_test.go
	receiving <-chan struct{} // Run's Inbound.Receiving, under mu

	deliverMu sync.Mutex // orders deliveries; held while handle runs
	mu        sync.Mutex
	handle    func(platform.Event) // Run's; nil when Run is not running
	pending   []platform.Event     // said before Run started
	seq       int
	held      map[string]*platform.OutboundMessage // "swap pairs": the first of a pair, not yet shown
	faults    map[string][]adaptertest.Fault
	inbox     adaptertest.Inbox
}

// fakeHarness returns a harness of fakes with the given defect.
func fakeHarness(defect string) adaptertest.Harness {
	return func(t *testing.T) adaptertest.Peer {
		return &fake{
			defect: defect,
			held:   map[string]*platform.OutboundMessage{},
			faults: map[string][]adaptertest.Fault{},
		}
	}
}

// The platform.Adapter side.

func (f *fake) Name() string { return "fake" }

func (f *fake) Sender() platform.Sender { return platform.SenderFunc(f.send) }

func (f *fake) Run(ctx context.Context, in platform.Inbound) error {
	if in.Listen {
		return nil
	}
	handle := func(ev platform.Event) { _ = in.Handle(ev) }
	f.deliverMu.Lock()
	f.mu.Lock()
	f.handle, f.receiving = handle, in.Receiving
	pending := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, ev := range pending {
		f.deliver(handle, ev)
	}
	f.deliverMu.Unlock()

	<-ctx.Done() // it keeps running after Receiving closed: the suite allows it
	if f.defect != "handle after return" {
		f.deliverMu.Lock()
		f.mu.Lock()
		f.handle = nil
		f.mu.Unlock()
		f.deliverMu.Unlock()
	}
	if f.defect == "run error" {
		return ctx.Err()
	}
	return nil
}

func (f *fake) send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	chatID := req.Target.ID
	if err := ctx.Err(); err != nil && f.defect != "ignore cancel" {
		return platform.SendResult{}, fmt.Errorf("fake: send to %s: %w", chatID, err)
	}
	if err := req.Message.Validate(); err != nil {
		if f.defect == "invalid not permanent" {
			return platform.SendResult{}, fmt.Errorf("fake: %w", err)
		}
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("fake: %w", err))
	}
	if req.Message.Album && f.defect != "album delivered" {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("fake: %w: no albums", platform.ErrUnsupported))
	}
	for _, at := range req.Message.Attachments {
		if at.Kind == platform.AttachSticker {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("fake: %w: no stickers", platform.ErrUnsupported))
		}
	}
	f.mu.Lock()
	var fault adaptertest.Fault
	if fs := f.faults[chatID]; len(fs) > 0 {
		fault, f.faults[chatID] = fs[0], fs[1:]
	}
	f.mu.Unlock()
	switch fault.Kind {
	case adaptertest.FaultPermanent:
		return platform.SendResult{}, platform.Permanent(errors.New("fake: blocked"))
	case adaptertest.FaultRetryAfter:
		if f.defect == "retry-after lost" {
			return platform.SendResult{}, errors.New("fake: too many requests")
		}
		return platform.SendResult{}, platform.NewRetryAfter(fault.RetryAfter, errors.New("fake: too many requests"))
	case adaptertest.FaultTransient:
		return platform.SendResult{}, errors.New("fake: internal error")
	case adaptertest.FaultStall:
		if f.defect == stallDefect {
			time.Sleep(time.Hour)
		}
		<-ctx.Done()
		return platform.SendResult{}, fmt.Errorf("fake: send to %s: %w", chatID, ctx.Err())
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if id := req.Message.DeleteID; id != "" && f.defect != "delete as new message" {
		f.inbox.Delete(chatID, id) // a message gone already counts as deleted
		return platform.SendResult{MessageID: id, ChatID: chatID, SentAt: time.Now()}, nil
	}
	if id := req.Message.EditID; id != "" && f.defect != "edit as new message" {
		if !f.inbox.Edit(chatID, id, req.Message) {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("fake: no message %s in %s to edit", id, chatID))
		}
		return platform.SendResult{MessageID: id, ChatID: chatID, SentAt: time.Now()}, nil
	}
	f.seq++
	switch first := f.held[chatID]; {
	case f.defect != "swap pairs":
		f.inbox.AddID(chatID, strconv.Itoa(f.seq), req.Message)
	case first == nil:
		msg := req.Message
		f.held[chatID] = &msg
	default:
		f.inbox.Add(chatID, req.Message, *first)
		delete(f.held, chatID)
	}
	res := platform.SendResult{MessageID: strconv.Itoa(f.seq), ChatID: chatID, SentAt: time.Now()}
	if f.defect == "no chat ID" {
		res.ChatID = ""
	}
	return res, nil
}

// The adaptertest.Peer side.

func (f *fake) Adapter() platform.Adapter { return f }

func (f *fake) Ready(context.Context) error { return nil }

func (f *fake) User(n int) platform.User {
	return platform.User{ID: "u" + strconv.Itoa(n), Name: "User " + strconv.Itoa(n)}
}

func (f *fake) Chat(_ context.Context, n int, typ platform.ChatType) (platform.Chat, error) {
	if typ == platform.ChatGroup {
		return platform.Chat{ID: "g" + strconv.Itoa(n), Type: typ, Title: "Group " + strconv.Itoa(n)}, nil
	}
	return platform.Chat{ID: "u" + strconv.Itoa(n), Type: typ}, nil
}

func (f *fake) Say(_ context.Context, chat platform.Chat, from platform.User, text string) error {
	f.mu.Lock()
	receiving := f.receiving
	f.mu.Unlock()
	if !(platform.Inbound{Receiving: receiving}).Taking() && f.defect != "receives after the stop" {
		return nil // the events said from now on are dropped
	}
	f.deliverMu.Lock()
	defer f.deliverMu.Unlock()
	f.mu.Lock()
	f.seq++
	ev := platform.Event{
		ID: "ev" + strconv.Itoa(f.seq), Platform: f.Name(), Kind: platform.EventMessage,
		Chat: chat, From: from, Text: text, MessageID: "in" + strconv.Itoa(f.seq), Time: time.Now(),
	}
	if f.defect == "wrong sender" {
		ev.From.ID = "someone else"
	}
	handle := f.handle
	if handle == nil {
		f.pending = append(f.pending, ev)
	}
	f.mu.Unlock()
	if handle != nil {
		f.deliver(handle, ev)
	}
	return nil
}

// deliver hands ev to handle; f.deliverMu is held.
func (f *fake) deliver(handle func(platform.Event), ev platform.Event) {
	handle(ev)
	if f.defect == "duplicate events" {
		handle(ev)
	}
}

func (f *fake) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	return f.inbox.Wait(ctx, chat.ID, n)
}

func (f *fake) Shown(_ context.Context, chat platform.Chat) ([]platform.OutboundMessage, error) {
	return f.inbox.Shown(chat.ID), nil
}

func (f *fake) Inject(chat platform.Chat, fault adaptertest.Fault) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[chat.ID] = append(f.faults[chat.ID], fault)
	return nil
}
