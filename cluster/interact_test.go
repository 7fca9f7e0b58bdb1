package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// nodeAdapter is the shared memory adapter as one member has it: it
// notes which member makes each interaction, and, like the browser chat,
// has the users' files only where it leads (elsewhere Download finds no
// such file).
type nodeAdapter struct {
	*memory.Adapter
	node  string
	leads func() bool
	calls *callLog
}

// callLog lists the interactions made, as "op@member", and those made by
// a member that did not lead the account as it made them.
type callLog struct {
	mu       sync.Mutex
	calls    []string
	notLeads []string
}

func (l *callLog) add(op string, a nodeAdapter) {
	leads := a.leads()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, op+"@"+a.node)
	if !leads {
		l.notLeads = append(l.notLeads, op+"@"+a.node)
	}
}

func (l *callLog) notLeading() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.notLeads)
}

func (l *callLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (a nodeAdapter) AnswerCallback(ctx context.Context, ev platform.Event, ans platform.CallbackAnswer) error {
	a.calls.add("answer", a)
	return a.Adapter.AnswerCallback(ctx, ev, ans)
}

func (a nodeAdapter) SendChatAction(ctx context.Context, chat platform.Chat, action platform.ChatAction) error {
	a.calls.add("action", a)
	return a.Adapter.SendChatAction(ctx, chat, action)
}

func (a nodeAdapter) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	if !a.leads() {
		return nil, platform.Permanent(fmt.Errorf("%w: the file is kept by the gateway", platform.ErrInvalidMessage))
	}
	a.calls.add("download", a)
	return a.Adapter.Download(ctx, att, maxBytes)
}

