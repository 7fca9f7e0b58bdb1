package onebot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

func sendReq(chat platform.Chat, text string) platform.SendRequest {
	return platform.SendRequest{Platform: DefaultName, Target: chat, Message: platform.TextMessage(text)}
}

// TestEchoCorrelation puts 200 sends in flight on one connection and
// answers them in a random order: every send must get its own response.
func TestEchoCorrelation(t *testing.T) {
	const n = 200
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 10001)

	type result struct {
		i   int
		res platform.SendResult
		err error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			res, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(10001, 555), "m"+strconv.Itoa(i)))
			results <- result{i, res, err}
		}()
	}
	// Collect every action before answering any, so all 200 are in flight.
	actions := make([]gotAction, 0, n)
	echoes := map[string]bool{}
	for range n {
		a := p.next()
		if a.Action != "send_group_msg" || param[int64](t, a, "group_id") != 555 {
			t.Fatalf("action = %+v", a)
		}
		if echoes[string(a.Echo)] {
			t.Fatalf("echo %s used twice", a.Echo)
		}
		echoes[string(a.Echo)] = true
		actions = append(actions, a)
	}
	waitFor(t, "all pending", func() bool { return pendingTotal(h.a) == n })
	rand.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
	for _, a := range actions {
		msg := param[Message](t, a, "message")
		i, err := strconv.Atoi(strings.TrimPrefix(msg.Text(), "m"))
		if err != nil || len(msg) != 1 {
			t.Fatalf("message = %#v", msg)
		}
		p.respond(a, "ok", 0, map[string]any{"message_id": 100000 + i})
	}
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatalf("send %d: %v", r.i, r.err)
		}
		if want := strconv.Itoa(100000 + r.i); r.res.MessageID != want || r.res.ChatID != "10001:555" || r.res.SentAt.IsZero() {
			t.Fatalf("send %d = %+v; want message ID %s", r.i, r.res, want)
		}
	}
	if got := pendingTotal(h.a); got != 0 {
		t.Fatalf("%d actions still pending", got)
	}
}

func pendingTotal(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for c := range a.conns {
		n += c.pendingCount()
	}
	return n
}

