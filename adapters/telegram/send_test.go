package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

func sendTo(chat string, m platform.OutboundMessage) platform.SendRequest {
	return platform.SendRequest{Platform: "telegram", Target: platform.Chat{ID: chat}, Message: m}
}

func TestSendText(t *testing.T) {
	h := newHarness(t, nil)
	s := h.a.Sender()
	for i, tc := range []struct {
		mode platform.ParseMode
		want string
	}{
		{platform.ParsePlain, ""},
		{platform.ParseMarkdown, "Markdown"},
		{platform.ParseHTML, "HTML"},
	} {
		before := time.Now()
		res, err := s.Send(t.Context(), sendTo("42", platform.OutboundMessage{Text: "*hi* <b>there</b>", ParseMode: tc.mode}))
		if err != nil {
			t.Fatal(err)
		}
		if res.MessageID != strconv.Itoa(i+1) || res.ChatID != "42" || res.SentAt.Before(before) {
			t.Fatalf("result %+v", res)
		}
		m := h.srv.Sent(42)[i]
		if m.Kind != "text" || m.Text != "*hi* <b>there</b>" || m.ParseMode != tc.want || m.ReplyToMessageID != 0 || m.Keyboard != nil {
			t.Fatalf("%q: sent %+v", tc.mode, m)
		}
	}
}

