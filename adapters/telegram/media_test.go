package telegram

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// Every kind of file goes by its method, by bytes, URL or file ID, with
// its caption in the message's parse mode; stickers and video notes have
// no caption, and a video note goes by no URL.
func TestSendMediaKinds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	known := h.srv.AddFile("video", "clip.mp4", []byte("known video"))
	methods := map[platform.AttachmentKind]string{
		platform.AttachPhoto: "sendPhoto", platform.AttachDocument: "sendDocument", platform.AttachVideo: "sendVideo",
		platform.AttachAudio: "sendAudio", platform.AttachVoice: "sendVoice", platform.AttachAnimation: "sendAnimation",
		platform.AttachSticker: "sendSticker", platform.AttachVideoNote: "sendVideoNote",
	}
	for kind, method := range methods {
		caption := "<b>" + string(kind) + "</b>"
		if kind == platform.AttachSticker || kind == platform.AttachVideoNote {
			caption = ""
		}
		data := []byte("bytes of " + string(kind))
		res, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{ParseMode: platform.ParseHTML,
			Attachments: []platform.Attachment{{Kind: kind, Data: data, Caption: caption}}}))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		sent := h.srv.Sent(5)
		m := sent[len(sent)-1]
		name := defaultFileNames[kind]
		if name == "" {
			name = "file"
		}
		if m.Method != method || m.Kind != string(kind) || !bytes.Equal(m.FileData, data) || m.Text != caption ||
			res.MessageID != strconv.Itoa(m.MessageID) || m.FileName != name {
			t.Errorf("%s: sent %+v (result %+v); want %s with the bytes and caption %q", kind, m, res, method, caption)
		}
		if caption != "" && m.ParseMode != "HTML" {
			t.Errorf("%s: parse mode %q; want HTML", kind, m.ParseMode)
		}
	}
	// By URL and by file ID.
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{Attachments: []platform.Attachment{
		{Kind: platform.AttachAnimation, URL: "https://example.com/a.gif"}, {Kind: platform.AttachVideo, FileID: known, Caption: "again"},
	}})); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(5)
	if a, v := sent[len(sent)-2], sent[len(sent)-1]; a.FileURL != "https://example.com/a.gif" || v.FileID != known || string(v.FileData) != "known video" || v.Text != "again" {
		t.Errorf("by URL %+v, by file ID %+v", a, v)
	}
	for _, tc := range []struct {
		name string
		at   platform.Attachment
	}{
		{"sticker caption", platform.Attachment{Kind: platform.AttachSticker, FileID: "x", Caption: "no"}},
		{"video note caption", platform.Attachment{Kind: platform.AttachVideoNote, Data: []byte("x"), Caption: "no"}},
		{"video note by URL", platform.Attachment{Kind: platform.AttachVideoNote, URL: "https://example.com/n.mp4"}},
	} {
		before := len(h.srv.Sent(5))
		_, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{Attachments: []platform.Attachment{tc.at}}))
		if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrUnsupported) {
			t.Errorf("%s: Send = %v; want a permanent ErrUnsupported", tc.name, err)
		}
		if len(h.srv.Sent(5)) != before {
			t.Errorf("%s: something was sent", tc.name)
		}
	}
	// An unknown file ID is Telegram's refusal.
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "nope"}}})); !platform.IsPermanent(err) {
		t.Errorf("unknown file ID: %v; want Telegram's permanent refusal", err)
	}
}

