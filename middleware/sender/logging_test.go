package sender_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

const longText = "Это очень длинное сообщение, которое не должно попасть в журнал целиком: SECRET-TAIL"

func secretRequest() platform.SendRequest {
	return platform.SendRequest{
		Platform: "telegram",
		Target:   platform.Chat{ID: "42", Type: platform.ChatPrivate, Title: "SECRET-TITLE"},
		Message: platform.OutboundMessage{
			Text:        longText,
			ReplyToID:   "SECRET-REPLY",
			Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("SECRET-DATA"), FileName: "SECRET-FILE", Caption: "SECRET-CAPTION"}},
			Buttons:     [][]platform.Button{{{Text: "SECRET-BUTTON", Data: "SECRET-CALLBACK"}}},
		},
	}
}

// checkNoSecrets fails if any field of e carries request data other than
// the allowed fields.
func checkNoSecrets(t *testing.T, e observer.LoggedEntry) {
	t.Helper()
	all := fmt.Sprint(e.Message, e.ContextMap())
	for _, secret := range []string{"SECRET", longText, "журнал целиком"} {
		if strings.Contains(all, secret) {
			t.Fatalf("log entry contains %q: %s", secret, all)
		}
	}
}

func TestLoggingSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		r := &recorder{reply: func(_ context.Context, n int, _ platform.SendRequest) error {
			time.Sleep(20 * time.Millisecond)
			if n == 1 {
				return errFlaky
			}
			return nil
		}}
		s := sender.Chain(sender.Logging(zap.New(core)), sender.Retry(noJitter(3, 5*time.Millisecond, time.Second)), sender.Timeout(time.Second))(r)
		if _, err := s.Send(context.Background(), secretRequest()); err != nil {
			t.Fatal(err)
		}
		entries := logs.AllUntimed()
		if len(entries) != 1 {
			t.Fatalf("%d entries; want 1 per send", len(entries))
		}
		e := entries[0]
		if e.Level != zapcore.DebugLevel || e.Message != "sender: send" {
			t.Fatalf("entry %v %q; want debug \"sender: send\"", e.Level, e.Message)
		}
		got := e.ContextMap()
		want := map[string]any{
			"platform":   "telegram",
			"chat":       "42",
			"duration":   45 * time.Millisecond,
			"queued":     time.Duration(0), // no scheduler says when it was submitted
			"sending":    40 * time.Millisecond,
			"waiting":    5 * time.Millisecond, // the backoff
			"attempts":   int64(2),
			"outcome":    "ok",
			"message_id": "m2",
			"text":       string([]rune(longText)[:32]) + "…",
		}
		if len(got) != len(want) {
			t.Fatalf("fields %v; want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("field %s = %v (%T); want %v", k, got[k], got[k], v)
			}
		}
		checkNoSecrets(t, e)
	})
}

func TestLoggingFailure(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	cause := platform.Permanent(errors.New("403 Forbidden: bot was blocked by the user"))
	store := sender.NewDeadLetterStore(10)
	s := sender.Chain(sender.Logging(zap.New(core)), sender.DeadLetters(store), sender.Retry(sender.RetryConfig{}))(&recorder{reply: always(cause)})
	if _, err := s.Send(context.Background(), secretRequest()); !errors.Is(err, cause) {
		t.Fatalf("Send = %v", err)
	}
	entries := logs.AllUntimed()
	if len(entries) != 1 || entries[0].Level != zapcore.WarnLevel {
		t.Fatalf("entries %v; want one warning", entries)
	}
	got := entries[0].ContextMap()
	if got["outcome"] != "permanent" || got["attempts"] != int64(1) || got["dead_letter"] != true {
		t.Fatalf("fields %v", got)
	}
	if msg, _ := got["error"].(string); !strings.Contains(msg, "bot was blocked") {
		t.Fatalf("error field %q; want the cause", msg)
	}
	if _, ok := got["message_id"]; ok {
		t.Fatal("failed send logged a message_id")
	}
	checkNoSecrets(t, entries[0])
}

func TestLoggingLevels(t *testing.T) {
	// At Info level successes are not logged and failures are.
	core, logs := observer.New(zapcore.InfoLevel)
	s := sender.Logging(zap.New(core))(&recorder{reply: failFirst(1, errFlaky)})
	_, _ = s.Send(context.Background(), req("1"))
	_, _ = s.Send(context.Background(), req("1"))
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d entries at Info; want 1 (the failure)", n)
	}
	if got := logs.All()[0].ContextMap()["attempts"]; got != int64(1) {
		t.Fatalf("attempts without Retry = %v; want 1", got)
	}
}

func TestLoggingShortText(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := sender.Logging(zap.New(core))(&recorder{})
	for _, text := range []string{"", "hi", strings.Repeat("é", 32)} {
		r := req("1")
		r.Message.Text = text
		_, _ = s.Send(context.Background(), r)
	}
	for i, want := range []string{"", "hi", strings.Repeat("é", 32)} {
		if got := logs.All()[i].ContextMap()["text"]; got != want {
			t.Errorf("text %d = %q; want %q unchanged", i, got, want)
		}
	}
}

func TestLoggingNilLogger(t *testing.T) {
	r := &recorder{}
	if got := sender.Logging(nil)(r); got != platform.Sender(r) {
		t.Fatalf("Logging(nil) = %T; want the sender unchanged", got)
	}
}
