package telegramtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

// editCall posts params to method through srv's own client (so it works
// for a server made InMemory too) and decodes Telegram's answer.
func editCall(t *testing.T, ctx context.Context, srv *telegramtest.Server, method string, params url.Values) (int, tgbotapi.APIResponse) {
	t.Helper()
	status, ar, err := editCallErr(ctx, srv, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return status, ar
}

func editCallErr(ctx context.Context, srv *telegramtest.Server, method string, params url.Values) (int, tgbotapi.APIResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf(srv.Endpoint(), token, method), strings.NewReader(params.Encode()))
	if err != nil {
		return 0, tgbotapi.APIResponse{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, tgbotapi.APIResponse{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ar tgbotapi.APIResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		return resp.StatusCode, ar, fmt.Errorf("status %d, body %q is not JSON", resp.StatusCode, body)
	}
	return resp.StatusCode, ar, nil
}

// editResult decodes the Message an accepted send or edit returns.
func editResult(t *testing.T, ar tgbotapi.APIResponse) tgbotapi.Message {
	t.Helper()
	var m tgbotapi.Message
	if err := json.Unmarshal(ar.Result, &m); err != nil {
		t.Fatalf("result %s: %v", ar.Result, err)
	}
	return m
}

// kbJSON is a reply_markup with one button per callback data given.
func kbJSON(data ...string) string {
	var row []string
	for _, d := range data {
		row = append(row, fmt.Sprintf(`{"text":%q,"callback_data":%q}`, strings.ToUpper(d), d))
	}
	return `{"inline_keyboard":[[` + strings.Join(row, ",") + `]]}`
}

// kbData returns the callback data of a keyboard's buttons, row by row.
func kbData(kb [][]tgbotapi.InlineKeyboardButton) []string {
	var out []string
	for _, row := range kb {
		for _, b := range row {
			if b.CallbackData != nil {
				out = append(out, *b.CallbackData)
			}
		}
	}
	return out
}

// Edits of text and photo messages, accepted and refused with Telegram's
// answers, on a listening server and on one in memory. Each step sees the
// state the steps before it left.
func TestEditMessages(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []telegramtest.Option
	}{{"listening", nil}, {"in memory", []telegramtest.Option{telegramtest.InMemory()}}} {
		t.Run(mode.name, func(t *testing.T) {
			srv := telegramtest.NewServer(mode.opts...)
			defer srv.Close()
			ctx := t.Context()
			const chat = 42
			v := func(kv ...string) url.Values {
				p := url.Values{}
				for i := 0; i+1 < len(kv); i += 2 {
					p.Set(kv[i], kv[i+1])
				}
				return p
			}
			// Message 1: the bot's menu; 2: the user's; 3: the bot's photo.
			if status, ar := editCall(t, ctx, srv, "sendMessage", v("chat_id", "42", "text", "Pick one", "reply_markup", kbJSON("tea", "coffee"))); status != 200 || editResult(t, ar).MessageID != 1 {
				t.Fatalf("sendMessage: %d %+v", status, ar)
			}
			srv.SendUserMessage(chat, ann, "hello")
			if status, ar := editCall(t, ctx, srv, "sendPhoto", v("chat_id", "42", "photo", "https://example.com/p.jpg", "caption", "a cat")); status != 200 || editResult(t, ar).MessageID != 3 {
				t.Fatalf("sendPhoto: %d %+v", status, ar)
			}
			sentAt := srv.Sent(chat)[0].At

			long := strings.Repeat("é", 4097) // one UTF-16 unit each
			steps := []struct {
				name   string
				method string
				params url.Values
				desc   string // the 400's description; "" for success
				check  func(t *testing.T, res tgbotapi.Message)
			}{
				{
					name: "text, parse mode and keyboard replaced", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "<b>Tea</b> it is", "parse_mode", "HTML", "reply_markup", kbJSON("back")),
					check: func(t *testing.T, res tgbotapi.Message) {
						if res.MessageID != 1 || res.Text != "<b>Tea</b> it is" || res.EditDate == 0 || res.ReplyMarkup == nil ||
							fmt.Sprint(kbData(res.ReplyMarkup.InlineKeyboard)) != "[back]" || res.From == nil || !res.From.IsBot {
							t.Fatalf("result %+v", res)
						}
						m, ok := srv.Message(chat, 1)
						if !ok || m.Text != "<b>Tea</b> it is" || m.ParseMode != "HTML" || fmt.Sprint(kbData(m.Keyboard)) != "[back]" ||
							m.EditedAt.IsZero() || !m.At.Equal(sentAt) || m.Kind != "text" {
							t.Fatalf("Message(42, 1) = %+v, %v", m, ok)
						}
					},
				},
				{
					name: "the same again", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "<b>Tea</b> it is", "parse_mode", "HTML", "reply_markup", kbJSON("back")),
					desc:   "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
				},
				{
					name: "the same text in another parse mode", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "<b>Tea</b> it is", "reply_markup", kbJSON("back")),
				},
				{
					name: "no reply_markup removes the keyboard", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "<b>Tea</b> it is"),
					check: func(t *testing.T, res tgbotapi.Message) {
						if res.ReplyMarkup != nil {
							t.Fatalf("result keeps a keyboard: %+v", res.ReplyMarkup)
						}
						if m, _ := srv.Message(chat, 1); m.Keyboard != nil || m.ParseMode != "" {
							t.Fatalf("Message(42, 1) = %+v", m)
						}
					},
				},
				{
					name: "an empty keyboard is none", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "<b>Tea</b> it is", "reply_markup", `{"inline_keyboard":[]}`),
					desc:   "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
				},
				{
					name: "text of a photo", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "3", "text", "x"),
					desc:   "Bad Request: there is no text in the message to edit",
				},
				{
					name: "caption of a text", method: "editMessageCaption",
					params: v("chat_id", "42", "message_id", "1", "caption", "x"),
					desc:   "Bad Request: there is no caption in the message to edit",
				},
				{
					name: "caption of a photo", method: "editMessageCaption",
					params: v("chat_id", "42", "message_id", "3", "caption", "*two* cats", "parse_mode", "Markdown", "reply_markup", kbJSON("like")),
					check: func(t *testing.T, res tgbotapi.Message) {
						if res.Caption != "*two* cats" || len(res.Photo) == 0 || res.Text != "" || res.ReplyMarkup == nil {
							t.Fatalf("result %+v", res)
						}
						if m, _ := srv.Message(chat, 3); m.Text != "*two* cats" || m.Kind != "photo" || m.FileURL != "https://example.com/p.jpg" || m.ParseMode != "Markdown" {
							t.Fatalf("Message(42, 3) = %+v", m)
						}
					},
				},
				{
					name: "a user's message", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "2", "text", "x"),
					desc:   "Bad Request: message can't be edited",
				},
				{
					name: "no such message", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "99", "text", "x"),
					desc:   "Bad Request: message to edit not found",
				},
				{
					name: "the message is in another chat", method: "editMessageText",
					params: v("chat_id", "43", "message_id", "1", "text", "x"),
					desc:   "Bad Request: message to edit not found",
				},
				{
					name: "no message_id", method: "editMessageText",
					params: v("chat_id", "42", "text", "x"),
					desc:   "Bad Request: message identifier is not specified",
				},
				{
					name: "no chat", method: "editMessageText",
					params: v("chat_id", "@nobody", "message_id", "1", "text", "x"),
					desc:   "Bad Request: chat not found",
				},
				{
					name: "empty text", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", ""),
					desc:   "Bad Request: message text is empty",
				},
				{
					name: "text too long", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", long),
					desc:   "Bad Request: MESSAGE_TOO_LONG",
				},
				{
					name: "caption too long", method: "editMessageCaption",
					params: v("chat_id", "42", "message_id", "3", "caption", long[:2*1025]),
					desc:   "Bad Request: message caption is too long",
				},
				{
					name: "unknown parse mode", method: "editMessageText",
					params: v("chat_id", "42", "message_id", "1", "text", "x", "parse_mode", "BBCode"),
					desc:   "Bad Request: unsupported parse_mode",
				},
				{
					name: "an inline message", method: "editMessageText",
					params: v("inline_message_id", "AAAA", "text", "x"),
					desc:   "Bad Request: MESSAGE_ID_INVALID",
				},
			}
			accepted := 0
			for _, st := range steps {
				status, ar := editCall(t, ctx, srv, st.method, st.params)
				if st.desc != "" {
					if status != 400 || ar.Ok || ar.ErrorCode != 400 || ar.Description != st.desc {
						t.Fatalf("%s: %d %+v; want 400 %q", st.name, status, ar, st.desc)
					}
					continue
				}
				if status != 200 || !ar.Ok {
					t.Fatalf("%s: %d %+v; want success", st.name, status, ar)
				}
				accepted++
				if st.check != nil {
					t.Run(st.name, func(t *testing.T) { st.check(t, editResult(t, ar)) })
				}
			}

			edits := srv.Edits(chat)
			if len(edits) != accepted || accepted != 4 {
				t.Fatalf("Edits(42) = %+v; want the %d accepted", edits, accepted)
			}
			want := []string{"editMessageText 1 <b>Tea</b> it is HTML [back]", "editMessageText 1 <b>Tea</b> it is  [back]",
				"editMessageText 1 <b>Tea</b> it is  []", "editMessageCaption 3 *two* cats Markdown [like]"}
			for i, e := range edits {
				if got := fmt.Sprintf("%s %d %s %s %v", e.Method, e.MessageID, e.Text, e.ParseMode, kbData(e.Keyboard)); got != want[i] || e.ChatID != chat || e.At.IsZero() {
					t.Errorf("edit %d = %q (%+v); want %q", i+1, got, e, want[i])
				}
			}
			if got := srv.Edits(43); len(got) != 0 {
				t.Errorf("Edits(43) = %+v", got)
			}
			// Sent keeps the messages as sent.
			if sent := srv.Sent(chat); len(sent) != 2 || sent[0].Text != "Pick one" || len(sent[0].Keyboard) != 1 ||
				!sent[0].EditedAt.IsZero() || sent[1].Text != "a cat" {
				t.Errorf("Sent(42) = %+v; want the messages as sent", sent)
			}
			if _, ok := srv.Message(chat, 2); ok {
				t.Error("Message reports the user's message as the bot's")
			}
			if got := srv.Requests("editMessageText") + srv.Requests("editMessageCaption"); got != len(steps) {
				t.Errorf("%d edit requests counted; want %d", got, len(steps))
			}
		})
	}
}