func TestSendReplyAndKeyboard(t *testing.T) {
	h := newHarness(t, nil)
	_, err := h.a.Send(t.Context(), sendTo("-100", platform.OutboundMessage{
		Text: "pick one", ReplyToID: "17",
		Buttons: [][]platform.Button{
			{{Text: "Yes", Data: "vote:yes"}, {Text: "No", Data: "vote:no"}},
			{{Text: "Docs", URL: "https://example.com/docs"}},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := h.srv.Sent(-100)[0]
	if m.ReplyToMessageID != 17 || len(m.Keyboard) != 2 || len(m.Keyboard[0]) != 2 ||
		*m.Keyboard[0][1].CallbackData != "vote:no" || m.Keyboard[1][0].URL == nil || *m.Keyboard[1][0].URL != "https://example.com/docs" {
		t.Fatalf("sent %+v", m)
	}
}

func TestSendAttachments(t *testing.T) {
	t.Parallel() // parts after the first are paced, in real time
	h := newHarness(t, nil)
	res, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{
		Text: "here you go", ParseMode: platform.ParseHTML, ReplyToID: "3",
		Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, URL: "https://img.example/cat.png", Caption: "<i>cat</i>"},
			{Kind: platform.AttachDocument, Data: []byte("report body"), FileName: "report.txt"},
			{Kind: platform.AttachPhoto, Data: []byte("\x89PNG")},
			{Kind: platform.AttachDocument, URL: "https://files.example/a.pdf"},
		},
		Buttons: [][]platform.Button{{{Text: "OK", Data: "ok"}}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(5)
	if len(sent) != 5 || res.MessageID != "5" {
		t.Fatalf("sent %d messages, result %+v", len(sent), res)
	}
	want := []struct {
		kind, text, mode, url, name, data string
		reply                             int
		keyboard                          bool
	}{
		{kind: "text", text: "here you go", mode: "HTML", reply: 3},
		{kind: "photo", text: "<i>cat</i>", mode: "HTML", url: "https://img.example/cat.png"},
		{kind: "document", name: "report.txt", data: "report body"},
		{kind: "photo", name: "photo.jpg", data: "\x89PNG"},
		{kind: "document", url: "https://files.example/a.pdf", keyboard: true},
	}
	for i, w := range want {
		m := sent[i]
		if m.Kind != w.kind || m.Text != w.text || m.ParseMode != w.mode || m.FileURL != w.url || m.FileName != w.name ||
			string(m.FileData) != w.data || m.ReplyToMessageID != w.reply || (m.Keyboard != nil) != w.keyboard {
			t.Errorf("message %d = %+v; want %+v", i, m, w)
		}
	}
	if h.srv.Requests("sendPhoto") != 2 || h.srv.Requests("sendDocument") != 2 {
		t.Fatal("wrong methods")
	}
}

func TestSendLongTextInOrder(t *testing.T) {
	t.Parallel() // parts after the first are paced, in real time
	h := newHarness(t, nil)
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "line %03d: привет, мир 😀 — %s\n", i, strings.Repeat("ж", i%40))
	}
	text := b.String()
	res, err := h.a.Send(t.Context(), sendTo("9", platform.OutboundMessage{Text: text, ReplyToID: "1", Buttons: [][]platform.Button{{{Text: "more", Data: "more"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(9)
	if len(sent) < 3 {
		t.Fatalf("%d parts for %d units", len(sent), utf16Len(text))
	}
	var joined strings.Builder
	for i, m := range sent {
		joined.WriteString(m.Text)
		if n := utf16Len(m.Text); n > maxTextUnits {
			t.Errorf("part %d has %d units", i, n)
		}
		if i < len(sent)-1 && !strings.HasSuffix(m.Text, "\n") {
			t.Errorf("part %d not cut at a line end: ...%q", i, m.Text[len(m.Text)-20:])
		}
		if (m.ReplyToMessageID == 1) != (i == 0) || (m.Keyboard != nil) != (i == len(sent)-1) {
			t.Errorf("part %d: reply %d, keyboard %v", i, m.ReplyToMessageID, m.Keyboard != nil)
		}
		if i > 0 && m.At.Sub(sent[i-1].At) < privatePause {
			t.Errorf("part %d accepted %v after the one before; want at least %v", i, m.At.Sub(sent[i-1].At), privatePause)
		}
	}
	if joined.String() != text {
		t.Fatal("parts do not add up to the text")
	}
	if res.MessageID != strconv.Itoa(sent[len(sent)-1].MessageID) {
		t.Fatalf("result %+v; want the last part's ID", res)
	}
}

func TestSendErrors(t *testing.T) {
	tests := []struct {
		name       string
		fault      telegramtest.Fault
		msg        platform.OutboundMessage
		retryAfter time.Duration
		permanent  bool
		code       int
		contains   string
	}{
		{name: "429", fault: telegramtest.Fault{Status: 429, RetryAfter: 3}, retryAfter: 3 * time.Second, code: 429},
		{name: "429 description only", fault: telegramtest.Fault{Status: 429, RetryAfter: 8, NoParameters: true}, retryAfter: 8 * time.Second, code: 429},
		{name: "500", fault: telegramtest.Fault{Status: 500}, code: 500},
		{name: "403", fault: telegramtest.Fault{Status: 403}, permanent: true, code: 403, contains: "blocked"},
		{name: "400", fault: telegramtest.Fault{Status: 400, Description: "Bad Request: can't parse entities"}, permanent: true, code: 400},
		{name: "404", fault: telegramtest.Fault{Status: 404}, permanent: true, code: 404},
		{name: "HTML 502", fault: telegramtest.Fault{HTML: true}, contains: "HTTP 502"},
		{name: "upload 429", fault: telegramtest.Fault{Status: 429, RetryAfter: 4},
			msg: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("x")}}}, retryAfter: 4 * time.Second, code: 429},
		{name: "upload 403", fault: telegramtest.Fault{Status: 403},
			msg: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: []byte("x")}}}, permanent: true, code: 403},
		{name: "upload HTML 502", fault: telegramtest.Fault{HTML: true},
			msg: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: []byte("x")}}}, contains: "HTTP 502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			tt.fault.ChatID = 42
			h.srv.Inject(tt.fault)
			msg := tt.msg
			if msg.Text == "" && msg.Attachments == nil {
				msg.Text = "hi"
			}
			_, err := h.a.Send(t.Context(), sendTo("42", msg))
			if err == nil {
				t.Fatal("Send succeeded")
			}
			assertNoToken(t, err)
			d, isRA := platform.RetryAfterOf(err)
			if (tt.retryAfter > 0) != isRA || d != tt.retryAfter {
				t.Errorf("RetryAfterOf = %v, %v; want %v", d, isRA, tt.retryAfter)
			}
			if platform.IsPermanent(err) != tt.permanent {
				t.Errorf("IsPermanent = %v; want %v (%v)", !tt.permanent, tt.permanent, err)
			}
			var ae *APIError
			if errors.As(err, &ae) != (tt.code > 0) || (ae != nil && ae.Code != tt.code) {
				t.Errorf("APIError %+v; want code %d", ae, tt.code)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q lacks %q", err, tt.contains)
			}
			if blocked := errors.Is(err, platform.ErrBlocked); blocked != (tt.code == 403) {
				t.Errorf("errors.Is(err, platform.ErrBlocked) = %v for %v", blocked, err)
			}
			if len(h.srv.Sent(42)) != 0 {
				t.Error("a failed send was delivered")
			}
		})
	}
}