func TestSendResponses(t *testing.T) {
	tests := []struct {
		name        string
		avoidDups   bool
		status      string
		retcode     int
		data        any
		extra       map[string]any
		wantID      string
		wantErr     bool
		permanent   bool
		maybe       bool
		wantRetcode int64
		wantMsg     string
	}{
		{name: "ok", status: "ok", data: map[string]any{"message_id": 77}, wantID: "77"},
		{name: "ok string id", status: "ok", data: map[string]any{"message_id": "abc"}, wantID: "abc"},
		{name: "ok no data", status: "ok", data: nil, wantID: ""},
		{name: "async", status: "async", retcode: 1, data: nil, wantID: ""},
		{name: "async avoiding duplicates", avoidDups: true, status: "async", retcode: 1, data: nil, wantID: ""},
		{name: "1400", status: "failed", retcode: 1400, wantErr: true, permanent: true, wantRetcode: 1400},
		{name: "1401", status: "failed", retcode: 1401, wantErr: true, permanent: true, wantRetcode: 1401},
		{name: "1403", status: "failed", retcode: 1403, wantErr: true, permanent: true, wantRetcode: 1403},
		{name: "1404", status: "failed", retcode: 1404, wantErr: true, permanent: true, wantRetcode: 1404},
		{name: "1404 avoiding duplicates", avoidDups: true, status: "failed", retcode: 1404, wantErr: true, permanent: true, wantRetcode: 1404},
		{name: "100 retryable", status: "failed", retcode: 100, extra: map[string]any{"msg": "SEND_MSG_API_ERROR", "wording": "risk control"},
			wantErr: true, permanent: false, maybe: true, wantRetcode: 100, wantMsg: "risk control"},
		{name: "100 avoiding duplicates", avoidDups: true, status: "failed", retcode: 100, extra: map[string]any{"msg": "m"},
			wantErr: true, permanent: true, maybe: true, wantRetcode: 100, wantMsg: "m"},
		{name: "1500 retryable", status: "failed", retcode: 1500, wantErr: true, permanent: false, maybe: true, wantRetcode: 1500},
		{name: "unknown status", status: "weird", retcode: 102, wantErr: true, maybe: true, wantRetcode: 102},
		{name: "unknown status avoiding duplicates", avoidDups: true, status: "weird", retcode: 102, wantErr: true, permanent: true, maybe: true, wantRetcode: 102},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAdapter(t, Config{AvoidDuplicates: tt.avoidDups})
			p := h.connect(h.reverseServer(), 1)
			go func() {
				a := p.next()
				resp := map[string]any{"status": tt.status, "retcode": tt.retcode, "data": tt.data, "echo": a.Echo}
				for k, v := range tt.extra {
					resp[k] = v
				}
				p.sendJSON(resp)
			}()
			res, err := h.a.Sender().Send(context.Background(), sendReq(PrivateChat(1, 2), "x"))
			if !tt.wantErr {
				if err != nil || res.MessageID != tt.wantID || res.ChatID != "1:2" {
					t.Fatalf("Send = %+v, %v; want message ID %q", res, err, tt.wantID)
				}
				return
			}
			var ae *ActionError
			if !errors.As(err, &ae) || ae.RetCode != tt.wantRetcode || ae.Action != "send_private_msg" || ae.Message != tt.wantMsg {
				t.Fatalf("Send error = %v (%#v); want ActionError retcode %d msg %q", err, ae, tt.wantRetcode, tt.wantMsg)
			}
			if platform.IsPermanent(err) != tt.permanent || maybeDelivered(t, err) != tt.maybe {
				t.Fatalf("Send error %v: permanent %v maybe %v; want %v %v", err, platform.IsPermanent(err), maybeDelivered(t, err), tt.permanent, tt.maybe)
			}
			if !strings.HasPrefix(err.Error(), "onebot: send_private_msg failed: retcode ") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

// TestSendTimeout leaves an action unanswered, on fake time: the send
// fails exactly ActionTimeout later with ErrActionTimeout, which may hide a
// delivery, so it is retryable unless AvoidDuplicates; a late answer is
// dropped and the connection stays usable.
func TestSendTimeout(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const timeout = 20 * time.Second
				h := startAdapter(t, Config{ActionTimeout: timeout, AvoidDuplicates: avoid})
				p := h.pipeConnect(newPipeServer(t, h.a.Handler()), 1, peerOpts{})
				start := time.Now()
				_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(1, 2), "x"))
				if !errors.Is(err, ErrActionTimeout) || !maybeDelivered(t, err) || platform.IsPermanent(err) != avoid {
					t.Fatalf("Send = %v (permanent %v); want ErrActionTimeout, ErrMaybeDelivered, permanent %v",
						err, platform.IsPermanent(err), avoid)
				}
				if el := time.Since(start); el != timeout {
					t.Errorf("timed out after %v; want ActionTimeout, %v", el, timeout)
				}
				a := p.next()
				p.respond(a, "ok", 0, map[string]any{"message_id": 1}) // late: dropped quietly
				go func() {
					a := p.next()
					p.respond(a, "ok", 0, map[string]any{"message_id": 2})
				}()
				if res, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(1, 2), "y")); err != nil || res.MessageID != "2" {
					t.Fatalf("send after a late answer = %+v, %v", res, err)
				}
				if n := pendingTotal(h.a); n != 0 {
					t.Fatalf("%d pending", n)
				}
			})
		})
	}
}

// maybeDelivered reports whether err is an ambiguous send failure, as
// platform.ErrMaybeDelivered says, failing the test if the adapter's own
// ErrMaybeDelivered disagrees.
func maybeDelivered(t *testing.T, err error) bool {
	t.Helper()
	p, o := errors.Is(err, platform.ErrMaybeDelivered), errors.Is(err, ErrMaybeDelivered)
	if p != o {
		t.Errorf("%v: matches platform.ErrMaybeDelivered %v, onebot.ErrMaybeDelivered %v; want the same", err, p, o)
	}
	return p
}