// Injected faults, flood control, a blocked chat and a migrated group
// apply to edits as to sends; a failed edit changes nothing.
func TestEditFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		ctx := t.Context()
		send := func(chat string) {
			t.Helper()
			if status, ar := editCall(t, ctx, srv, "sendMessage", url.Values{"chat_id": {chat}, "text": {"v1"}}); status != 200 {
				t.Fatalf("sendMessage to %s: %d %+v", chat, status, ar)
			}
		}
		edit := func(chat, text string) (int, tgbotapi.APIResponse) {
			t.Helper()
			return editCall(t, ctx, srv, "editMessageText", url.Values{"chat_id": {chat}, "message_id": {"1"}, "text": {text}})
		}
		for _, c := range []string{"42", "43", "-5"} {
			send(c)
		}

		srv.Inject(telegramtest.Fault{Method: "editMessageText", ChatID: 42, Times: 1, Status: 429, RetryAfter: 3})
		if status, ar := edit("42", "v2"); status != 429 || ar.Parameters == nil || ar.Parameters.RetryAfter != 3 {
			t.Fatalf("injected 429: %d %+v", status, ar)
		}
		if m, _ := srv.Message(42, 1); m.Text != "v1" || len(srv.Edits(42)) != 0 {
			t.Fatalf("a refused edit changed the message: %+v", m)
		}
		if status, _ := edit("42", "v2"); status != 200 || len(srv.Edits(42)) != 1 {
			t.Fatalf("after the fault: %d, %d edits", status, len(srv.Edits(42)))
		}

		floodStart := time.Now()
		remove := srv.FloodWait(43, 2*time.Second)
		if status, ar := edit("43", "v2"); status != 429 || ar.Parameters == nil || ar.Parameters.RetryAfter != 2 {
			t.Fatalf("flood wait: %d %+v", status, ar)
		}
		time.Sleep(2 * time.Second)
		if status, _ := edit("43", "v2"); status != 200 {
			t.Fatalf("after the flood wait: %d", status)
		}
		remove()
		if e := srv.Edits(43); len(e) != 1 || e[0].At.Sub(floodStart) != 2*time.Second {
			t.Fatalf("Edits(43) = %+v; want one, accepted when the flood wait ended", e)
		}

		unblock := srv.Block(42)
		if status, ar := edit("42", "v3"); status != 403 || ar.Description != "Forbidden: bot was blocked by the user" {
			t.Fatalf("blocked: %d %+v", status, ar)
		}
		unblock()

		srv.Migrate(-5, -1005)
		if status, ar := edit("-5", "v2"); status != 400 || ar.Parameters == nil || ar.Parameters.MigrateToChatID != -1005 {
			t.Fatalf("migrated group: %d %+v", status, ar)
		}
		if status, ar := edit("-1005", "v2"); status != 400 || ar.Description != "Bad Request: message to edit not found" {
			t.Fatalf("the supergroup: %d %+v", status, ar)
		}
		if got := srv.Requests("editMessageText"); got != 7 {
			t.Fatalf("Requests(editMessageText) = %d; want 7", got)
		}
	})
}

