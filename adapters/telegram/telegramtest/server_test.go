package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

const token = "123:secret-token"

var ann = tgbotapi.User{ID: 7, FirstName: "Ann", UserName: "ann"}

// call posts params to method and decodes Telegram's answer.
func call(t *testing.T, srv *telegramtest.Server, tok, method string, params url.Values) (int, tgbotapi.APIResponse) {
	t.Helper()
	return callCtx(t, context.Background(), srv, tok, method, params)
}

func callCtx(t *testing.T, ctx context.Context, srv *telegramtest.Server, tok, method string, params url.Values) (int, tgbotapi.APIResponse) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf(srv.Endpoint(), tok, method), strings.NewReader(params.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ar tgbotapi.APIResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		t.Fatalf("%s: status %d, body %q is not JSON", method, resp.StatusCode, body)
	}
	return resp.StatusCode, ar
}

func updates(t *testing.T, ar tgbotapi.APIResponse) []tgbotapi.Update {
	t.Helper()
	var us []tgbotapi.Update
	if err := json.Unmarshal(ar.Result, &us); err != nil {
		t.Fatalf("getUpdates result %s: %v", ar.Result, err)
	}
	return us
}

func TestGetMeAndToken(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.WithToken(token), telegramtest.WithBot(tgbotapi.User{ID: 99, UserName: "my_bot"}))
	defer srv.Close()

	status, ar := call(t, srv, token, "getMe", nil)
	var me tgbotapi.User
	if status != 200 || !ar.Ok || json.Unmarshal(ar.Result, &me) != nil || me.ID != 99 || me.UserName != "my_bot" || !me.IsBot {
		t.Fatalf("getMe = %d %+v (%+v)", status, ar, me)
	}
	status, ar = call(t, srv, "123:wrong", "getMe", nil)
	if status != 401 || ar.Ok || ar.ErrorCode != 401 || ar.Description != "Unauthorized" {
		t.Fatalf("wrong token: %d %+v", status, ar)
	}
	if status, _ = call(t, srv, token, "noSuchMethod", nil); status != 404 {
		t.Fatalf("unknown method: %d", status)
	}
	if got := srv.Requests("getMe"); got != 2 {
		t.Fatalf("Requests(getMe) = %d; want 2", got)
	}

	// Any non-empty token is accepted by default.
	open := telegramtest.NewServer()
	defer open.Close()
	if status, _ := call(t, open, "whatever", "getMe", nil); status != 200 {
		t.Fatalf("default server refused a token: %d", status)
	}
}

