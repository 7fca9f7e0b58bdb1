package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// editTo is the request that sends m, an edit or not, to chat.
func editTo(chat string, m platform.OutboundMessage) platform.SendRequest {
	return platform.SendRequest{Platform: DefaultName, Target: platform.Chat{ID: chat}, Message: m}
}

// menu is a message with two buttons.
var menu = platform.OutboundMessage{Text: "Pick one", Buttons: [][]platform.Button{{
	{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"},
}}}

// sendFirst sends m to chat through the adapter and returns the message's
// ID.
func sendFirst(t *testing.T, h *harness, chat string, m platform.OutboundMessage) string {
	t.Helper()
	res, err := h.a.Send(t.Context(), editTo(chat, m))
	if err != nil {
		t.Fatalf("sending the message to edit: %v", err)
	}
	return res.MessageID
}

// buttonData returns the callback data of a fake message's keyboard.
func buttonData(m telegramtest.SentMessage) []string {
	var out []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.CallbackData != nil {
				out = append(out, *b.CallbackData)
			}
		}
	}
	return out
}

// isAPI returns a check that an error wraps Telegram's answer code with a
// description containing desc.
func isAPI(code int, desc string) func(error) bool {
	return func(err error) bool {
		var ae *APIError
		return errors.As(err, &ae) && ae.Code == code && strings.Contains(ae.Description, desc)
	}
}

// editCase is a case of TestEdit.
type editCase struct {
	name string
	opts []telegramtest.Option
	// prepare sends the message to edit (and injects faults); it returns
	// the target and the message's ID.
	prepare func(t *testing.T, h *harness) (target, id string)
	edit    func(id string) platform.OutboundMessage
	// wantErr checks the error; nil means the edit must succeed.
	wantErr   func(error) bool
	permanent bool
	// Requests the fake must have got for editMessageText and
	// editMessageCaption.
	textCalls, captionCalls int
	// check looks at the fake after the edit.
	check func(t *testing.T, h *harness, id string)
}