// An album is one sendMediaGroup after the text, its items uploaded,
// by URL or by file ID, with their captions; the first part replies, the
// result names the album's last message. Telegram's mixing rules and the
// limit of 10 are kept; an album carries no keyboard.
func TestSendAlbum(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	known := h.srv.AddFile("photo", "", []byte("known photo"))
	h.srv.SendUserMessage(5, ann, "send me photos")
	photo := func(i int) platform.Attachment {
		return platform.Attachment{Kind: platform.AttachPhoto, Data: []byte("photo " + strconv.Itoa(i)), Caption: "<i>" + strconv.Itoa(i) + "</i>"}
	}
	album := platform.OutboundMessage{Album: true, ParseMode: platform.ParseHTML, ReplyToID: "1", Attachments: []platform.Attachment{
		photo(1), {Kind: platform.AttachVideo, URL: "https://example.com/v.mp4"}, {Kind: platform.AttachPhoto, FileID: known},
	}}
	res, err := h.a.Send(t.Context(), sendTo("5", album))
	if err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(5)
	if len(sent) != 3 || h.srv.Requests("sendMediaGroup") != 1 {
		t.Fatalf("sent %d messages in %d requests; want 3 in one sendMediaGroup", len(sent), h.srv.Requests("sendMediaGroup"))
	}
	group := sent[0].MediaGroupID
	for i, m := range sent {
		if m.MediaGroupID != group || group == "" {
			t.Errorf("message %d in album %q; want all in one", i, m.MediaGroupID)
		}
	}
	if m := sent[0]; string(m.FileData) != "photo 1" || m.Text != "<i>1</i>" || m.ParseMode != "HTML" || m.ReplyToMessageID != 1 {
		t.Errorf("first item %+v", m)
	}
	if sent[1].Kind != "video" || sent[1].FileURL != "https://example.com/v.mp4" || string(sent[2].FileData) != "known photo" {
		t.Errorf("items %+v, %+v", sent[1], sent[2])
	}
	if res.MessageID != strconv.Itoa(sent[2].MessageID) {
		t.Errorf("result %+v; want the last item's ID %d", res, sent[2].MessageID)
	}

	// The text goes first, then the album.
	album.Text, album.ReplyToID = "my photos", ""
	if _, err := h.a.Send(t.Context(), sendTo("6", album)); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Sent(6); len(got) != 4 || got[0].Kind != "text" || got[1].MediaGroupID == "" {
		t.Errorf("text and album sent as %+v", got)
	}
	for _, tc := range []struct {
		name string
		msg  platform.OutboundMessage
		want error
	}{
		{"eleven", platform.OutboundMessage{Album: true, Attachments: func() []platform.Attachment {
			var out []platform.Attachment
			for i := range 11 {
				out = append(out, photo(i))
			}
			return out
		}()}, platform.ErrInvalidMessage},
		{"photo and document", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{photo(1), {Kind: platform.AttachDocument, Data: []byte("d")}}}, platform.ErrUnsupported},
		{"stickers", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{{Kind: platform.AttachSticker, FileID: "a"}, {Kind: platform.AttachSticker, FileID: "b"}}}, platform.ErrUnsupported},
		{"buttons", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{photo(1), photo(2)}, Buttons: [][]platform.Button{{{Text: "b", Data: "d"}}}}, platform.ErrUnsupported},
	} {
		_, err := h.a.Send(t.Context(), sendTo("7", tc.msg))
		if !platform.IsPermanent(err) || !errors.Is(err, tc.want) {
			t.Errorf("%s: Send = %v; want a permanent %v", tc.name, err, tc.want)
		}
	}
	if n := len(h.srv.Sent(7)); n != 0 {
		t.Errorf("%d messages of refused albums sent", n)
	}
	// An album of one is that attachment.
	if _, err := h.a.Send(t.Context(), sendTo("8", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{photo(1)}})); err != nil {
		t.Fatal(err)
	}
	if got := h.srv.Sent(8); len(got) != 1 || got[0].Method != "sendPhoto" {
		t.Errorf("album of one sent as %+v", got)
	}
	// A reset after Telegram took the album is ambiguous.
	h.srv.Inject(telegramtest.Fault{Method: "sendMediaGroup", Reset: true, Times: 1})
	_, err = h.a.Send(t.Context(), sendTo("9", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{photo(1), photo(2)}}))
	if !errors.Is(err, platform.ErrMaybeDelivered) || platform.IsPermanent(err) {
		t.Errorf("album answer lost: %v; want a retryable ErrMaybeDelivered", err)
	}
}