func TestGetUpdatesOffsetsAndLongPoll(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()

	id1 := srv.SendUserMessage(42, ann, "/start@herald_test_bot now")
	id2 := srv.SendUserMessage(-100, ann, "hello")
	if id2 != id1+1 {
		t.Fatalf("update IDs %d, %d not consecutive", id1, id2)
	}
	_, ar := call(t, srv, token, "getUpdates", url.Values{"timeout": {"1"}})
	us := updates(t, ar)
	if len(us) != 2 || us[0].UpdateID != id1 || us[1].UpdateID != id2 {
		t.Fatalf("getUpdates = %+v", us)
	}
	m := us[0].Message
	if m.Text != "/start@herald_test_bot now" || m.Chat.Type != "private" || m.From.ID != ann.ID ||
		len(m.Entities) != 1 || m.Entities[0].Type != "bot_command" || m.Entities[0].Length != len("/start@herald_test_bot") {
		t.Fatalf("message = %+v", m)
	}
	if us[1].Message.Chat.Type != "group" {
		t.Fatalf("chat -100 type = %q", us[1].Message.Chat.Type)
	}

	// Unconfirmed updates come again; a higher offset confirms them.
	_, ar = call(t, srv, token, "getUpdates", nil)
	if len(updates(t, ar)) != 2 {
		t.Fatal("unconfirmed updates not returned again")
	}
	_, ar = call(t, srv, token, "getUpdates", url.Values{"offset": {fmt.Sprint(id1 + 1)}, "limit": {"1"}})
	if us := updates(t, ar); len(us) != 1 || us[0].UpdateID != id2 {
		t.Fatalf("after confirming %d: %+v", id1, us)
	}
	if srv.Offset() != id1+1 || srv.Pending() != 1 {
		t.Fatalf("Offset, Pending = %d, %d", srv.Offset(), srv.Pending())
	}

	// A long poll returns as soon as an update arrives.
	done := make(chan []tgbotapi.Update)
	go func() {
		_, ar := call(t, srv, token, "getUpdates", url.Values{"offset": {fmt.Sprint(id2 + 1)}, "timeout": {"30"}})
		done <- updates(t, ar)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitUntil(ctx, func() bool { return srv.Pending() == 0 }); err != nil {
		t.Fatal(err)
	}
	id3 := srv.SendUserMessage(42, ann, "third")
	select {
	case us := <-done:
		if len(us) != 1 || us[0].UpdateID != id3 {
			t.Fatalf("long poll = %+v", us)
		}
	case <-ctx.Done():
		t.Fatal("long poll did not return when an update arrived")
	}
}

func TestGetUpdatesTimeoutAndConflict(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()

	start := time.Now()
	_, ar := call(t, srv, token, "getUpdates", url.Values{"timeout": {"1"}})
	if us := updates(t, ar); len(us) != 0 || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("empty long poll = %+v after %v", us, time.Since(start))
	}

	// A second poller ends the first with 409.
	first := make(chan int)
	go func() {
		status, _ := call(t, srv, token, "getUpdates", url.Values{"timeout": {"30"}})
		first <- status
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitUntil(ctx, func() bool { return srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	status, _ := call(t, srv, token, "getUpdates", nil)
	if status != 200 {
		t.Fatalf("second poller: %d", status)
	}
	if got := <-first; got != http.StatusConflict {
		t.Fatalf("first poller after the second: %d; want 409", got)
	}

	// While a webhook is set, getUpdates is refused.
	if status, _ := call(t, srv, token, "setWebhook", url.Values{"url": {"https://bot.example/hook"}, "max_connections": {"101"}}); status != 400 {
		t.Fatalf("setWebhook with max_connections 101: %d; want 400", status)
	}
	if status, _ := call(t, srv, token, "setWebhook", url.Values{"url": {"https://bot.example/hook"}, "secret_token": {"s3"}, "allowed_updates": {`["message"]`}, "max_connections": {"1"}}); status != 200 {
		t.Fatalf("setWebhook: %d", status)
	}
	if w := srv.Webhook(); w.URL != "https://bot.example/hook" || w.SecretToken != "s3" || len(w.AllowedUpdates) != 1 || w.MaxConnections != 1 {
		t.Fatalf("Webhook = %+v", w)
	}
	if status, ar := call(t, srv, token, "getUpdates", nil); status != 409 || !strings.Contains(ar.Description, "webhook is active") {
		t.Fatalf("getUpdates with webhook: %d %+v", status, ar)
	}
	call(t, srv, token, "deleteWebhook", nil)
	if status, _ := call(t, srv, token, "getUpdates", nil); status != 200 || srv.Webhook().URL != "" {
		t.Fatalf("getUpdates after deleteWebhook: %d", status)
	}
}

func TestSendMessageRecorded(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()

	before := time.Now()
	status, ar := call(t, srv, token, "sendMessage", url.Values{
		"chat_id": {"42"}, "text": {"<b>hi</b>"}, "parse_mode": {"HTML"}, "reply_to_message_id": {"5"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Yes","callback_data":"y"}]]}`},
	})
	var msg tgbotapi.Message
	if status != 200 || json.Unmarshal(ar.Result, &msg) != nil || msg.MessageID != 1 || msg.Chat.ID != 42 || msg.Text != "<b>hi</b>" {
		t.Fatalf("sendMessage = %d %s", status, ar.Result)
	}
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"two"}})
	sent := srv.Sent(42)
	if len(sent) != 2 {
		t.Fatalf("Sent(42) = %+v", sent)
	}
	m := sent[0]
	if m.Kind != "text" || m.Text != "<b>hi</b>" || m.ParseMode != "HTML" || m.ReplyToMessageID != 5 ||
		len(m.Keyboard) != 1 || *m.Keyboard[0][0].CallbackData != "y" || m.At.Before(before) || sent[1].MessageID != 2 {
		t.Fatalf("recorded %+v", m)
	}
	if len(srv.Sent(43)) != 0 || len(srv.AllSent()) != 2 {
		t.Fatal("messages recorded for the wrong chat")
	}
	// Chats interleaved: each chat's messages, in order, and only its own.
	for i := range 6 {
		chat := []string{"43", "-44"}[i%2]
		call(t, srv, token, "sendMessage", url.Values{"chat_id": {chat}, "text": {strconv.Itoa(i)}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for chat, want := range map[int64][]string{43: {"0", "2", "4"}, -44: {"1", "3", "5"}, 42: {"<b>hi</b>", "two"}} {
		got, err := srv.WaitSent(ctx, chat, len(want))
		var texts []string
		for _, m := range got {
			texts = append(texts, m.Text)
		}
		if err != nil || !slices.Equal(texts, want) {
			t.Errorf("WaitSent(%d) = %q, %v; want %q", chat, texts, err, want)
		}
	}

	for _, tc := range []struct {
		name   string
		params url.Values
		desc   string
	}{
		{"empty", url.Values{"chat_id": {"1"}}, "Bad Request: message text is empty"},
		{"no chat", url.Values{"text": {"x"}}, "Bad Request: chat not found"},
		{"too long", url.Values{"chat_id": {"1"}, "text": {strings.Repeat("я", 4097)}}, "Bad Request: message is too long"},
		{"parse mode", url.Values{"chat_id": {"1"}, "text": {"x"}, "parse_mode": {"BBCode"}}, "Bad Request: unsupported parse_mode"},
		{"callback data", url.Values{"chat_id": {"1"}, "text": {"x"}, "reply_markup": {`{"inline_keyboard":[[{"text":"a","callback_data":"` + strings.Repeat("x", 65) + `"}]]}`}}, "Bad Request: BUTTON_DATA_INVALID"},
	} {
		status, ar := call(t, srv, token, "sendMessage", tc.params)
		if status != 400 || ar.ErrorCode != 400 || ar.Description != tc.desc {
			t.Errorf("%s: %d %+v; want 400 %q", tc.name, status, ar, tc.desc)
		}
	}
	// 4096 UTF-16 units pass; an emoji is two units.
	if status, _ := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {strings.Repeat("😀", 2048)}}); status != 200 {
		t.Fatalf("4096 units refused: %d", status)
	}
	if status, _ := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {strings.Repeat("😀", 2048) + "x"}}); status != 400 {
		t.Fatalf("4097 units accepted: %d", status)
	}
}