// Answers to button presses, chat actions and downloads are made by the
// gateway, wherever the handler runs: a member that does not lead the
// account makes them through it, with its errors' kinds kept, and a
// download larger than the server's largest message comes in parts.
func TestSharedInteractionsThroughTheGateway(t *testing.T) {
	parallel(t, 2*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	log := &callLog{}
	start := func(name string) *member {
		return startMemberWith(t, srv.s, name, func(j *cluster.Shared) platform.Adapter {
			return nodeAdapter{Adapter: mem, node: name, leads: func() bool { return len(j.Stats().Leading) > 0 }, calls: log}
		})
	}
	members := []*member{start("a"), start("b")}
	for _, m := range members {
		name := m.name
		m.e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			if err := c.Answer("pressed on "+name, false); err != nil {
				return err
			}
			// The press was answered: a second answer is refused, as the
			// gateway's adapter refused it.
			if err := c.AnswerCallback(c.Event(), platform.CallbackAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) {
				c.ReplyText("second answer: " + fmt.Sprint(err))
			}
			return nil
		})
		m.e.OnCommand("typing", func(c *engine.Context) error {
			if err := c.Typing(); err != nil {
				return err
			}
			for len(mem.Actions(c.Chat().ID)) == 0 {
				select {
				case <-c.Context().Done():
					return c.Context().Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			c.ReplyText("typed on " + name)
			return nil
		})
		m.e.On(func(c *engine.Context) bool { return len(c.Attachments()) > 0 }, func(c *engine.Context) error {
			at := c.Attachments()[0]
			data, err := c.Download(c.Context(), at, 0)
			if err != nil {
				c.ReplyText("download failed: " + err.Error())
				return nil
			}
			_, small := c.Download(c.Context(), at, int64(len(data)-1))
			c.ReplyText(fmt.Sprintf("got %d bytes on %s, %v", len(data), name, errors.Is(small, platform.ErrFileTooLarge)))
			return nil
		})
	}
	gateway := waitSpread(t, members).name

	const chats = 100
	menu := platform.OutboundMessage{Text: "menu", Buttons: [][]platform.Button{{{Text: "Go", Data: "go"}}}}
	for c := range chats {
		chat := memory.Private(fmt.Sprint(500 + c))
		user := memory.User(chat.ID, "u")
		if _, err := mem.Sender().Send(ctxFor(t), platform.SendRequest{Target: chat, Message: menu}); err != nil {
			t.Fatal(err)
		}
		mem.Press(chat, user, "go")
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/typing"})
		mem.SayFile(chat, user, platform.Attachment{Kind: platform.AttachDocument, FileName: "f.txt"}, []byte("a small file"))
	}
	handledBy := map[string]bool{}
	for c := range chats {
		chat := memory.Private(fmt.Sprint(500 + c))
		sent, err := mem.WaitSent(ctxFor(t), chat.ID, 3) // the menu, the typing's reply, the file's
		if err != nil {
			t.Fatalf("chat %s: %v (sent %q)", chat.ID, err, mem.Texts(chat.ID))
		}
		texts := mem.Texts(chat.ID)
		size := len("a small file")
		var typed, got bool
		for _, s := range texts[1:] {
			switch {
			case strings.HasPrefix(s, "typed on "):
				typed = true
				handledBy[strings.TrimPrefix(s, "typed on ")] = true
			case strings.HasPrefix(s, fmt.Sprintf("got %d bytes on ", size)) && strings.HasSuffix(s, ", true"):
				got = true
			}
		}
		if !typed || !got || len(sent) != 3 {
			t.Errorf("chat %s: %q; want the menu, the typing's reply and the file's %d bytes", chat.ID, texts, size)
		}
	}
	if !handledBy["a"] || !handledBy["b"] {
		t.Fatalf("handled by %v; want both members, so that one reached the gateway across the cluster", handledBy)
	}
	answers, err := mem.WaitAnswers(ctxFor(t), chats)
	if err != nil {
		t.Fatal(err)
	}
	var failed uint64
	for _, m := range members {
		failed += m.e.Stats().HandlerErrors
	}
	zero := uint64(0)
	for _, a := range answers {
		switch {
		case strings.HasPrefix(a.Callback.Text, "pressed on "):
		case a.Callback == platform.CallbackAnswer{} && zero < failed:
			// A handler whose answer could not reach the gateway in time
			// (the machine stalled, the lease moved) failed, and the
			// engine gave its press the zero answer a press is owed:
			// only as many as handlers failed.
			zero++
		default:
			t.Errorf("answer %+v (%d handlers failed, %d zero answers before it)", a.Callback, failed, zero)
		}
	}
	// Made by the gateway: the one found above, or, should the lease move
	// on a loaded machine, the one leading then.
	for _, call := range log.notLeading() {
		t.Errorf("%s: made by a member that did not lead the account (the gateway was %s at first)", call, gateway)
	}
	if n := len(log.all()); n < 3*chats {
		t.Errorf("%d interactions made; want at least %d (an answer, an action, two downloads per chat)", n, 3*chats)
	}

	// Straight through the cluster, from either member: a download over
	// the server's largest message (1 MB) comes in parts, and the
	// gateway's errors keep their kinds.
	big := bytes.Repeat([]byte("herald "), 300_000) // 2.1 MB
	ev := mem.SayFile(memory.Private("600"), memory.User("600", "u"), platform.Attachment{Kind: platform.AttachDocument}, big)
	att := ev.Attachments[0]
	for _, m := range members {
		data, err := m.j.Interact(ctxFor(t), mem.Name(), journal.Interaction{Op: journal.OpDownload, Attachment: att, MaxBytes: int64(len(big))})
		if err != nil || !bytes.Equal(data, big) {
			t.Errorf("%s: a download of %d bytes through the gateway = %d bytes, %v", m.name, len(big), len(data), err)
		}
		_, err = m.j.Interact(ctxFor(t), mem.Name(), journal.Interaction{Op: journal.OpDownload, Attachment: att, MaxBytes: 1000})
		if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrFileTooLarge) {
			t.Errorf("%s: a download over the limit = %v; want a permanent ErrFileTooLarge", m.name, err)
		}
		// Asked again until its context ends, as when a gateway moves.
		short, cancel := context.WithTimeout(ctxFor(t), 300*time.Millisecond)
		_, err = m.j.Interact(short, "nobody", journal.Interaction{Op: journal.OpChatAction, Chat: memory.Private("600"), Action: platform.ActionTyping})
		cancel()
		if err == nil || platform.IsPermanent(err) {
			t.Errorf("%s: an interaction on an account without a gateway = %v; want a retryable error", m.name, err)
		}
	}
}