// A reply keyboard goes as reply_markup with resize_keyboard; a removal
// as remove_keyboard; inline buttons and a keyboard cannot share a message.
func TestSendReplyKeyboard(t *testing.T) {
	h := newHarness(t, nil)
	_, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{Text: "pick", Keyboard: &platform.ReplyKeyboard{
		Rows: [][]string{{"Tea", "Coffee"}, {}, {"Water"}}, OneTime: true, Placeholder: "drink",
	}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.OutboundMessage{Text: "thanks", Keyboard: &platform.ReplyKeyboard{Remove: true}})); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(5)
	rk := sent[0].ReplyKeyboard
	if rk == nil || len(rk.Keyboard) != 2 || rk.Keyboard[0][1].Text != "Coffee" || rk.Keyboard[1][0].Text != "Water" ||
		!rk.ResizeKeyboard || !rk.OneTimeKeyboard || rk.InputFieldPlaceholder != "drink" {
		t.Errorf("reply keyboard %+v", rk)
	}
	if !sent[1].RemoveKeyboard || sent[1].ReplyKeyboard != nil {
		t.Errorf("removal %+v", sent[1])
	}
	for _, tc := range []struct {
		name string
		msg  platform.OutboundMessage
		want error
	}{
		{"with buttons", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Remove: true}, Buttons: [][]platform.Button{{{Text: "b", Data: "d"}}}}, platform.ErrUnsupported},
		{"placeholder", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Rows: [][]string{{"a"}}, Placeholder: strings.Repeat("p", 65)}}, platform.ErrInvalidMessage},
	} {
		if _, err := h.a.Send(t.Context(), sendTo("6", tc.msg)); !platform.IsPermanent(err) || !errors.Is(err, tc.want) {
			t.Errorf("%s: Send = %v; want a permanent %v", tc.name, err, tc.want)
		}
	}
}

// A deletion deletes the bot's message; one gone already counts as done;
// an ID that is not one, or Telegram's refusal, fails for good.
func TestDeleteMessage(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.a.Send(t.Context(), sendTo("5", platform.TextMessage("oops")))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := h.a.Send(t.Context(), sendTo("5", platform.DeleteMessage(res.MessageID)))
		if err != nil || got.MessageID != res.MessageID || got.ChatID != "5" {
			t.Fatalf("delete = %+v, %v", got, err)
		}
	}
	id, _ := strconv.Atoi(res.MessageID)
	if d := h.srv.Deletions(5); len(d) != 1 || d[0].MessageID != id {
		t.Fatalf("deletions %+v; want the one message, once", d)
	}
	if _, ok := h.srv.Message(5, id); ok {
		t.Fatal("the deleted message is still there")
	}
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.EditMessage(res.MessageID, "x"))); !platform.IsPermanent(err) {
		t.Fatalf("edit of a deleted message = %v; want a permanent error", err)
	}
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.DeleteMessage("x1"))); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("delete of a bad ID = %v", err)
	}
	h.srv.Inject(telegramtest.Fault{Method: "deleteMessage", Status: 400, Description: "Bad Request: message can't be deleted", Times: 1})
	if _, err := h.a.Send(t.Context(), sendTo("5", platform.DeleteMessage("1"))); !platform.IsPermanent(err) || errors.Is(err, platform.ErrMaybeDelivered) {
		t.Fatalf("refused delete = %v; want permanent, never ambiguous", err)
	}
}