func TestSendFiles(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()

	call(t, srv, token, "sendPhoto", url.Values{"chat_id": {"5"}, "photo": {"https://img.example/cat.png"}, "caption": {"cat"}})

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("chat_id", "5")
	fw, _ := mw.CreateFormFile("document", "notes.txt")
	fw.Write([]byte("file body"))
	mw.Close()
	resp, err := http.Post(fmt.Sprintf(srv.Endpoint(), token, "sendDocument"), mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("multipart sendDocument: %d", resp.StatusCode)
	}
	if status, ar := call(t, srv, token, "sendPhoto", url.Values{"chat_id": {"5"}}); status != 400 || ar.Description != "Bad Request: there is no photo in the request" {
		t.Fatalf("photo without file: %d %+v", status, ar)
	}

	sent := srv.Sent(5)
	if len(sent) != 2 || sent[0].Kind != "photo" || sent[0].FileURL != "https://img.example/cat.png" || sent[0].Text != "cat" ||
		sent[1].Kind != "document" || sent[1].FileName != "notes.txt" || string(sent[1].FileData) != "file body" {
		t.Fatalf("Sent(5) = %+v", sent)
	}
}

// A multipart body's parts are read one after another into one buffer:
// each upload keeps its own bytes, with or without the request's length
// (a chunked body: the Telegram library uploads through a pipe), the
// fields join the URL's query (which comes first), a message's file is the
// server's own copy, and a body cut short is refused.
func TestMultipartUploads(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("media", `[{"type":"photo","media":"attach://a","caption":"first"},{"type":"photo","media":"attach://b"}]`)
	a, b := bytes.Repeat([]byte("a"), 100<<10), bytes.Repeat([]byte("b"), 3)
	for name, data := range map[string][]byte{"a": a, "b": b} {
		fw, _ := mw.CreateFormFile(name, name+".jpg")
		fw.Write(data)
	}
	mw.WriteField("chat_id", "6") // after the query's chat_id
	mw.Close()
	post := func(chat string, r io.Reader) int {
		t.Helper()
		resp, err := http.Post(fmt.Sprintf(srv.Endpoint(), token, "sendMediaGroup")+"?chat_id="+chat, mw.FormDataContentType(), r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for chat, r := range map[int64]io.Reader{
		5: bytes.NewReader(body.Bytes()),                 // its length known
		7: io.MultiReader(bytes.NewReader(body.Bytes())), // chunked
	} {
		if code := post(fmt.Sprint(chat), r); code != 200 {
			t.Fatalf("chat %d: multipart sendMediaGroup: %d", chat, code)
		}
		sent := srv.Sent(chat)
		if len(sent) != 2 || !bytes.Equal(sent[0].FileData, a) || sent[0].Text != "first" || !bytes.Equal(sent[1].FileData, b) {
			t.Fatalf("Sent(%d) = %d messages; want the album's two files whole", chat, len(sent))
		}
		sent[1].FileData[0] = 'x' // the caller's copy
		if data, ok := srv.FileData(sent[1].FileID); !ok || !bytes.Equal(data, b) {
			t.Fatalf("FileData after the caller changed its copy = %q, %v; want %q", data, ok, b)
		}
	}
	for name, cut := range map[string][]byte{
		"empty":                  nil,
		"without its last bytes": body.Bytes()[:body.Len()-20],
		"without the closing --": body.Bytes()[:body.Len()-len("--\r\n")],
	} {
		if code := post("8", bytes.NewReader(cut)); code == 200 {
			t.Errorf("a body %s: 200; want it refused", name)
		}
	}
	if n := len(srv.Sent(8)); n != 0 {
		t.Errorf("%d messages sent from bodies cut short; want none", n)
	}
}

// WaitUntil calls its condition again after its pause, also when ctx ends
// in it: the change it waited for may have made it true.
func TestWaitUntilChecksAfterItsPause(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := srv.WaitUntil(ctx, func() bool {
		calls++
		if calls > 1 {
			return true
		}
		srv.SendUserMessage(1, ann, "hi") // a change while cond runs
		time.Sleep(300 * time.Millisecond)
		time.AfterFunc(100*time.Millisecond, cancel) // in the pause of about 300 ms that follows
		return false
	})
	if err != nil || calls != 2 {
		t.Fatalf("WaitUntil = %v after %d calls; want nil after 2", err, calls)
	}
}

func TestCallbacks(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	id := srv.PushCallback(42, ann, 3, "vote:yes")
	_, ar := call(t, srv, token, "getUpdates", nil)
	us := updates(t, ar)
	if len(us) != 1 || us[0].CallbackQuery == nil || us[0].CallbackQuery.ID != id || us[0].CallbackQuery.Data != "vote:yes" ||
		us[0].CallbackQuery.Message.MessageID != 3 || us[0].CallbackQuery.Message.Chat.ID != 42 {
		t.Fatalf("callback update = %s", ar.Result)
	}
	call(t, srv, token, "answerCallbackQuery", url.Values{"callback_query_id": {id}, "text": {"ok"}})
	if a := srv.CallbackAnswers(); len(a) != 1 || a[0].CallbackQueryID != id || a[0].Text != "ok" {
		t.Fatalf("CallbackAnswers = %+v", a)
	}
}

func TestPushRawUpdate(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	id := srv.PushRawUpdate([]byte(`{"update_id":50,"message":"not an object"}`))
	next := srv.SendUserMessage(1, ann, "after")
	if id != 50 || next != 51 {
		t.Fatalf("ids %d, %d; want 50, 51", id, next)
	}
	_, ar := call(t, srv, token, "getUpdates", nil)
	var raws []json.RawMessage
	if err := json.Unmarshal(ar.Result, &raws); err != nil || len(raws) != 2 || string(raws[0]) != `{"update_id":50,"message":"not an object"}` {
		t.Fatalf("raw updates = %s", ar.Result)
	}
}

func TestFaults(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	send := func(chat string) (int, tgbotapi.APIResponse) {
		return call(t, srv, token, "sendMessage", url.Values{"chat_id": {chat}, "text": {"x"}})
	}

	// 429 for one chat, twice.
	srv.Inject(telegramtest.Fault{Method: "sendMessage", ChatID: 1, Times: 2, Status: 429, RetryAfter: 3})
	for range 2 {
		status, ar := send("1")
		if status != 429 || ar.ErrorCode != 429 || ar.Parameters == nil || ar.Parameters.RetryAfter != 3 || ar.Description != "Too Many Requests: retry after 3" {
			t.Fatalf("injected 429: %d %+v", status, ar)
		}
	}
	if status, _ := send("2"); status != 200 {
		t.Fatal("fault for chat 1 hit chat 2")
	}
	if status, _ := send("1"); status != 200 {
		t.Fatal("fault applied more than Times")
	}

	// Old-style 429 without parameters.
	remove := srv.Inject(telegramtest.Fault{Status: 429, RetryAfter: 4, NoParameters: true})
	if status, ar := send("1"); status != 429 || ar.Parameters != nil || ar.Description != "Too Many Requests: retry after 4" {
		t.Fatalf("legacy 429: %d %+v", status, ar)
	}
	remove()

	// A proxy's HTML page.
	srv.Inject(telegramtest.Fault{HTML: true, Times: 1})
	resp, err := http.Post(fmt.Sprintf(srv.Endpoint(), token, "sendMessage"), "application/x-www-form-urlencoded", strings.NewReader("chat_id=1&text=x"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.HasPrefix(string(body), "<html>") {
		t.Fatalf("HTML fault: %d %q", resp.StatusCode, body)
	}

	// A rule function; Block and Migrate are rules too.
	removeRule := srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		if r.Method == "sendMessage" && r.Params.Get("text") == "boom" {
			return &telegramtest.Fault{Status: 500}
		}
		return nil
	})
	if status, ar := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"boom"}}); status != 500 || ar.Description != "Internal Server Error" {
		t.Fatalf("rule: %d %+v", status, ar)
	}
	removeRule()
	unblock := srv.Block(9)
	if status, ar := send("9"); status != 403 || !strings.Contains(ar.Description, "blocked") {
		t.Fatalf("Block: %d %+v", status, ar)
	}
	unblock()
	srv.Migrate(-5, -1005)
	if status, ar := send("-5"); status != 400 || ar.Parameters == nil || ar.Parameters.MigrateToChatID != -1005 {
		t.Fatalf("Migrate: %d %+v", status, ar)
	}
	if status, _ := send("-1005"); status != 200 {
		t.Fatal("send to the new chat failed")
	}
	if got := len(srv.Sent(1)); got != 1 {
		t.Fatalf("failed sends recorded: %d messages in chat 1; want 1", got)
	}
}

