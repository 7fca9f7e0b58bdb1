package telegramtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// A user's photo comes in Telegram's sizes, smallest first: a thumbnail
// whose longer side is 90 pixels, then the whole; a photo no larger than
// the thumbnail comes in one size.
func TestUserPhotoSizes(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		want [][2]int
	}{
		{0, 0, [][2]int{{90, 67}, {640, 480}}},
		{800, 600, [][2]int{{90, 67}, {800, 600}}},
		{60, 200, [][2]int{{27, 90}, {60, 200}}},
		{1000, 5, [][2]int{{90, 1}, {1000, 5}}},
		{90, 40, [][2]int{{90, 40}}},
		{32, 32, [][2]int{{32, 32}}},
	} {
		srv := telegramtest.NewServer(telegramtest.WithToken(token))
		srv.SayFile(5, platform.User{ID: "9", Name: "Ann"}, telegramtest.UserFile{Kind: "photo", Data: []byte("jpeg"), Width: tc.w, Height: tc.h})
		_, ar := call(t, srv, token, "getUpdates", nil)
		srv.Close()
		us := updates(t, ar)
		if from := us[0].Message.From; from == nil || from.ID != 9 || from.FirstName != "Ann" {
			t.Fatalf("the photo is from %+v; want Ann, 9", from)
		}
		var got [][2]int
		for _, p := range us[0].Message.Photo {
			got = append(got, [2]int{p.Width, p.Height})
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("a %d×%d photo's sizes = %v; want %v", tc.w, tc.h, got, tc.want)
		}
	}
}

