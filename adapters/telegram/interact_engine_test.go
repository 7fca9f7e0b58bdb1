package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// runTelegramEngine runs an engine on an adapter of srv in the test's
// synctest bubble, with register adding its handlers, until the returned
// stop is called.
func runTelegramEngine(t *testing.T, srv *telegramtest.Server, register func(e *engine.Engine)) (stop func()) {
	t.Helper()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.WithAdapter(a))
	if err != nil {
		t.Fatal(err)
	}
	register(e)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}
}

// answerAt returns the answer to the callback query id and when it came.
func answerAt(srv *telegramtest.Server, id string) (telegramtest.CallbackAnswer, int) {
	n := 0
	var got telegramtest.CallbackAnswer
	for _, a := range srv.CallbackAnswers() {
		if a.CallbackQueryID == id {
			got = a
			n++
		}
	}
	return got, n
}

// Button presses through the engine, in fake time: the handler's answer
// is the one answer, at once; a press the handler does not answer is
// answered empty when the handler returns (3 s); one whose handler runs
// long is answered empty by the adapter 10 s after it arrived, and the
// engine's answer at the end adds none.
func TestEngineTelegramAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		late := make(chan error, 1)
		stop := runTelegramEngine(t, srv, func(e *engine.Engine) {
			e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
				switch c.Text() {
				case "answer":
					return c.Answer("Saved", true)
				case "slow":
					time.Sleep(3 * time.Second)
				case "long":
					time.Sleep(30 * time.Second)
					late <- c.Answer("too late", false)
				}
				return nil
			})
		})
		defer stop()
		start := time.Now()
		ids := map[string]string{}
		for i, data := range []string{"answer", "slow", "long"} {
			ids[data] = srv.PushCallback(int64(100+i), ann, 1, data)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for data, want := range map[string]struct {
			text  string
			alert bool
			after time.Duration
		}{
			"answer": {"Saved", true, 0},
			"slow":   {"", false, 3 * time.Second},
			"long":   {"", false, autoAnswerAfter},
		} {
			a, n := answerAt(srv, ids[data])
			if n != 1 || a.Text != want.text || a.ShowAlert != want.alert || a.At.Sub(start) != want.after {
				t.Errorf("%s: %d answers, %+v at %v; want one %q (alert %v) at %v", data, n, a, a.At.Sub(start), want.text, want.alert, want.after)
			}
		}
		if err := <-late; !errors.Is(err, platform.ErrAlreadyAnswered) {
			t.Errorf("an answer after the adapter's = %v; want ErrAlreadyAnswered", err)
		}
	})
}

// Typing through the engine, in fake time: shown at once and every 4 s
// while the handler works, and no more once it replied.
func TestEngineTelegramTyping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		stop := runTelegramEngine(t, srv, func(e *engine.Engine) {
			e.OnCommand("think", func(c *engine.Context) error {
				if err := c.Typing(); err != nil {
					return err
				}
				time.Sleep(9 * time.Second)
				c.ReplyText("42")
				time.Sleep(20 * time.Second)
				return nil
			})
		})
		defer stop()
		srv.SendUserMessage(5, ann, "/think")
		start := time.Now()
		time.Sleep(time.Minute)
		synctest.Wait()
		var at []time.Duration
		for _, a := range srv.ChatActions(5) {
			if a.Action != "typing" {
				t.Errorf("action %q", a.Action)
			}
			at = append(at, a.At.Sub(start).Round(time.Second))
		}
		if fmt.Sprint(at) != "[0s 4s 8s]" {
			t.Errorf("typing shown at %v; want at 0s, 4s and 8s", at)
		}
		if sent := srv.Sent(5); len(sent) != 1 || sent[0].At.Sub(start).Round(time.Second) != 9*time.Second {
			t.Errorf("sent %+v; want the reply at 9s", sent)
		}
	})
}

// A file a user sends comes back through the engine: downloaded within a
// limit and sent again as bytes, and by its file ID.
func TestEngineTelegramFileRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		stop := runTelegramEngine(t, srv, func(e *engine.Engine) {
			e.OnMessage(func(c *engine.Context) error {
				atts := c.Attachments()
				if len(atts) == 0 {
					return nil
				}
				data, err := c.Download(c.Context(), atts[0], 1<<20)
				if err != nil {
					return err
				}
				c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{
					{Kind: atts[0].Kind, Data: data, FileName: atts[0].FileName, Caption: fmt.Sprint(len(data), " bytes")},
					{Kind: atts[0].Kind, FileID: atts[0].FileID},
				}})
				return nil
			})
		})
		defer stop()
		data := bytes.Repeat([]byte{1, 2, 3}, 1000)
		srv.SendUserFile(5, ann, telegramtest.UserFile{Kind: "photo", Data: data})
		time.Sleep(time.Minute)
		synctest.Wait()
		sent := srv.Sent(5)
		if len(sent) != 2 || sent[0].Kind != "photo" || !bytes.Equal(sent[0].FileData, data) || sent[0].Text != "3000 bytes" ||
			!bytes.Equal(sent[1].FileData, data) || sent[1].FileID == "" {
			t.Fatalf("sent %+v; want the photo back as bytes with its size, then by its file ID", sent)
		}
	})
}

// Two Telegram bots in one engine: each adapter has its name, its events
// carry it, and each bot's replies go through its own token and budget.
func TestTwoBotsOneEngine(t *testing.T) {
	alpha := telegramtest.NewServer(telegramtest.WithToken("1:alpha"))
	defer alpha.Close()
	beta := telegramtest.NewServer(telegramtest.WithToken("2:beta"))
	defer beta.Close()
	a, err := New(Config{Name: "alpha", Token: "1:alpha", APIEndpoint: alpha.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Name: "beta", Token: "2:beta", APIEndpoint: beta.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "alpha" || b.Name() != "beta" {
		t.Fatalf("names %q, %q", a.Name(), b.Name())
	}
	e, err := engine.New(engine.WithAdapter(a), engine.WithAdapter(b))
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("who", func(c *engine.Context) error {
		c.ReplyText("I am " + c.Platform())
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	alpha.SendUserMessage(5, ann, "/who")
	beta.SendUserMessage(5, ann, "/who")
	wctx := waitCtx(t)
	for srv, want := range map[*telegramtest.Server]string{alpha: "I am alpha", beta: "I am beta"} {
		sent, err := srv.WaitSent(wctx, 5, 1)
		if err != nil || sent[0].Text != want {
			t.Fatalf("sent %+v, %v; want %q", sent, err, want)
		}
	}
	if _, err := New(Config{Name: "a:b", Token: testToken}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a name holding a colon = %v; want ErrInvalidConfig", err)
	}
}