func TestFloodWait(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	const window = 1500 * time.Millisecond
	start := time.Now()
	srv.FloodWait(1, window)
	status, ar := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
	elapsed := time.Since(start) // at least how long the request took to arrive
	// retry_after is the time left when the request came, rounded up: 2 s
	// if it came within half a second (the usual case), 1 s if later, and
	// no 429 at all after the window. The rounding itself is checked
	// exactly in TestRetryAfterSeconds.
	switch {
	case elapsed < window-time.Second:
		if status != 429 || ar.Parameters == nil || ar.Parameters.RetryAfter != 2 {
			t.Fatalf("FloodWait: %d %+v after %v; want 429 with retry_after 2 (rounded up)", status, ar, elapsed)
		}
	case elapsed < window:
		if status != 429 || ar.Parameters == nil || ar.Parameters.RetryAfter < 1 || ar.Parameters.RetryAfter > 2 {
			t.Fatalf("FloodWait: %d %+v after %v; want 429 with retry_after 1 or 2", status, ar, elapsed)
		}
	default:
		t.Logf("the request took %v, longer than the flood wait", elapsed)
	}
	if status, _ := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"2"}, "text": {"x"}}); status != 200 {
		t.Fatal("flood wait of chat 1 hit chat 2")
	}
	if status, _ := call(t, srv, token, "getUpdates", nil); status != 200 {
		t.Fatal("flood wait hit getUpdates")
	}
}