// Edits through Send against the fake Bot API: what is sent, what the chat
// shows afterwards, which errors come back and of which kind, and which
// edits are refused before any request.
func TestEdit(t *testing.T) {
	const chat = 42
	tests := []editCase{
		{
			name:    "text and buttons replaced",
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "You picked tea", EditID: id, Buttons: [][]platform.Button{{{Text: "Back", Data: "back"}}}}
			},
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				m, _ := h.srv.Message(chat, 1)
				if m.Text != "You picked tea" || fmt.Sprint(buttonData(m)) != "[back]" || m.EditedAt.IsZero() {
					t.Fatalf("message now %+v", m)
				}
				if e := h.srv.Edits(chat); len(e) != 1 || e[0].Method != "editMessageText" || e[0].MessageID != 1 {
					t.Fatalf("edits %+v", e)
				}
			},
		},
		{
			name:      "nil Buttons removes the keyboard",
			prepare:   func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "Closed") },
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "Closed" || m.Keyboard != nil {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name:    "Markdown",
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "*bold* choice", ParseMode: platform.ParseMarkdown, EditID: id}
			},
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "*bold* choice" || m.ParseMode != "Markdown" {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name: "HTML",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.OutboundMessage{Text: "<i>x</i>", ParseMode: platform.ParseHTML})
			},
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "<b>y</b>", ParseMode: platform.ParseHTML, EditID: id}
			},
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "<b>y</b>" || m.ParseMode != "HTML" {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name: "plain after HTML",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.OutboundMessage{Text: "<i>x</i>", ParseMode: platform.ParseHTML})
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "<i>x</i>") },
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "<i>x</i>" || m.ParseMode != "" {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name:      "channel by username",
			opts:      []telegramtest.Option{telegramtest.WithChannel("@news", -1001234)},
			prepare:   func(t *testing.T, h *harness) (string, string) { return "@news", sendFirst(t, h, "@news", menu) },
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "Read more") },
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(-1001234, 1); m.Text != "Read more" || m.Keyboard != nil {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name: "not modified is success",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.TextMessage("same"))
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "same") },
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if e := h.srv.Edits(chat); len(e) != 0 {
					t.Fatalf("edits %+v; want none accepted", e)
				}
				if logged(h.logs, "already shows this content") != 1 {
					t.Fatal("not logged")
				}
			},
		},
		{
			name:      "not found",
			prepare:   func(t *testing.T, h *harness) (string, string) { return "42", "77" },
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr:   isAPI(400, "message to edit not found"),
			permanent: true, textCalls: 1,
		},
		{
			name: "a user's message",
			prepare: func(t *testing.T, h *harness) (string, string) {
				h.srv.SendUserMessage(chat, ann, "hi")
				return "42", "1"
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr:   isAPI(400, "message can't be edited"),
			permanent: true, textCalls: 1,
		},
		{
			name: "caption of a photo",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.OutboundMessage{Attachments: []platform.Attachment{
					{Kind: platform.AttachPhoto, URL: "https://example.com/cat.jpg", Caption: "a cat"},
				}, Buttons: menu.Buttons})
			},
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "<b>two</b> cats", ParseMode: platform.ParseHTML, EditID: id,
					Buttons: [][]platform.Button{{{Text: "Like", Data: "like"}}}}
			},
			textCalls: 1, captionCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				m, _ := h.srv.Message(chat, 1)
				if m.Kind != "photo" || m.Text != "<b>two</b> cats" || m.ParseMode != "HTML" || fmt.Sprint(buttonData(m)) != "[like]" {
					t.Fatalf("message now %+v", m)
				}
				if e := h.srv.Edits(chat); len(e) != 1 || e[0].Method != "editMessageCaption" {
					t.Fatalf("edits %+v", e)
				}
			},
		},
		{
			name: "caption of a document not modified",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.OutboundMessage{Attachments: []platform.Attachment{
					{Kind: platform.AttachDocument, Data: []byte("%PDF"), FileName: "a.pdf", Caption: "the report"},
				}})
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "the report") },
			textCalls: 1, captionCalls: 1,
		},
		{
			name: "caption too long",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "42", sendFirst(t, h, "42", platform.OutboundMessage{Attachments: []platform.Attachment{
					{Kind: platform.AttachPhoto, URL: "https://example.com/cat.jpg", Caption: "a cat"},
				}})
			},
			edit: func(id string) platform.OutboundMessage { return platform.EditMessage(id, strings.Repeat("x", 1025)) },
			wantErr: func(err error) bool {
				return errors.Is(err, platform.ErrInvalidMessage) && isAPI(400, "there is no text")(err) && strings.Contains(err.Error(), "caption")
			},
			permanent: true, textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "a cat" {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name:    "text over 4096 characters",
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit: func(id string) platform.OutboundMessage {
				return platform.EditMessage(id, strings.Repeat("😀", 2049)) // 4098 UTF-16 units
			},
			wantErr: func(err error) bool {
				return errors.Is(err, platform.ErrInvalidMessage) && strings.Contains(err.Error(), "4098")
			},
			permanent: true,
		},
		{
			name:      "text of white space",
			prepare:   func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, " \n ") },
			wantErr:   func(err error) bool { return errors.Is(err, platform.ErrInvalidMessage) },
			permanent: true,
		},
		{
			name:    "callback data too long",
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "x", EditID: id, Buttons: [][]platform.Button{{{Text: "b", Data: strings.Repeat("d", 65)}}}}
			},
			wantErr:   func(err error) bool { return errors.Is(err, platform.ErrInvalidMessage) },
			permanent: true,
		},
		{
			name:    "an edit with a photo",
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", sendFirst(t, h, "42", menu) },
			edit: func(id string) platform.OutboundMessage {
				return platform.OutboundMessage{Text: "x", EditID: id, Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "https://example.com/a.jpg"}}}
			},
			wantErr:   func(err error) bool { return errors.Is(err, platform.ErrInvalidMessage) },
			permanent: true,
		},
		{
			name: "429",
			prepare: func(t *testing.T, h *harness) (string, string) {
				id := sendFirst(t, h, "42", menu)
				h.srv.Inject(telegramtest.Fault{Method: "editMessageText", Status: http.StatusTooManyRequests, RetryAfter: 3, Times: 1})
				return "42", id
			},
			edit: func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr: func(err error) bool {
				d, ok := platform.RetryAfterOf(err)
				return ok && d == 3*time.Second && isAPI(429, "retry after 3")(err)
			},
			textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if m, _ := h.srv.Message(chat, 1); m.Text != "Pick one" {
					t.Fatalf("message now %+v", m)
				}
			},
		},
		{
			name: "500",
			prepare: func(t *testing.T, h *harness) (string, string) {
				id := sendFirst(t, h, "42", menu)
				h.srv.Inject(telegramtest.Fault{Method: "editMessageText", Status: 500, Times: 1})
				return "42", id
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr:   isAPI(500, ""),
			textCalls: 1,
		},
		{
			name: "group became a supergroup",
			prepare: func(t *testing.T, h *harness) (string, string) {
				id := sendFirst(t, h, "-5", menu)
				h.srv.Migrate(-5, -1005)
				return "-5", id
			},
			edit: func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr: func(err error) bool {
				var ae *APIError
				return errors.As(err, &ae) && ae.MigrateToChatID == -1005 && strings.Contains(err.Error(), "supergroup -1005")
			},
			permanent: true, textCalls: 1,
			check: func(t *testing.T, h *harness, id string) {
				if e := h.srv.Edits(-1005); len(e) != 0 {
					t.Fatalf("edited in the supergroup: %+v", e)
				}
			},
		},
		{
			name: "chat not a number",
			prepare: func(t *testing.T, h *harness) (string, string) {
				return "news", "1"
			},
			edit:      func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr:   func(err error) bool { return errors.Is(err, platform.ErrInvalidMessage) },
			permanent: true,
		},
	}
	// Edit IDs that are not message IDs, refused before any request.
	for _, bad := range []string{"abc", "0", "-3", "07", "+7", " 7", "1.5", "99999999999999999999"} {
		tests = append(tests, editCase{
			name:    fmt.Sprintf("EditID %q", bad),
			prepare: func(t *testing.T, h *harness) (string, string) { return "42", bad },
			edit:    func(id string) platform.OutboundMessage { return platform.EditMessage(id, "x") },
			wantErr: func(err error) bool {
				return errors.Is(err, platform.ErrInvalidMessage) && strings.Contains(err.Error(), fmt.Sprintf("%q", bad))
			},
			permanent: true,
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, tt.opts...)
			target, id := tt.prepare(t, h)
			before := time.Now()
			res, err := h.a.Send(t.Context(), editTo(target, tt.edit(id)))
			assertNoToken(t, err)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Send = %v; want success", err)
			case tt.wantErr == nil:
				if res.MessageID != id || res.ChatID != target || res.SentAt.Before(before) {
					t.Fatalf("result %+v; want message %s in %s, now", res, id, target)
				}
			case !tt.wantErr(err):
				t.Fatalf("Send = %v; not the error wanted", err)
			case platform.IsPermanent(err) != tt.permanent:
				t.Fatalf("Send = %v: permanent %v; want %v", err, platform.IsPermanent(err), tt.permanent)
			case res != platform.SendResult{}:
				t.Fatalf("failed Send returned %+v", res)
			}
			if got := h.srv.Requests("editMessageText"); got != tt.textCalls {
				t.Errorf("%d editMessageText requests; want %d", got, tt.textCalls)
			}
			if got := h.srv.Requests("editMessageCaption"); got != tt.captionCalls {
				t.Errorf("%d editMessageCaption requests; want %d", got, tt.captionCalls)
			}
			if tt.check != nil {
				tt.check(t, h, id)
			}
		})
	}
}