// TestSendContextEndsFirst: a send whose context ends after its action was
// written, before the answer, fails exactly then with the context's error,
// which may hide a delivery (the common case is a per-attempt timeout of
// the sender middleware, shorter than ActionTimeout): it matches
// platform.ErrMaybeDelivered, and is permanent with AvoidDuplicates. It
// leaves nothing pending; a context that has ended before the send is
// plainly its error.
func TestSendContextEndsFirst(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const wait = 3 * time.Second
				h := startAdapter(t, Config{ActionTimeout: time.Hour, AvoidDuplicates: avoid})
				p := h.pipeConnect(newPipeServer(t, h.a.Handler()), 1, peerOpts{})
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				start := time.Now()
				_, err := h.a.Sender().Send(ctx, sendReq(GroupChat(1, 2), "x"))
				if !errors.Is(err, context.DeadlineExceeded) || !maybeDelivered(t, err) || platform.IsPermanent(err) != avoid {
					t.Fatalf("Send = %v (permanent %v); want the context's error, maybe delivered, permanent %v",
						err, platform.IsPermanent(err), avoid)
				}
				if el := time.Since(start); el != wait {
					t.Errorf("Send returned after %v; want when its context ended, %v", el, wait)
				}
				p.next()
				if n := pendingTotal(h.a); n != 0 {
					t.Fatalf("%d pending after the context ended", n)
				}
				cctx, ccancel := context.WithCancel(context.Background())
				ccancel()
				if _, err := h.a.Sender().Send(cctx, sendReq(GroupChat(1, 2), "x")); !errors.Is(err, context.Canceled) ||
					maybeDelivered(t, err) || platform.IsPermanent(err) {
					t.Fatalf("Send with a cancelled context = %v; want a retryable context.Canceled, not maybe delivered", err)
				}
			})
		})
	}
}

// TestAmbiguityWhileWriterStuck holds a connection's writer on one action
// (the implementation reads nothing), on fake time. That action was taken
// by the writer, so its ActionTimeout is ambiguous; a send whose context
// ends while it waits for the writer, and one whose ActionTimeout passes
// while it waits, were certainly not written: they never match
// platform.ErrMaybeDelivered and stay retryable even with AvoidDuplicates.
func TestAmbiguityWhileWriterStuck(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const timeout, ctxWait = 20 * time.Second, 3 * time.Second
				h := startAdapter(t, Config{ActionTimeout: timeout, WriteTimeout: time.Hour, AvoidDuplicates: avoid})
				ps := newPipeServer(t, h.a.Handler())
				ws, _, err := ps.Dialer().Dial("ws://onebot.test"+DefaultPath, http.Header{"X-Self-ID": {"1"}})
				if err != nil {
					t.Fatal(err)
				}
				defer ws.Close()
				h.waitBot(1)
				send := func(ctx context.Context) chan error {
					errc := make(chan error, 1)
					go func() {
						_, err := h.a.Sender().Send(ctx, sendReq(GroupChat(1, 2), "x"))
						errc <- err
					}()
					synctest.Wait()
					return errc
				}
				start := time.Now()
				written := send(context.Background())
				ctx, cancel := context.WithTimeout(context.Background(), ctxWait)
				defer cancel()
				ctxEnded := send(ctx)
				busy := send(context.Background())

				if err := <-ctxEnded; !errors.Is(err, context.DeadlineExceeded) || maybeDelivered(t, err) || platform.IsPermanent(err) {
					t.Errorf("send whose context ended before the write = %v; want a retryable context error, not maybe delivered", err)
				}
				if el := time.Since(start); el != ctxWait {
					t.Errorf("it failed after %v; want %v", el, ctxWait)
				}
				if err := <-written; !errors.Is(err, ErrActionTimeout) || !maybeDelivered(t, err) || platform.IsPermanent(err) != avoid {
					t.Errorf("send being written = %v (permanent %v); want ErrActionTimeout, maybe delivered, permanent %v",
						err, platform.IsPermanent(err), avoid)
				}
				if err := <-busy; err == nil || errors.Is(err, ErrActionTimeout) || maybeDelivered(t, err) || platform.IsPermanent(err) {
					t.Errorf("send the busy writer never took = %v; want a retryable error, not maybe delivered", err)
				}
				if el := time.Since(start); el != timeout {
					t.Errorf("they failed after %v; want ActionTimeout, %v", el, timeout)
				}
			})
		})
	}
}