func TestSendInvalid(t *testing.T) {
	h := newHarness(t, nil)
	long := strings.Repeat("я", maxCaptionUnits+1)
	for _, tc := range []struct {
		name string
		req  platform.SendRequest
	}{
		{"empty", sendTo("1", platform.OutboundMessage{})},
		{"only white space", sendTo("1", platform.TextMessage(" \n\t "))},
		{"chat ID", sendTo("abc", platform.TextMessage("x"))},
		{"empty chat", sendTo("", platform.TextMessage("x"))},
		{"reply ID", sendTo("1", platform.OutboundMessage{Text: "x", ReplyToID: "msg-3"})},
		{"parse mode", sendTo("1", platform.OutboundMessage{Text: "x", ParseMode: "BBCode"})},
		{"caption", sendTo("1", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u", Caption: long}}})},
		{"callback data", sendTo("1", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "b", Data: strings.Repeat("d", 65)}}}})},
		{"button", sendTo("1", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "b"}}}})},
	} {
		_, err := h.a.Send(t.Context(), tc.req)
		if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "telegram: ") {
			t.Errorf("%s: Send = %v; want a permanent ErrInvalidMessage", tc.name, err)
		}
	}
	if n := h.srv.Requests("sendMessage") + h.srv.Requests("sendPhoto"); n != 0 {
		t.Fatalf("%d requests for invalid messages", n)
	}
	// 64 bytes of callback data and 1024 caption characters are fine.
	_, err := h.a.Send(t.Context(), sendTo("1", platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "https://example.com/u.png", Caption: long[:2*maxCaptionUnits]}},
		Buttons:     [][]platform.Button{{{Text: "b", Data: strings.Repeat("d", 64)}}},
	}))
	if err != nil {
		t.Fatal(err)
	}
}

func TestSendChannelUsername(t *testing.T) {
	h := newHarness(t, nil)
	var got string
	var mu sync.Mutex
	h.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		mu.Lock()
		defer mu.Unlock()
		got = r.Params.Get("chat_id")
		return nil
	})
	_, err := h.a.Send(t.Context(), sendTo("@news", platform.TextMessage("x")))
	mu.Lock()
	defer mu.Unlock()
	// The fake knows chats by number only, so it refuses: the request is
	// what matters.
	if got != "@news" || !platform.IsPermanent(err) {
		t.Fatalf("chat_id sent %q, err %v", got, err)
	}
}