func TestDelayAndClose(t *testing.T) {
	srv := telegramtest.NewServer()
	srv.Inject(telegramtest.Fault{Method: "getMe", Delay: 100 * time.Millisecond, Times: 1})
	start := time.Now()
	if status, _ := call(t, srv, token, "getMe", nil); status != 200 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("delayed getMe: %d after %v", status, time.Since(start))
	}

	// Close wakes a long poll, a slow response and a waiter.
	srv.Inject(telegramtest.Fault{Method: "sendMessage", Delay: time.Hour})
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(3)
	go func() {
		defer wg.Done()
		resp, err := http.PostForm(fmt.Sprintf(srv.Endpoint(), token, "getUpdates"), url.Values{"timeout": {"60"}})
		if err == nil {
			resp.Body.Close()
		}
	}()
	go func() {
		defer wg.Done()
		resp, err := http.PostForm(fmt.Sprintf(srv.Endpoint(), token, "sendMessage"), url.Values{"chat_id": {"1"}, "text": {"x"}})
		if err == nil {
			resp.Body.Close()
		}
	}()
	go func() {
		defer wg.Done()
		_, err := srv.WaitSent(context.Background(), 1, 1)
		errs <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitUntil(ctx, func() bool { return srv.WaitingPolls() == 1 && srv.Requests("sendMessage") == 1 }); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	wg.Wait()
	if err := <-errs; err != telegramtest.ErrClosed {
		t.Fatalf("WaitSent after Close = %v; want ErrClosed", err)
	}
	srv.Close() // a second Close is harmless
}