// TestConnectionLossMidAction drops the connection while sends are in
// flight, their actions written: all of them fail at once with
// ErrConnectionLost, which may hide a delivery, so it is retryable unless
// AvoidDuplicates.
func TestConnectionLossMidAction(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			const n = 20
			h := startAdapter(t, Config{ActionTimeout: time.Hour, AvoidDuplicates: avoid})
			p := h.connect(h.reverseServer(), 1)
			errs := make(chan error, n)
			for i := range n {
				go func() {
					_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(1, int64(i+1)), "x"))
					errs <- err
				}()
			}
			for range n {
				p.next()
			}
			p.close() // abrupt: no close frame
			deadline := time.After(5 * time.Second)
			for range n {
				select {
				case err := <-errs:
					if !errors.Is(err, ErrConnectionLost) || !maybeDelivered(t, err) || platform.IsPermanent(err) != avoid {
						t.Fatalf("pending send = %v (permanent %v); want ErrConnectionLost, ErrMaybeDelivered, permanent %v",
							err, platform.IsPermanent(err), avoid)
					}
				case <-deadline:
					t.Fatal("pending sends did not fail within 5s of the drop (ActionTimeout is an hour)")
				}
			}
			waitFor(t, "unregister", func() bool { return len(h.a.Bots()) == 0 })
			_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(1, 2), "x"))
			if !errors.Is(err, ErrNotConnected) || platform.IsPermanent(err) {
				t.Fatalf("send with no connection = %v; want retryable ErrNotConnected", err)
			}
		})
	}
}

// TestConnectionLostBeforeWrite drops a connection whose writer is stuck
// on one action (the implementation reads nothing) while a second action
// waits for the writer: the first may have reached the implementation, the
// second certainly did not, so only the first is ambiguous, and only it is
// permanent with AvoidDuplicates.
func TestConnectionLostBeforeWrite(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startAdapter(t, Config{ActionTimeout: time.Hour, AvoidDuplicates: avoid})
				ps := newPipeServer(t, h.a.Handler())
				ws, _, err := ps.Dialer().Dial("ws://onebot.test"+DefaultPath, http.Header{"X-Self-ID": {"1"}})
				if err != nil {
					t.Fatal(err)
				}
				h.waitBot(1)
				send := func(text string) chan error {
					errc := make(chan error, 1)
					go func() {
						_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(1, 2), text))
						errc <- err
					}()
					synctest.Wait()
					return errc
				}
				written := send("taken by the writer, which is stuck writing it")
				waiting := send("waiting for the writer")
				ws.Close()
				if err := <-written; !errors.Is(err, ErrConnectionLost) || !maybeDelivered(t, err) || platform.IsPermanent(err) != avoid {
					t.Errorf("send being written = %v (permanent %v); want ErrConnectionLost, ErrMaybeDelivered, permanent %v",
						err, platform.IsPermanent(err), avoid)
				}
				if err := <-waiting; !errors.Is(err, ErrConnectionLost) || maybeDelivered(t, err) || platform.IsPermanent(err) {
					t.Errorf("send not yet written = %v (permanent %v); want a retryable ErrConnectionLost, not maybe delivered",
						err, platform.IsPermanent(err))
				}
			})
		})
	}
}

func TestSendNotConnected(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, chat := range []platform.Chat{GroupChat(1, 2), {ID: "2", Type: platform.ChatPrivate}} {
		_, err := a.Sender().Send(context.Background(), sendReq(chat, "x"))
		if !errors.Is(err, ErrNotConnected) || platform.IsPermanent(err) {
			t.Fatalf("Send(%v) before Run = %v", chat, err)
		}
	}
}

func TestSendRefusesBadRequests(t *testing.T) {
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 1)
	tests := []struct {
		name string
		req  platform.SendRequest
		is   error
	}{
		{"empty message", platform.SendRequest{Target: GroupChat(1, 2)}, platform.ErrInvalidMessage},
		{"bad chat id", sendReq(platform.Chat{ID: "abc", Type: platform.ChatGroup}, "x"), ErrInvalidChat},
		{"no chat type", sendReq(platform.Chat{ID: "1:2"}, "x"), ErrInvalidChat},
		{"channel", sendReq(platform.Chat{ID: "1:2", Type: platform.ChatChannel}, "x"), ErrInvalidChat},
		{"document bytes", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.OutboundMessage{
			Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("x"), FileName: "x.txt"}}}}, ErrUnsupported},
		{"document by file ID", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.OutboundMessage{
			Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileID: "abc"}}}}, ErrUnsupported},
		{"video note", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.OutboundMessage{Text: "x",
			Attachments: []platform.Attachment{{Kind: platform.AttachVideoNote, URL: "https://x/v.mp4"}}}}, ErrUnsupported},
		{"reply keyboard", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.OutboundMessage{Text: "pick",
			Keyboard: &platform.ReplyKeyboard{Rows: [][]string{{"a"}}}}}, ErrUnsupported},
		{"edit", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.EditMessage("5", "x")}, ErrUnsupported},
		{"deletion of no number", platform.SendRequest{Target: GroupChat(1, 2), Message: platform.DeleteMessage("1:5")}, platform.ErrInvalidMessage},
		{"deletion in a bad chat", platform.SendRequest{Target: platform.Chat{ID: "x"}, Message: platform.DeleteMessage("5")}, ErrInvalidChat},
	}
	for _, tt := range tests {
		_, err := h.a.Sender().Send(context.Background(), tt.req)
		if !errors.Is(err, tt.is) || !platform.IsPermanent(err) || !strings.HasPrefix(err.Error(), "onebot: ") {
			t.Errorf("%s: Send = %v; want permanent %v", tt.name, err, tt.is)
		}
	}
	select {
	case a := <-p.actions:
		t.Fatalf("a refused request reached the implementation: %+v", a)
	default:
	}
}