func TestSendMigrated(t *testing.T) {
	t.Parallel() // parts after the first are paced, in real time
	h := newHarness(t, nil)
	h.srv.Migrate(-5, -1005)
	text := strings.Repeat("word ", 1000) // two parts
	res, err := h.a.Send(t.Context(), sendTo("-5", platform.TextMessage(text)))
	if err != nil {
		t.Fatal(err)
	}
	if res.ChatID != "-1005" || len(h.srv.Sent(-1005)) != 2 || len(h.srv.Sent(-5)) != 0 {
		t.Fatalf("result %+v; new chat got %d parts", res, len(h.srv.Sent(-1005)))
	}
	if h.srv.Requests("sendMessage") != 3 {
		t.Fatalf("%d sendMessage calls; want 3 (refused, then 2 parts)", h.srv.Requests("sendMessage"))
	}
	logs := h.logs.FilterMessageSnippet("became a supergroup").All()
	if len(logs) != 1 || logs[0].ContextMap()["new_chat_id"] != int64(-1005) || logs[0].ContextMap()["chat_id"] != "-5" {
		t.Fatalf("migration log %+v", logs)
	}

	// Migrated again: given up after one resend.
	h.srv.Migrate(-1005, -1006)
	_, err = h.a.Send(t.Context(), sendTo("-5", platform.TextMessage("x")))
	var ae *APIError
	if !platform.IsPermanent(err) || !errors.As(err, &ae) || ae.MigrateToChatID != -1006 {
		t.Fatalf("second migration: %v", err)
	}
}

func TestSendPartialFailureNamesThePart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	msg := platform.OutboundMessage{Text: "caption follows", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}

	// Part 1 fails: nothing was delivered, so the error stays retryable.
	h.srv.Inject(telegramtest.Fault{Method: "sendMessage", Status: 500, Times: 1})
	_, err := h.a.Send(t.Context(), sendTo("1", msg))
	if err == nil || !strings.Contains(err.Error(), "part 1 of 2") || platform.IsPermanent(err) {
		t.Fatalf("Send = %v; want a retryable error naming part 1 of 2", err)
	}

	// Part 2 fails after part 1 was delivered: permanent, so that no retry
	// sends part 1 again.
	h.srv.Inject(telegramtest.Fault{Method: "sendPhoto", Status: 400, Description: "Bad Request: wrong file identifier", Times: 1})
	_, err = h.a.Send(t.Context(), sendTo("1", msg))
	if err == nil || !strings.Contains(err.Error(), "part 2 of 2 failed; part 1 was delivered") || !platform.IsPermanent(err) {
		t.Fatalf("Send = %v; want a permanent error naming part 2 of 2", err)
	}
	if sent := h.srv.Sent(1); len(sent) != 1 || sent[0].Text != "caption follows" {
		t.Fatalf("sent %+v; want part 1 once", sent)
	}
}

func TestSendCancel(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := h.a.Send(ctx, sendTo("1", platform.TextMessage("x"))); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Send = %v", err)
	}
	if h.srv.Requests("sendMessage") != 0 {
		t.Fatal("a request was made with a cancelled context")
	}

	// A slow answer is abandoned when ctx ends: Send returns long before
	// the hour the server would take (how long, in real time, depends on
	// the machine's load; waitPeriod bounds it).
	h.srv.Inject(telegramtest.Fault{Method: "sendMessage", Delay: time.Hour})
	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := h.a.Send(ctx, sendTo("1", platform.TextMessage("x")))
		done <- err
	}()
	if err := h.srv.WaitRequests(waitCtx(t), "sendMessage", 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Send = %v after %v", err, time.Since(start))
		}
		assertNoToken(t, err)
	case <-time.After(waitPeriod):
		t.Fatal("Send did not return after cancel")
	}
}

func TestSendConcurrentChats(t *testing.T) {
	h := newHarness(t, nil)
	const chats, perChat = 20, 5
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			for i := range perChat {
				if _, err := h.a.Send(t.Context(), sendTo(strconv.Itoa(c+1), platform.TextMessage(fmt.Sprint(i)))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for c := range chats {
		sent := h.srv.Sent(int64(c + 1))
		if len(sent) != perChat {
			t.Fatalf("chat %d got %d messages", c+1, len(sent))
		}
		for i, m := range sent {
			if m.Text != fmt.Sprint(i) {
				t.Fatalf("chat %d message %d = %q", c+1, i, m.Text)
			}
		}
	}
}