// A user's file is described as Telegram does, and getFile and the file
// URL give its bytes; files over 20 MB are refused by getFile.
func TestUserFilesAndDownloads(t *testing.T) {
	srv := telegramtest.NewServer(telegramtest.WithToken(token))
	defer srv.Close()
	srv.SendUserFile(5, ann, telegramtest.UserFile{Kind: "photo", Data: []byte("jpeg"), Caption: "look", Width: 800, Height: 600})
	srv.SendUserFile(5, ann, telegramtest.UserFile{Kind: "animation", Name: "a.mp4", Data: []byte("mp4")})
	_, ar := call(t, srv, token, "getUpdates", nil)
	us := updates(t, ar)
	if len(us) != 2 {
		t.Fatalf("%d updates", len(us))
	}
	p := us[0].Message
	if len(p.Photo) != 2 || p.Photo[1].Width != 800 || p.Photo[0].Width != 90 || p.Caption != "look" || p.Photo[1].FileSize != 4 {
		t.Fatalf("photo message %+v", p)
	}
	if a := us[1].Message; a.Animation == nil || a.Document == nil || a.Animation.FileID != a.Document.FileID || a.Animation.FileName != "a.mp4" {
		t.Fatalf("animation message %+v", a)
	}
	_, ar = call(t, srv, token, "getFile", url.Values{"file_id": {p.Photo[1].FileID}})
	var f tgbotapi.File
	if err := json.Unmarshal(ar.Result, &f); err != nil || f.FileSize != 4 || f.FilePath == "" {
		t.Fatalf("getFile = %s, %v", ar.Result, err)
	}
	get := func(tok, path string) (int, string) {
		resp, err := http.Get(srv.URL() + "/file/bot" + tok + "/" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(token, f.FilePath); code != 200 || body != "jpeg" {
		t.Fatalf("download = %d %q", code, body)
	}
	if code, _ := get("1:wrong", f.FilePath); code != http.StatusUnauthorized {
		t.Fatalf("download with a wrong token = %d", code)
	}
	if code, _ := get(token, "photos/nope.jpg"); code != http.StatusNotFound {
		t.Fatalf("download of an unknown path = %d", code)
	}
	big := srv.AddFile("document", "big.bin", make([]byte, telegramtest.MaxDownload+1))
	if code, ar := call(t, srv, token, "getFile", url.Values{"file_id": {big}}); code != 400 || !strings.Contains(ar.Description, "file is too big") {
		t.Fatalf("getFile of a big file = %d %q", code, ar.Description)
	}
	if code, _ := call(t, srv, token, "getFile", url.Values{"file_id": {"nope"}}); code != 400 {
		t.Fatalf("getFile of an unknown file = %d", code)
	}
	if srv.Requests("downloadFile") != 3 {
		t.Fatalf("%d downloads counted", srv.Requests("downloadFile"))
	}
}

// sendMediaGroup records an album as one message per item with one
// media_group_id, keeps Telegram's rules, and answers with the messages.
func TestSendMediaGroup(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	known := srv.AddFile("photo", "", []byte("p"))
	media := func(items ...string) url.Values {
		return url.Values{"chat_id": {"5"}, "media": {"[" + strings.Join(items, ",") + "]"}}
	}
	code, ar := call(t, srv, token, "sendMediaGroup", media(
		`{"type":"photo","media":"`+known+`","caption":"one"}`, `{"type":"video","media":"https://e/v.mp4"}`))
	var msgs []tgbotapi.Message
	if code != 200 || json.Unmarshal(ar.Result, &msgs) != nil || len(msgs) != 2 || msgs[0].MediaGroupID == "" || msgs[0].MediaGroupID != msgs[1].MediaGroupID {
		t.Fatalf("sendMediaGroup = %d %s", code, ar.Result)
	}
	sent := srv.Sent(5)
	if len(sent) != 2 || string(sent[0].FileData) != "p" || sent[0].Text != "one" || sent[1].Kind != "video" {
		t.Fatalf("sent %+v", sent)
	}
	for name, v := range map[string]url.Values{
		"one item":         media(`{"type":"photo","media":"https://e/p.jpg"}`),
		"mixed":            media(`{"type":"photo","media":"https://e/p.jpg"}`, `{"type":"document","media":"https://e/d.pdf"}`),
		"a voice":          media(`{"type":"voice","media":"https://e/a.ogg"}`, `{"type":"voice","media":"https://e/b.ogg"}`),
		"unknown file":     media(`{"type":"photo","media":"nope"}`, `{"type":"photo","media":"https://e/p.jpg"}`),
		"missing upload":   media(`{"type":"photo","media":"attach://file-0"}`, `{"type":"photo","media":"https://e/p.jpg"}`),
		"not a JSON array": {"chat_id": {"5"}, "media": {"{"}},
	} {
		if code, _ := call(t, srv, token, "sendMediaGroup", v); code != 400 {
			t.Errorf("%s: %d; want 400", name, code)
		}
	}
	if n := len(srv.Sent(5)); n != 2 {
		t.Fatalf("%d messages after refused albums; want 2", n)
	}
}

// deleteMessage deletes the bot's and users' messages once; chat actions
// are known ones; a callback or inline query is answered once.
func TestDeleteActionsAndAnswers(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	srv.SendUserMessage(5, ann, "mine")
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"bot's"}})
	for _, id := range []string{"1", "2"} {
		if code, ar := call(t, srv, token, "deleteMessage", url.Values{"chat_id": {"5"}, "message_id": {id}}); code != 200 {
			t.Fatalf("delete %s: %d %s", id, code, ar.Description)
		}
	}
	if code, ar := call(t, srv, token, "deleteMessage", url.Values{"chat_id": {"5"}, "message_id": {"2"}}); code != 400 || !strings.Contains(ar.Description, "message to delete not found") {
		t.Fatalf("second delete = %d %q", code, ar.Description)
	}
	if d := srv.Deletions(5); len(d) != 2 {
		t.Fatalf("deletions %+v", d)
	}
	if code, _ := call(t, srv, token, "editMessageText", url.Values{"chat_id": {"5"}, "message_id": {"2"}, "text": {"x"}}); code != 400 {
		t.Fatalf("edit of a deleted message = %d", code)
	}

	if code, _ := call(t, srv, token, "sendChatAction", url.Values{"chat_id": {"5"}, "action": {"typing"}}); code != 200 {
		t.Fatalf("typing = %d", code)
	}
	if code, _ := call(t, srv, token, "sendChatAction", url.Values{"chat_id": {"5"}, "action": {"dancing"}}); code != 400 {
		t.Fatalf("dancing = %d", code)
	}
	if a := srv.ChatActions(5); len(a) != 1 || a[0].Action != "typing" {
		t.Fatalf("actions %+v", a)
	}

	cb := srv.PushCallback(5, ann, 2, "x")
	answer := url.Values{"callback_query_id": {cb}, "text": {"hi"}, "show_alert": {"true"}, "url": {"t.me/bot?start=1"}}
	if code, _ := call(t, srv, token, "answerCallbackQuery", answer); code != 200 {
		t.Fatalf("answer = %d", code)
	}
	if code, _ := call(t, srv, token, "answerCallbackQuery", answer); code != 400 {
		t.Fatalf("second answer = %d", code)
	}
	long := url.Values{"callback_query_id": {"other"}, "text": {strings.Repeat("x", 201)}}
	if code, _ := call(t, srv, token, "answerCallbackQuery", long); code != 400 {
		t.Fatalf("answer of 201 characters = %d", code)
	}
	if a := srv.CallbackAnswers(); len(a) != 1 || a[0].Text != "hi" || !a[0].ShowAlert || a[0].URL != "t.me/bot?start=1" {
		t.Fatalf("answers %+v", a)
	}

	q := srv.PushInlineQuery(ann, "cats", "sender")
	results := `[{"type":"article","id":"1","title":"Cats","input_message_content":{"message_text":"meow"}},{"type":"photo","id":"2","photo_url":"https://e/c.jpg","thumbnail_url":"https://e/t.jpg"}]`
	inline := url.Values{"inline_query_id": {q}, "results": {results}, "cache_time": {"0"}, "is_personal": {"true"}}
	if code, ar := call(t, srv, token, "answerInlineQuery", inline); code != 200 {
		t.Fatalf("inline answer = %d %q", code, ar.Description)
	}
	if code, _ := call(t, srv, token, "answerInlineQuery", inline); code != 400 {
		t.Fatalf("second inline answer = %d", code)
	}
	for name, rs := range map[string]string{
		"no title":     `[{"type":"article","id":"1","input_message_content":{"message_text":"x"}}]`,
		"repeated ID":  `[{"type":"photo","id":"1","photo_url":"u"},{"type":"photo","id":"1","photo_url":"u"}]`,
		"no photo":     `[{"type":"photo","id":"1"}]`,
		"unknown type": `[{"type":"hologram","id":"1"}]`,
		"51 results":   "[" + strings.Repeat(`{"type":"photo","id":"x","photo_url":"u"},`, 50) + `{"type":"photo","id":"y","photo_url":"u"}]`,
	} {
		q := srv.PushInlineQuery(ann, "x", "")
		if code, _ := call(t, srv, token, "answerInlineQuery", url.Values{"inline_query_id": {q}, "results": {rs}}); code != 400 {
			t.Errorf("%s: %d; want 400", name, code)
		}
	}
	got := srv.InlineAnswers()
	if len(got) != 1 || got[0].InlineQueryID != q || !got[0].IsPersonal || len(got[0].Results) != 2 ||
		got[0].Results[0].Text != "meow" || got[0].Results[1].URL != "https://e/c.jpg" {
		t.Fatalf("inline answers %+v", got)
	}
	srv.PushChosenInlineResult(ann, "1", "cats")
	_, ar := call(t, srv, token, "getUpdates", nil)
	var last tgbotapi.Update
	for _, u := range updates(t, ar) {
		last = u
	}
	if r := last.ChosenInlineResult; r == nil || r.ResultID != "1" || r.Query != "cats" {
		t.Fatalf("last update %+v", last)
	}
}