func TestOutboundSegments(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	tests := []struct {
		name string
		cq   bool
		msg  platform.OutboundMessage
		want string // the message param, as JSON
	}{
		{"text literal", false, platform.TextMessage("[CQ:at,qq=1] & hi"),
			`[{"type":"text","data":{"text":"[CQ:at,qq=1] \u0026 hi"}}]`},
		{"markdown sent as is", false, platform.OutboundMessage{Text: "*b*", ParseMode: platform.ParseMarkdown},
			`[{"type":"text","data":{"text":"*b*"}}]`},
		{"reply", false, platform.OutboundMessage{Text: "ok", ReplyToID: "-12"},
			`[{"type":"reply","data":{"id":"-12"}},{"type":"text","data":{"text":"ok"}}]`},
		{"photo url with caption", false, platform.OutboundMessage{Text: "look", Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, URL: "https://x/y.png", Caption: "cap"}}},
			`[{"type":"text","data":{"text":"look"}},{"type":"image","data":{"file":"https://x/y.png"}},{"type":"text","data":{"text":"cap"}}]`},
		{"photo bytes", false, platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: png}}},
			`[{"type":"image","data":{"file":"base64://` + base64.StdEncoding.EncodeToString(png) + `"}}]`},
		{"document url", false, platform.OutboundMessage{Text: "doc", Attachments: []platform.Attachment{
			{Kind: platform.AttachDocument, URL: "https://x/r.pdf", FileName: "r.pdf"}}},
			`[{"type":"text","data":{"text":"doc"}},{"type":"text","data":{"text":"\nr.pdf: https://x/r.pdf"}}]`},
		{"photo by file ID", false, platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "abc.image"}}},
			`[{"type":"image","data":{"file":"abc.image"}}]`},
		{"sticker", false, platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachSticker, URL: "https://x/s.webp"}}},
			`[{"type":"image","data":{"file":"https://x/s.webp","subType":"1","sub_type":"1"}}]`},
		{"gif animation as an image", false, platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachAnimation, Data: []byte("GIF89a..."), Caption: "loop"}}},
			`[{"type":"image","data":{"file":"base64://` + base64.StdEncoding.EncodeToString([]byte("GIF89a...")) + `"}},{"type":"text","data":{"text":"loop"}}]`},
		{"mp4 animation by URL as a video", false, platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachAnimation, URL: "https://x/loop.MP4?s=1"}}},
			`[{"type":"video","data":{"file":"https://x/loop.MP4?s=1"}}]`},
		{"animation of a video type as a video", false, platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachAnimation, FileID: "f1", MIMEType: "video/mp4"}}},
			`[{"type":"video","data":{"file":"f1"}}]`},
		{"video with caption", false, platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachVideo, URL: "file:///tmp/v.mp4", Caption: "clip"}}},
			`[{"type":"video","data":{"file":"file:///tmp/v.mp4"}},{"type":"text","data":{"text":"clip"}}]`},
		{"voice and audio as records", false, platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachVoice, FileID: "v.amr"}, {Kind: platform.AttachAudio, URL: "https://x/song.mp3", Caption: "song"}}},
			`[{"type":"record","data":{"file":"v.amr"}},{"type":"record","data":{"file":"https://x/song.mp3"}},{"type":"text","data":{"text":"song"}}]`},
		{"album in one message", false, platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, URL: "https://x/1.png"}, {Kind: platform.AttachPhoto, URL: "https://x/2.png", Caption: "two"}}},
			`[{"type":"image","data":{"file":"https://x/1.png"}},{"type":"image","data":{"file":"https://x/2.png"}},{"type":"text","data":{"text":"two"}}]`},
		{"keyboard removal ignored", false, platform.OutboundMessage{Text: "thanks", Keyboard: &platform.ReplyKeyboard{Remove: true}},
			`[{"type":"text","data":{"text":"thanks"}}]`},
		{"buttons left out", false, platform.OutboundMessage{Text: "pick", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}}}},
			`[{"type":"text","data":{"text":"pick"}}]`},
		{"cq mention", true, platform.TextMessage(CQ(At(42), Text(" "+"hi [x]"))),
			`[{"type":"at","data":{"qq":"42"}},{"type":"text","data":{"text":" hi [x]"}}]`},
		{"cq escaped user text stays text", true, platform.TextMessage(EscapeText("[CQ:at,qq=all]")),
			`[{"type":"text","data":{"text":"[CQ:at,qq=all]"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAdapter(t, Config{CQCodeText: tt.cq})
			p := h.connect(h.reverseServer(), 1)
			done := make(chan gotAction, 1)
			go func() {
				a := p.next()
				p.respond(a, "ok", 0, map[string]any{"message_id": 1})
				done <- a
			}()
			if _, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(1, 7), Message: tt.msg}); err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.Action != "send_private_msg" || param[int64](t, a, "user_id") != 7 || param[bool](t, a, "auto_escape") {
				t.Fatalf("action = %+v", a)
			}
			var got, want any
			if err := json.Unmarshal(a.Params["message"], &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("message = %s\nwant      %s", a.Params["message"], tt.want)
			}
		})
	}
}

// TestDelete recalls messages with delete_msg: the action names the
// message, goes to the chat's bot, and its answers map onto results and
// errors; a failed recall is permanent whatever its retcode, while an
// ambiguous one stays retryable even with AvoidDuplicates.
func TestDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    string
		retcode   int
		wantErr   bool
		permanent bool
	}{
		{name: "ok", status: "ok"},
		{name: "async", status: "async", retcode: 1},
		{name: "not found", status: "failed", retcode: 100, wantErr: true, permanent: true},
		{name: "forbidden", status: "failed", retcode: 1403, wantErr: true, permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startAdapter(t, Config{})
			h.connect(h.reverseServer(), 1)
			p := h.connect(h.reverseServer(), 2)
			go func() {
				a := p.next()
				p.sendJSON(map[string]any{"status": tt.status, "retcode": tt.retcode, "data": nil, "echo": a.Echo, "msg": "MESSAGE_NOT_FOUND"})
				if a.Action != "delete_msg" || param[int64](t, a, "message_id") != -77 || len(a.Params) != 1 {
					t.Errorf("action = %+v; want delete_msg of message -77", a)
				}
			}()
			res, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "2:555"}, Message: platform.DeleteMessage("-77")})
			if !tt.wantErr {
				if err != nil || res.MessageID != "-77" || res.ChatID != "2:555" || res.SentAt.IsZero() {
					t.Fatalf("Send = %+v, %v; want the deleted message -77", res, err)
				}
				return
			}
			var aerr *ActionError
			if !errors.As(err, &aerr) || aerr.Action != "delete_msg" || aerr.RetCode != int64(tt.retcode) || platform.IsPermanent(err) != tt.permanent {
				t.Fatalf("Send = %v; want an ActionError with retcode %d, permanent %v", err, tt.retcode, tt.permanent)
			}
		})
	}

	t.Run("no response", func(t *testing.T) {
		h := startAdapter(t, Config{ActionTimeout: time.Second, AvoidDuplicates: true})
		p := h.connect(h.reverseServer(), 1)
		_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(1, 2), Message: platform.DeleteMessage("5")})
		if !errors.Is(err, ErrActionTimeout) || platform.IsPermanent(err) {
			t.Fatalf("Send = %v; want a retryable ErrActionTimeout (a deletion cannot be made twice)", err)
		}
		if a := p.next(); a.Action != "delete_msg" {
			t.Fatalf("action = %+v", a)
		}
	})
	t.Run("not connected", func(t *testing.T) {
		h := startAdapter(t, Config{})
		_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(1, 2), Message: platform.DeleteMessage("5")})
		if !errors.Is(err, ErrNotConnected) || platform.IsPermanent(err) {
			t.Fatalf("Send = %v; want a retryable ErrNotConnected", err)
		}
	})
}