func TestWaitSentContext(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	got, err := srv.WaitSent(ctx, 1, 2)
	if err != context.DeadlineExceeded || len(got) != 1 {
		t.Fatalf("WaitSent = %d messages, %v; want 1, DeadlineExceeded", len(got), err)
	}
}

// WaitUntil checks changes that come faster than its condition runs
// together: after a call that took d, the next begins at least d after it
// ended, so a condition that copies what was sent costs at most half a
// processor however fast the bot sends.
func TestWaitUntilPacesACostlyCondition(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // changes as fast as they come
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
				srv.SendUserMessage(int64(i), ann, "hi")
			}
		}
	})
	type call struct{ began, ended time.Time }
	var calls []call
	err := srv.WaitUntil(ctx, func() bool {
		c := call{began: time.Now()}
		time.Sleep(time.Millisecond)
		c.ended = time.Now()
		calls = append(calls, c)
		return len(calls) == 20
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(calls); i++ {
		prev := calls[i-1]
		if gap, took := calls[i].began.Sub(prev.ended), prev.ended.Sub(prev.began); gap < took {
			t.Fatalf("call %d began %v after call %d ended, which took %v; want at least that", i, gap, i-1, took)
		}
	}
	if srv.Pending() < 20 {
		t.Fatalf("%d updates pushed; want changes throughout", srv.Pending())
	}
}

// WaitSent counts the chat's messages among others' and returns them all;
// NumSent counts every chat's.
func TestWaitSentAndNumSent(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		call(t, srv, token, "sendMessage", url.Values{"chat_id": {"5"}, "text": {fmt.Sprint(i)}})
		call(t, srv, token, "sendMessage", url.Values{"chat_id": {"6"}, "text": {"other"}})
	}
	got, err := srv.WaitSent(ctx, 5, 2)
	if err != nil || len(got) != 3 || got[2].Text != "2" {
		t.Fatalf("WaitSent(5, 2) = %d messages, %v; want the 3 of chat 5", len(got), err)
	}
	if n := srv.NumSent(); n != 6 {
		t.Fatalf("NumSent = %d; want 6", n)
	}
}