// A channel known by username is reached by it, in any case, for sends and
// edits; requests naming it carry its ID for faults; unknown usernames are
// not chats.
func TestWithChannel(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.WithChannel("News", -1001234))
	defer srv.Close()
	ctx := t.Context()
	ids := make(chan int64, 10)
	srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		ids <- r.ChatID
		return nil
	})
	status, ar := editCall(t, ctx, srv, "sendMessage", url.Values{"chat_id": {"@news"}, "text": {"hello"}})
	if status != 200 {
		t.Fatalf("sendMessage to @news: %d %+v", status, ar)
	}
	if m := editResult(t, ar); m.Chat == nil || m.Chat.ID != -1001234 || m.Chat.Type != "channel" || m.Chat.UserName != "News" {
		t.Fatalf("result chat %+v", m.Chat)
	}
	if status, ar := editCall(t, ctx, srv, "editMessageText", url.Values{"chat_id": {"@NEWS"}, "message_id": {"1"}, "text": {"hello, all"}}); status != 200 {
		t.Fatalf("editMessageText in @NEWS: %d %+v", status, ar)
	}
	if m, ok := srv.Message(-1001234, 1); !ok || m.Text != "hello, all" {
		t.Fatalf("Message(-1001234, 1) = %+v, %v", m, ok)
	}
	if sent := srv.Sent(-1001234); len(sent) != 1 || sent[0].Text != "hello" {
		t.Fatalf("Sent(-1001234) = %+v", sent)
	}
	if status, ar := editCall(t, ctx, srv, "sendMessage", url.Values{"chat_id": {"@other"}, "text": {"x"}}); status != 400 || ar.Description != "Bad Request: chat not found" {
		t.Fatalf("sendMessage to @other: %d %+v", status, ar)
	}
	for i, want := range []int64{-1001234, -1001234, 0} {
		if got := <-ids; got != want {
			t.Errorf("request %d: Request.ChatID = %d; want %d", i+1, got, want)
		}
	}
}