// A user's file downloads whole within its size; over the limit it is
// refused before the download (before getFile when the size is known),
// and Telegram's own 20 MB limit is that error too.
func TestDownload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := h.run(t)
	data := bytes.Repeat([]byte("0123456789"), 300)
	h.srv.SendUserFile(5, ann, telegramtest.UserFile{Kind: "document", Name: "a.bin", MIMEType: "application/octet-stream", Data: data, Caption: "here"})
	ev := r.next(t, 1)[0]
	if len(ev.Attachments) != 1 {
		t.Fatalf("event %+v", ev)
	}
	at := ev.Attachments[0]
	if at.Kind != platform.AttachDocument || at.FileName != "a.bin" || at.Size != int64(len(data)) || at.MIMEType != "application/octet-stream" || at.Caption != "here" {
		t.Fatalf("attachment %+v", at)
	}
	got, err := h.a.Download(t.Context(), at, 0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Download = %d bytes, %v", len(got), err)
	}
	getFiles := h.srv.Requests("getFile")
	if _, err := h.a.Download(t.Context(), at, 100); !errors.Is(err, platform.ErrFileTooLarge) || !platform.IsPermanent(err) {
		t.Fatalf("Download over the limit = %v", err)
	}
	if h.srv.Requests("getFile") != getFiles {
		t.Fatal("a file known too large was asked for")
	}
	unsized := at
	unsized.Size = 0
	downloads := h.srv.Requests("downloadFile")
	if _, err := h.a.Download(t.Context(), unsized, 100); !errors.Is(err, platform.ErrFileTooLarge) {
		t.Fatalf("Download over the limit, size unknown = %v", err)
	}
	if h.srv.Requests("getFile") != getFiles+1 || h.srv.Requests("downloadFile") != downloads {
		t.Fatal("a file getFile said is too large was downloaded")
	}
	big := h.srv.AddFile("document", "big", make([]byte, telegramtest.MaxDownload+1))
	if _, err := h.a.Download(t.Context(), platform.Attachment{Kind: platform.AttachDocument, FileID: big}, 64<<20); !errors.Is(err, platform.ErrFileTooLarge) || !platform.IsPermanent(err) {
		t.Fatalf("Download over Telegram's limit = %v", err)
	}
	h.srv.Inject(telegramtest.Fault{Method: "downloadFile", Status: 404, Times: 1})
	_, err = h.a.Download(t.Context(), at, 0)
	if !platform.IsPermanent(err) || strings.Contains(err.Error(), tokenPart) {
		t.Fatalf("Download answered 404 = %v; want permanent, without the token", err)
	}
	h.srv.Inject(telegramtest.Fault{Method: "downloadFile", Status: 502, Times: 1})
	if _, err := h.a.Download(t.Context(), at, 0); err == nil || platform.IsPermanent(err) {
		t.Fatalf("Download answered 502 = %v; want retryable", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A download with no Content-Length is cut once it passes the limit.
func TestDownloadCutAtTheLimit(t *testing.T) {
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 100 {
			_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
			w.(http.Flusher).Flush() // chunked: no Content-Length
		}
	}))
	defer files.Close()
	h := newHarness(t, func(c *Config) { c.FileEndpoint = files.URL + "/file/bot%s/%s" })
	id := h.srv.AddFile("document", "d", []byte("small, says getFile"))
	_, err := h.a.Download(t.Context(), platform.Attachment{Kind: platform.AttachDocument, FileID: id}, 5000)
	if !errors.Is(err, platform.ErrFileTooLarge) || !platform.IsPermanent(err) {
		t.Fatalf("Download of a stream over the limit = %v", err)
	}
}

// SendChatAction shows known actions, in chats named by ID or @username.
func TestSendChatAction(t *testing.T) {
	h := newHarness(t, nil, telegramtest.WithChannel("@news", -1009))
	for _, chat := range []string{"5", "@news"} {
		if err := h.a.SendChatAction(t.Context(), platform.Chat{ID: chat}, platform.ActionUploadPhoto); err != nil {
			t.Fatalf("%s: %v", chat, err)
		}
	}
	if a := h.srv.ChatActions(-1009); len(a) != 1 || a[0].Action != "upload_photo" {
		t.Fatalf("actions %+v", a)
	}
	for _, tc := range []struct {
		chat   string
		action platform.ChatAction
	}{{"5", "dancing"}, {"x", platform.ActionTyping}} {
		if err := h.a.SendChatAction(t.Context(), platform.Chat{ID: tc.chat}, tc.action); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
			t.Errorf("%+v: %v; want a permanent ErrInvalidMessage", tc, err)
		}
	}
	if n := h.srv.Requests("sendChatAction"); n != 2 {
		t.Fatalf("%d requests; want 2", n)
	}
}