// An edit goes through the request path of sends: bound to ctx (its end
// aborts the request in flight, in fake time here), and with errors that
// never hold the token, even those of the HTTP client, which carry the
// request URL.
func TestEditRequestPath(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := telegramtest.NewServer(telegramtest.InMemory())
			defer srv.Close()
			core, logs := observer.New(zap.DebugLevel)
			a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client(), Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Send(t.Context(), editTo("42", platform.TextMessage("x")))
			if err != nil {
				t.Fatal(err)
			}
			srv.Inject(telegramtest.Fault{Method: "editMessageText", Delay: time.Hour})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err = a.Send(ctx, editTo("42", platform.EditMessage(res.MessageID, "y")))
			if !errors.Is(err, context.DeadlineExceeded) || platform.IsPermanent(err) || time.Since(start) != 2*time.Second {
				t.Fatalf("Send = %v after %v; want the deadline's error after 2s", err, time.Since(start))
			}
			assertNoToken(t, err)
			assertNoTokenInLogs(t, logs)
		})
	})
	t.Run("network error", func(t *testing.T) {
		h := newHarness(t, nil)
		h.srv.Close()
		_, err := h.a.Send(t.Context(), editTo("42", platform.EditMessage("1", "x")))
		if err == nil || platform.IsPermanent(err) || !strings.Contains(err.Error(), redact.Placeholder) {
			t.Fatalf("Send = %v; want a retryable error with the token redacted from its URL", err)
		}
		assertNoToken(t, err)
	})
}

// planEdit never panics, and what it accepts is an edit Telegram can take:
// a message ID that reads back as EditID, a text of at most 4096 UTF-16
// units that is not only white space, to the chat named. Everything else
// is refused with ErrInvalidMessage.
func FuzzPlanEdit(f *testing.F) {
	f.Add("42", "1", "hello", "")
	f.Add("@news", "007", " ", "HTML")
	f.Add("-1001", "2147483648", strings.Repeat("é", 4097), "Markdown")
	f.Add("x", "-1", "\u00a0", "BBCode")
	f.Fuzz(func(t *testing.T, chat, id, text, mode string) {
		req := editTo(chat, platform.OutboundMessage{Text: text, EditID: id, ParseMode: platform.ParseMode(mode)})
		e, err := planEdit(req)
		if err != nil {
			if !errors.Is(err, platform.ErrInvalidMessage) {
				t.Fatalf("planEdit(%q, %q) = %v; want ErrInvalidMessage", chat, id, err)
			}
			return
		}
		if e.messageID <= 0 || fmt.Sprint(e.messageID) != id || e.chatID != chat || e.text != text ||
			utf16Len(text) > maxTextUnits || strings.TrimSpace(text) == "" || e.keyboard != nil {
			t.Fatalf("planEdit(%q, %q, %q) accepted %+v", chat, id, text, e)
		}
	})
}