// What Message and Edits return is the caller's own.
func TestEditsAreCopies(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx := t.Context()
	editCall(t, ctx, srv, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
	editCall(t, ctx, srv, "editMessageText", url.Values{"chat_id": {"1"}, "message_id": {"1"}, "text": {"y"}, "reply_markup": {kbJSON("b")}})
	m, _ := srv.Message(1, 1)
	*m.Keyboard[0][0].CallbackData = "changed"
	e := srv.Edits(1)
	e[0].Keyboard[0][0].Text = "changed"
	if m, _ := srv.Message(1, 1); *m.Keyboard[0][0].CallbackData != "b" || m.Keyboard[0][0].Text != "B" {
		t.Fatalf("the server's message changed: %+v", m.Keyboard)
	}
	if e := srv.Edits(1); *e[0].Keyboard[0][0].CallbackData != "b" || e[0].Keyboard[0][0].Text != "B" {
		t.Fatalf("the server's edit changed: %+v", e[0].Keyboard)
	}
}

// WaitEdits returns once enough edits were accepted, or with the context's
// error and those so far.
func TestWaitEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		ctx := t.Context()
		editCall(t, ctx, srv, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
		got := make(chan []telegramtest.Edit, 1)
		go func() {
			edits, err := srv.WaitEdits(ctx, 1, 2)
			if err != nil {
				t.Error(err)
			}
			got <- edits
		}()
		for _, text := range []string{"y", "z"} {
			synctest.Wait()
			select {
			case e := <-got:
				t.Fatalf("WaitEdits returned early: %+v", e)
			default:
			}
			editCall(t, ctx, srv, "editMessageText", url.Values{"chat_id": {"1"}, "message_id": {"1"}, "text": {text}})
		}
		if e := <-got; len(e) != 2 || e[0].Text != "y" || e[1].Text != "z" {
			t.Fatalf("WaitEdits = %+v", e)
		}

		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		e, err := srv.WaitEdits(short, 1, 3)
		if !errors.Is(err, context.DeadlineExceeded) || len(e) != 2 {
			t.Fatalf("WaitEdits past the deadline = %d edits, %v", len(e), err)
		}
	})
}