func TestJSONBody(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	body := `{"chat_id":42,"text":"json body","reply_markup":{"inline_keyboard":[[{"text":"a","callback_data":"b"}]]}}`
	resp, err := http.Post(fmt.Sprintf(srv.Endpoint(), token, "sendMessage"), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sent := srv.Sent(42)
	if resp.StatusCode != 200 || len(sent) != 1 || sent[0].Text != "json body" || len(sent[0].Keyboard) != 1 {
		t.Fatalf("JSON sendMessage: %d %+v", resp.StatusCode, sent)
	}
	resp, err = http.Post(fmt.Sprintf(srv.Endpoint(), token, "sendMessage"), "application/json", strings.NewReader("{bad"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad JSON body: %d", resp.StatusCode)
	}
}

// After ResetUpdateIDs the new, lower IDs are returned to a bot whose
// offset came from the old ones, and confirmed only by an offset past them.
func TestResetUpdateIDs(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	poll := func(offset int) []int {
		t.Helper()
		_, ar := call(t, srv, token, "getUpdates", url.Values{"offset": {fmt.Sprint(offset)}})
		var ids []int
		for _, u := range updates(t, ar) {
			ids = append(ids, u.UpdateID)
		}
		return ids
	}
	srv.ResetUpdateIDs(727334707)
	old := srv.SendUserMessage(1, ann, "before")
	if old != 727334707 {
		t.Fatalf("first ID after the reset = %d", old)
	}
	if got := poll(0); len(got) != 1 || got[0] != old {
		t.Fatalf("getUpdates = %v", got)
	}
	if got := poll(old + 1); len(got) != 0 || srv.Pending() != 0 {
		t.Fatalf("after confirming: %v, %d pending", got, srv.Pending())
	}

	srv.ResetUpdateIDs(117314199) // a week later
	low := srv.SendUserMessage(1, ann, "after a week")
	next := srv.SendUserMessage(2, ann, "and another")
	if low != 117314199 || next != low+1 {
		t.Fatalf("IDs after the second reset: %d, %d", low, next)
	}
	for range 2 { // the old offset confirms neither
		if got := poll(old + 1); len(got) != 2 || got[0] != low || got[1] != next {
			t.Fatalf("getUpdates with the old offset = %v; want [%d %d]", got, low, next)
		}
	}
	if got := poll(low + 1); len(got) != 1 || got[0] != next {
		t.Fatalf("getUpdates(%d) = %v; want [%d]", low+1, got, next)
	}
	if got := poll(next + 1); len(got) != 0 || srv.Pending() != 0 {
		t.Fatalf("after confirming all: %v, %d pending", got, srv.Pending())
	}
}

// What Sent returns is the caller's own: changing it changes nothing for
// the next caller.
func TestSentIsACopy(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"a","callback_data":"b"}]]}`}})
	first := srv.Sent(1)
	*first[0].Keyboard[0][0].CallbackData = "changed"
	first[0].Keyboard[0][0].Text = "changed"
	all := srv.AllSent()
	all[0].Keyboard[0] = nil
	if m := srv.Sent(1)[0]; *m.Keyboard[0][0].CallbackData != "b" || m.Keyboard[0][0].Text != "a" {
		t.Fatalf("the server's record changed: %+v", m.Keyboard)
	}
}

// A Reset fault handles the request and then hangs up, so the message is
// sent although the client gets no answer; a Drop fault hangs up without
// handling it. The client sees a failure after its request was written,
// over a socket and in memory alike.
func TestResetAndDrop(t *testing.T) {
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprint("InMemory=", inMemory), func(t *testing.T) {
			var opts []telegramtest.Option
			if inMemory {
				opts = append(opts, telegramtest.InMemory())
			}
			srv := telegramtest.NewServer(opts...)
			defer srv.Close()
			client := srv.Client()
			defer client.CloseIdleConnections()
			send := func(text string) (wrote bool, err error) {
				trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
					if info.Err == nil {
						wrote = true
					}
				}}
				ctx := httptrace.WithClientTrace(context.Background(), trace)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf(srv.Endpoint(), token, "sendMessage"),
					strings.NewReader(url.Values{"chat_id": {"1"}, "text": {text}}.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return wrote, err
			}
			srv.Inject(telegramtest.Fault{Method: "sendMessage", Reset: true, Times: 1})
			srv.Inject(telegramtest.Fault{Method: "sendMessage", Drop: true, Reset: true, Times: 1})
			for _, text := range []string{"reset", "dropped"} {
				wrote, err := send(text)
				if err == nil || !wrote {
					t.Fatalf("%s: err %v, request written %v; want an error after the request was written", text, err, wrote)
				}
				if inMemory && !errors.Is(err, telegramtest.ErrReset) {
					t.Fatalf("%s: err %v; want ErrReset", text, err)
				}
			}
			if wrote, err := send("fine"); err != nil || !wrote {
				t.Fatalf("after the faults: %v", err)
			}
			var texts []string
			for _, m := range srv.Sent(1) {
				texts = append(texts, m.Text)
			}
			if strings.Join(texts, ",") != "reset,fine" || srv.Requests("sendMessage") != 3 {
				t.Fatalf("sent %q in %d requests; want the reset message and the last, in 3", texts, srv.Requests("sendMessage"))
			}
		})
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// WithListener serves on the listener given, which sees every connection.
func TestWithListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	srv := telegramtest.NewServer(telegramtest.WithListener(ln))
	defer srv.Close()
	if !strings.HasSuffix(srv.URL(), inner.Addr().String()) {
		t.Fatalf("URL %s; want the listener's address %s", srv.URL(), inner.Addr())
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for range 3 {
		resp, err := client.Post(fmt.Sprintf(srv.Endpoint(), token, "getMe"), "application/x-www-form-urlencoded", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Fatalf("%d connections accepted for 3 requests on one keep-alive client; want 1", n)
	}
}

// A server made WithTLS serves HTTPS and speaks HTTP/2 to its Client,
// which trusts its certificate; the same server listens on a listener of
// the test's own with it.
func TestWithTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := telegramtest.NewServer(telegramtest.WithTLS(), telegramtest.WithListener(ln))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL(), "https://"+ln.Addr().String()) {
		t.Fatalf("URL = %q; want https on %s", srv.URL(), ln.Addr())
	}
	resp, err := srv.Client().Get(fmt.Sprintf(srv.Endpoint(), "123:abc", "getMe"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ar struct {
		OK     bool `json:"ok"`
		Result struct {
			ID int64 `json:"id"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ar); err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 2 || !ar.OK || ar.Result.ID != srv.Bot().ID {
		t.Fatalf("getMe over %s = %+v; want HTTP/2 and the bot", resp.Proto, ar)
	}
	if _, err := http.Get(fmt.Sprintf(srv.Endpoint(), "123:abc", "getMe")); err == nil {
		t.Fatal("a client that does not trust the server's certificate reached it")
	}
}