// A reply keyboard and its removal are recorded; an inline keyboard only
// goes with an edit.
func TestReplyKeyboards(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	kb := `{"keyboard":[[{"text":"A"},{"text":"B"}]],"one_time_keyboard":true,"resize_keyboard":true,"input_field_placeholder":"p"}`
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"pick"}, "reply_markup": {kb}})
	call(t, srv, token, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"done"}, "reply_markup": {`{"remove_keyboard":true}`}})
	sent := srv.Sent(5)
	if len(sent) != 2 || sent[0].ReplyKeyboard == nil || len(sent[0].ReplyKeyboard.Keyboard[0]) != 2 || !sent[0].ReplyKeyboard.OneTimeKeyboard ||
		sent[0].ReplyKeyboard.InputFieldPlaceholder != "p" || !sent[1].RemoveKeyboard {
		t.Fatalf("sent %+v", sent)
	}
	for name, markup := range map[string]string{
		"empty keyboard":   `{"keyboard":[[]]}`,
		"blank button":     `{"keyboard":[[{"text":""}]]}`,
		"long placeholder": `{"keyboard":[[{"text":"a"}]],"input_field_placeholder":"` + strings.Repeat("p", 65) + `"}`,
	} {
		if code, _ := call(t, srv, token, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"x"}, "reply_markup": {markup}}); code != 400 {
			t.Errorf("%s: %d; want 400", name, code)
		}
	}
	if code, _ := call(t, srv, token, "editMessageText", url.Values{"chat_id": {"5"}, "message_id": {"1"}, "text": {"y"}, "reply_markup": {kb}}); code != 400 {
		t.Errorf("an edit with a reply keyboard: %d; want 400", code)
	}
}