// A server in memory runs in fake time: a long poll ends after exactly its
// timeout, a delay lasts exactly as long, a request whose context ends
// returns its error, and after Close requests fail with ErrClosed.
func TestInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory())
		if !strings.HasPrefix(srv.Endpoint(), "http://telegramtest.invalid/bot") {
			t.Fatalf("Endpoint() = %q", srv.Endpoint())
		}
		ctx := t.Context()
		start := time.Now()
		status, ar := editCall(t, ctx, srv, "getUpdates", url.Values{"timeout": {"30"}})
		if status != 200 || string(ar.Result) != "[]" || time.Since(start) != 30*time.Second {
			t.Fatalf("long poll: %d %s after %v; want [] after 30s", status, ar.Result, time.Since(start))
		}

		srv.Inject(telegramtest.Fault{Method: "getMe", Delay: 5 * time.Second, Times: 1})
		start = time.Now()
		if status, _ := editCall(t, ctx, srv, "getMe", nil); status != 200 || time.Since(start) != 5*time.Second {
			t.Fatalf("delayed getMe: %d after %v", status, time.Since(start))
		}

		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		start = time.Now()
		if _, _, err := editCallErr(short, srv, "getUpdates", url.Values{"timeout": {"30"}}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Fatalf("long poll past its context = %v after %v", err, time.Since(start))
		}

		srv.Close()
		if _, _, err := editCallErr(ctx, srv, "getMe", nil); !errors.Is(err, telegramtest.ErrClosed) {
			t.Fatalf("after Close: %v; want ErrClosed", err)
		}
	})
}