// An inline answer's results go as Telegram's result types; what Telegram
// cannot show is refused before any request.
func TestAnswerInlineResults(t *testing.T) {
	h := newHarness(t, nil)
	q := platform.Event{ID: "1", Kind: platform.EventInlineQuery}
	buttons := [][]platform.Button{{{Text: "Open", URL: "https://example.com"}}}
	photo := h.srv.AddFile("photo", "", []byte("p"))
	ans := platform.InlineAnswer{Personal: true, NextOffset: "10", Results: []platform.InlineResult{
		{ID: "a", Title: "Article", Description: "d", Message: platform.OutboundMessage{Text: "<b>hi</b>", ParseMode: platform.ParseHTML, Buttons: buttons}},
		{ID: "p", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "https://example.com/p.jpg", Caption: "cap"}}}},
		{ID: "c", Message: platform.OutboundMessage{Text: "cached", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: photo}}}},
		{ID: "d", Title: "PDF", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, URL: "https://example.com/x.pdf", MIMEType: "application/pdf"}}}},
		{ID: "s", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachSticker, FileID: "st"}}}},
	}}
	q.QueryID = h.srv.InlineQueryUpdate(ann, "x", "").InlineQuery.ID
	if err := h.a.AnswerInline(t.Context(), q, ans); err != nil {
		t.Fatal(err)
	}
	got := h.srv.InlineAnswers()
	if len(got) != 1 || !got[0].IsPersonal || got[0].NextOffset != "10" || got[0].CacheTime != 0 || len(got[0].Results) != 5 {
		t.Fatalf("answers %+v", got)
	}
	rs := got[0].Results
	if rs[0].Type != "article" || rs[0].Text != "<b>hi</b>" || rs[0].ParseMode != "HTML" || len(rs[0].Keyboard) != 1 || rs[0].Description != "d" {
		t.Errorf("article %+v", rs[0])
	}
	if rs[1].Type != "photo" || rs[1].URL != "https://example.com/p.jpg" || rs[1].ThumbnailURL != rs[1].URL || rs[1].Caption != "cap" {
		t.Errorf("photo %+v", rs[1])
	}
	if rs[2].FileID != photo || rs[2].Caption != "cached" || rs[3].Type != "document" || rs[4].Type != "sticker" || rs[4].FileID != "st" {
		t.Errorf("results %+v", rs[2:])
	}
	if err := h.a.AnswerInline(t.Context(), q, ans); !platform.IsPermanent(err) {
		t.Errorf("second answer = %v; want Telegram's permanent refusal", err)
	}
	many := platform.InlineAnswer{}
	for i := range 51 {
		many.Results = append(many.Results, platform.InlineResult{ID: strconv.Itoa(i), Title: "t", Message: platform.TextMessage("x")})
	}
	text := func(id, title string) platform.InlineResult {
		return platform.InlineResult{ID: id, Title: title, Message: platform.TextMessage("x")}
	}
	requests := h.srv.Requests("answerInlineQuery")
	for _, tc := range []struct {
		name string
		ans  platform.InlineAnswer
		want error
	}{
		{"51 results", many, platform.ErrInvalidMessage},
		{"no ID", platform.InlineAnswer{Results: []platform.InlineResult{text("", "t")}}, platform.ErrInvalidMessage},
		{"long ID", platform.InlineAnswer{Results: []platform.InlineResult{text(strings.Repeat("i", 65), "t")}}, platform.ErrInvalidMessage},
		{"repeated ID", platform.InlineAnswer{Results: []platform.InlineResult{text("a", "t"), text("a", "t")}}, platform.ErrInvalidMessage},
		{"article without title", platform.InlineAnswer{Results: []platform.InlineResult{text("a", "")}}, platform.ErrInvalidMessage},
		{"bytes", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: []byte("x")}}}}}}, platform.ErrInvalidMessage},
		{"document MIME", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Title: "t", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, URL: "https://e/x.doc"}}}}}}, platform.ErrInvalidMessage},
		{"video thumbnail", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Title: "t", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachVideo, URL: "https://e/x.mp4"}}}}}}, platform.ErrInvalidMessage},
		{"sticker by URL", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachSticker, URL: "https://e/s.webp"}}}}}}, platform.ErrUnsupported},
		{"video note", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachVideoNote, FileID: "n"}}}}}}, platform.ErrUnsupported},
		{"keyboard", platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Title: "t", Message: platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Remove: true}}}}}, platform.ErrInvalidMessage},
	} {
		if err := h.a.AnswerInline(t.Context(), q, tc.ans); !platform.IsPermanent(err) || !errors.Is(err, tc.want) {
			t.Errorf("%s: AnswerInline = %v; want a permanent %v", tc.name, err, tc.want)
		}
	}
	if h.srv.Requests("answerInlineQuery") != requests {
		t.Error("a refused answer was sent")
	}
}
