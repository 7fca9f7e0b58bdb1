package onebot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/platform"
)

// TestConformance runs the shared adapter suite against an adapter in
// reverse mode, its Handler served on 127.0.0.1, with a fake OneBot
// implementation that dials it as one bot, sends message events and
// answers send_private_msg and send_group_msg.
//
// Features: OneBot v11 has no parse modes (texts go out literally) and no
// inline buttons (they are left out and the text is sent), and no
// flood-control answer with a wait. What the adapter refuses with
// ErrUnsupported: edits, reply keyboards, video notes, and documents as
// bytes (the suite's kind; by URL they go as a link), since OneBot v11
// has no file segment. Deletions are delete_msg, which the fake answers
// and shows (it is a ShowingPeer); albums go as one message of several
// images. The fake refuses a send for good with
// retcode 1403, fails it temporarily with retcode 100, and stalls it by
// never answering (keyed to the send it holds up: see obPeer.sending).
// Retcode 100 leaves it open whether the message went out; with the
// default Config (AvoidDuplicates false) the adapter keeps such a failure
// retryable, as OneBot v11 has it, which is what the suite checks
// (send_test.go covers AvoidDuplicates).
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.TestAdapter(t, newReversePeer, obFeatures)
}

// TestConformanceForward runs the suite in forward mode: the fake serves a
// WebSocket on 127.0.0.1, the adapter dials it, and the fake names its bot
// with a lifecycle connect event, as go-cqhttp does.
func TestConformanceForward(t *testing.T) {
	t.Parallel()
	adaptertest.TestAdapter(t, newForwardPeer, obFeatures)
}

// obFeatures is what OneBot v11, and the fake, cannot do; see
// TestConformance.
var obFeatures = adaptertest.Features{
	NoParseMode:      true,
	NoButtons:        true,
	NoRetryAfter:     true,
	NoEdit:           true,
	NoReplyKeyboard:  true,
	UnsupportedMedia: []platform.AttachmentKind{platform.AttachDocument, platform.AttachVideoNote},
	// QQ has none of these.
	NoCallbackAnswer: true, NoChatAction: true, NoInline: true,
	// Nor topics or reactions, and a sent message cannot grow: a streamed
	// reply is its final part.
	NoTopics: true, NoReactions: true, NoStream: true,
}

// obSelfID is the fake implementation's bot account.
const obSelfID = 10001

// obPeer is a fake OneBot implementation for one adapter. User n has the
// QQ ID 3000+n and group n the ID 5000+n. It has one connection at a time
// (a newer one replaces it), whose reader answers the adapter's actions.
type obPeer struct {
	a    *Adapter
	dial func(ctx context.Context) error // reverse mode: dials the adapter

	msgID atomic.Int64 // message IDs of events and of accepted sends

	mu      sync.Mutex
	ws      *websocket.Conn // the current connection; nil before the first
	conns   []obConn        // every connection, for cleanup
	inbox   adaptertest.Inbox
	faults  map[string][]adaptertest.FaultKind // other than stalls
	stalls  map[string]int                     // stalls injected, not yet taken by a send
	stalled map[string][]string                // texts of the sends held up
	kinds   map[string]platform.AttachmentKind // by file (URL, bytes or ID): the kind a send asked for
	chatOf  map[string]string                  // by message ID: the chat of each message accepted
	errs    []string                           // frames the fake could not understand
	files   map[string][]byte                  // by path: the files users sent, served by fileSrv

	fileSrv *httptest.Server // serves files, as QQ's servers serve the files of messages

	wmu sync.Mutex // one writer of ws at a time
}

// obConn is a connection and the channel its reader closes when it stops.
type obConn struct {
	ws   *websocket.Conn
	done chan struct{}
}

// newOBPeer returns a peer for an adapter configured by cfg, which it
// cleans up when the test ends.
func newOBPeer(t *testing.T, cfg Config) *obPeer {
	cfg.Logger = zap.NewNop()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &obPeer{
		a:       a,
		faults:  map[string][]adaptertest.FaultKind{},
		stalls:  map[string]int{},
		stalled: map[string][]string{},
		kinds:   map[string]platform.AttachmentKind{},
		chatOf:  map[string]string{},
		files:   map[string][]byte{},
	}
	p.fileSrv = httptest.NewServer(http.HandlerFunc(p.serveFile))
	t.Cleanup(p.fileSrv.Close)
	p.msgID.Store(700)
	t.Cleanup(func() {
		p.mu.Lock()
		conns, errs := p.conns, p.errs
		p.mu.Unlock()
		for _, c := range conns {
			c.ws.Close()
			<-c.done
		}
		if len(errs) > 0 {
			t.Errorf("the fake OneBot implementation could not handle: %q", errs)
		}
	})
	return p
}

// newReversePeer serves the adapter's Handler on 127.0.0.1; Ready dials it
// as bot obSelfID.
func newReversePeer(t *testing.T) adaptertest.Peer {
	p := newOBPeer(t, Config{})
	srv := httptest.NewServer(p.a.Handler())
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultPath
	p.dial = func(ctx context.Context) error {
		hdr := http.Header{"X-Self-ID": {strconv.Itoa(obSelfID)}, "X-Client-Role": {"Universal"}}
		for {
			ws, resp, err := websocket.DefaultDialer.DialContext(ctx, url, hdr)
			if err == nil {
				p.attach(ws)
				return nil
			}
			if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
				return fmt.Errorf("onebot peer: dial: %w", err)
			}
			if !pause(ctx) { // 503: Run has not started yet
				return ctx.Err()
			}
		}
	}
	return p
}

// newForwardPeer serves a WebSocket on 127.0.0.1 for the adapter to dial;
// each connection is greeted with a lifecycle connect event naming bot
// obSelfID.
func newForwardPeer(t *testing.T) adaptertest.Peer {
	var p *obPeer
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader has answered
		}
		p.attach(ws)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.write(ctx, map[string]any{"time": time.Now().Unix(), "self_id": obSelfID,
			"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})
	}))
	t.Cleanup(srv.Close)
	p = newOBPeer(t, Config{Mode: Forward, URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/"})
	return p
}

// attach makes ws the peer's connection and starts its reader.
func (p *obPeer) attach(ws *websocket.Conn) {
	c := obConn{ws: ws, done: make(chan struct{})}
	p.mu.Lock()
	p.ws = ws
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	go p.serve(ws, c.done)
}

// Adapter returns the adapter with its Sender watched for stalls; see
// sending.
func (p *obPeer) Adapter() platform.Adapter { return stallingAdapter{p.a, p} }

// stallingAdapter is the adapter under test as the suite sees it: the
// real one, whose Sender tells the peer of each send before passing it
// on unchanged, so that an injected stall holds up the send the suite
// made next.
type stallingAdapter struct {
	*Adapter
	p *obPeer
}

func (s stallingAdapter) Sender() platform.Sender {
	next := s.Adapter.Sender()
	return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		s.p.sending(req)
		return next.Send(ctx, req)
	})
}

// sending marks req as a send to hold up if a stall waits for its chat:
// every action for the chat that carries req's text, whenever it comes,
// is left unanswered.
//
// The stall is taken here, when Send is called, and not by the first
// action to reach the fake: the suite ends a held-up send's context after
// a tenth of a second, and on a loaded machine the adapter may not have
// written the action by then, nor at all; the stall would then hold up
// the next send, which the suite expects to go through, and an action
// written late would be answered.
//
// It also notes the kind of each attachment by its file, for
// outboundOfSegmentsLocked.
func (p *obPeer) sending(req platform.SendRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, at := range req.Message.Attachments {
		p.kinds[string(at.Data)+at.URL+at.FileID] = at.Kind
	}
	if p.stalls[req.Target.ID] > 0 {
		p.stalls[req.Target.ID]--
		p.stalled[req.Target.ID] = append(p.stalled[req.Target.ID], req.Message.Text)
	}
}

// Ready connects (in reverse mode, dialling, and retrying while Run has
// not started accepting) and waits until the adapter has registered bot
// obSelfID.
func (p *obPeer) Ready(ctx context.Context) error {
	if p.dial != nil {
		if err := p.dial(ctx); err != nil {
			return err
		}
	}
	for {
		for _, b := range p.a.Bots() {
			if b.SelfID == obSelfID {
				return nil
			}
		}
		if !pause(ctx) {
			return ctx.Err()
		}
	}
}

// pause waits a moment for a state that has no notification; it reports
// false if ctx ended first.
func pause(ctx context.Context) bool {
	t := time.NewTimer(2 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *obPeer) User(n int) platform.User {
	return platform.User{ID: strconv.Itoa(3000 + n), Name: "User " + strconv.Itoa(n)}
}

func (p *obPeer) Chat(_ context.Context, n int, typ platform.ChatType) (platform.Chat, error) {
	switch typ {
	case platform.ChatPrivate:
		return PrivateChat(obSelfID, int64(3000+n)), nil
	case platform.ChatGroup:
		return GroupChat(obSelfID, int64(5000+n)), nil
	}
	return platform.Chat{}, fmt.Errorf("onebot peer: no chats of type %q", typ)
}

// Say sends a message event, its message as an array of segments.
func (p *obPeer) Say(ctx context.Context, chat platform.Chat, from platform.User, text string) error {
	_, id, err := ParseChatID(chat.ID)
	if err != nil {
		return err
	}
	userID, err := strconv.ParseInt(from.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("onebot peer: user ID %q: %w", from.ID, err)
	}
	return p.write(ctx, messageEvent(chat.Type, id, userID, from.Name, p.msgID.Add(1), Message{Text(text)}))
}

// messageEvent returns a message event of msg, numbered n, from user
// (named name) in a chat of typ whose QQ ID is id.
func messageEvent(typ platform.ChatType, id, user int64, name string, n int64, msg Message) map[string]any {
	ev := map[string]any{
		"time": time.Now().Unix(), "self_id": obSelfID, "post_type": "message",
		"message_id": n, "user_id": user, "font": 0, "message": msg,
		"sender": map[string]any{"user_id": user, "nickname": name},
	}
	if typ == platform.ChatGroup {
		ev["message_type"], ev["sub_type"], ev["group_id"] = "group", "normal", id
	} else {
		ev["message_type"], ev["sub_type"] = "private", "friend"
	}
	return ev
}

var _ adaptertest.FilePeer = (*obPeer)(nil)

// SayFile sends a message event of a file segment, as NapCat reports a
// received file (file, file_id, url, file_size), or of an image segment
// (file, url), followed by the caption as text. The file is served by
// fileSrv at the segment's url, with a query standing for the key QQ
// puts in its links.
func (p *obPeer) SayFile(ctx context.Context, chat platform.Chat, from platform.User, att platform.Attachment, data []byte) error {
	_, id, err := ParseChatID(chat.ID)
	if err != nil {
		return err
	}
	userID, err := strconv.ParseInt(from.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("onebot peer: user ID %q: %w", from.ID, err)
	}
	n := p.msgID.Add(1)
	path := fmt.Sprintf("/files/%d", n)
	p.mu.Lock()
	p.files[path] = slices.Clone(data)
	p.mu.Unlock()
	fileURL := p.fileSrv.URL + path + "?rkey=secret-key"
	var seg Segment
	switch att.Kind {
	case platform.AttachPhoto:
		seg = Segment{Type: "image", Data: map[string]string{"file": fmt.Sprintf("%X.png", n), "url": fileURL}}
	case platform.AttachDocument:
		seg = Segment{Type: "file", Data: map[string]string{"file": att.FileName, "file_id": fmt.Sprintf("/f-%d", n),
			"url": fileURL, "file_size": strconv.Itoa(len(data))}}
	default:
		return fmt.Errorf("onebot peer: no files of kind %q", att.Kind)
	}
	msg := Message{seg}
	if att.Caption != "" {
		msg = append(msg, Text(att.Caption))
	}
	return p.write(ctx, messageEvent(chat.Type, id, userID, from.Name, n, msg))
}

// serveFile serves a file a user sent, given the key of its link.
func (p *obPeer) serveFile(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	data, ok := p.files[r.URL.Path]
	p.mu.Unlock()
	if !ok || r.URL.Query().Get("rkey") != "secret-key" {
		http.NotFound(w, r)
		return
	}
	w.Write(data)
}

func (p *obPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	return p.inbox.Wait(ctx, chat.ID, n)
}

var _ adaptertest.ShowingPeer = (*obPeer)(nil)

// Shown returns the chat's messages as QQ shows them: without those the
// bot recalled.
func (p *obPeer) Shown(_ context.Context, chat platform.Chat) ([]platform.OutboundMessage, error) {
	return p.inbox.Shown(chat.ID), nil
}

func (p *obPeer) Inject(chat platform.Chat, f adaptertest.Fault) error {
	switch f.Kind {
	case adaptertest.FaultPermanent, adaptertest.FaultTransient, adaptertest.FaultStall:
	default:
		return fmt.Errorf("onebot peer: fault %v: %w", f.Kind, adaptertest.ErrUnsupported)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.Kind == adaptertest.FaultStall {
		p.stalls[chat.ID]++ // the next send takes it: see sending
		return nil
	}
	p.faults[chat.ID] = append(p.faults[chat.ID], f.Kind)
	return nil
}

// write sends v as a text frame, bounded by ctx's deadline.
func (p *obPeer) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.mu.Lock()
	ws := p.ws
	p.mu.Unlock()
	if ws == nil {
		return errors.New("onebot peer: not connected")
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	ws.SetWriteDeadline(deadline)
	return ws.WriteMessage(websocket.TextMessage, b)
}

// serve reads the adapter's actions until the connection closes, and
// answers each.
func (p *obPeer) serve(ws *websocket.Conn, done chan struct{}) {
	defer close(done)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var act struct {
			Action string          `json:"action"`
			Params json.RawMessage `json:"params"`
			Echo   json.RawMessage `json:"echo"`
		}
		if err := json.Unmarshal(data, &act); err != nil {
			p.fail(fmt.Sprintf("undecodable frame %s: %v", data, err))
			continue
		}
		answer := func(status string, retcode int, data any) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// A write fails only once the adapter has closed the
			// connection, and then nobody waits for the answer.
			_ = p.write(ctx, map[string]any{"status": status, "retcode": retcode, "data": data, "echo": act.Echo})
		}
		var params struct {
			UserID  int64   `json:"user_id"`
			GroupID int64   `json:"group_id"`
			Message Message `json:"message"`
		}
		var chatID string
		switch act.Action {
		case "delete_msg":
			p.recall(act.Params, answer)
			continue
		case "send_private_msg":
			err = json.Unmarshal(act.Params, &params)
			chatID = ChatID(obSelfID, params.UserID)
		case "send_group_msg":
			err = json.Unmarshal(act.Params, &params)
			chatID = ChatID(obSelfID, params.GroupID)
		default:
			answer("failed", 1404, nil)
			continue
		}
		if err != nil {
			p.fail(fmt.Sprintf("%s with undecodable params %s: %v", act.Action, act.Params, err))
			answer("failed", 1400, nil)
			continue
		}

		p.mu.Lock()
		var fault adaptertest.FaultKind
		if slices.Contains(p.stalled[chatID], params.Message.Text()) {
			fault = adaptertest.FaultStall
		} else if fs := p.faults[chatID]; len(fs) > 0 {
			fault, p.faults[chatID] = fs[0], fs[1:]
		}
		var id int64
		if fault == 0 {
			id = p.msgID.Add(1)
			p.chatOf[strconv.FormatInt(id, 10)] = chatID
			p.inbox.AddID(chatID, strconv.FormatInt(id, 10), p.outboundOfSegmentsLocked(params.Message))
		}
		p.mu.Unlock()

		switch fault {
		case 0:
			answer("ok", 0, map[string]any{"message_id": id})
		case adaptertest.FaultPermanent:
			answer("failed", 1403, nil)
		case adaptertest.FaultTransient:
			answer("failed", 100, nil)
		case adaptertest.FaultStall:
			// Never answered: the send's context ends first.
		}
	}
}

func (p *obPeer) fail(s string) {
	p.mu.Lock()
	p.errs = append(p.errs, s)
	p.mu.Unlock()
}

// recall answers a delete_msg action: a message the fake accepted is
// recalled (no longer shown) and the action answered ok with no data; any
// other is answered as go-cqhttp does, failed with retcode 100.
func (p *obPeer) recall(params json.RawMessage, answer func(status string, retcode int, data any)) {
	var del struct {
		MessageID json.Number `json:"message_id"`
	}
	if err := json.Unmarshal(params, &del); err != nil || del.MessageID == "" {
		p.fail(fmt.Sprintf("delete_msg with params %s: %v", params, err))
		answer("failed", 1400, nil)
		return
	}
	id := del.MessageID.String()
	p.mu.Lock()
	chatID, ok := p.chatOf[id]
	delete(p.chatOf, id)
	p.mu.Unlock()
	if !ok || !p.inbox.Delete(chatID, id) {
		answer("failed", 100, nil) // go-cqhttp: MESSAGE_NOT_FOUND
		return
	}
	answer("ok", 0, nil)
}

// segmentCarries lists, for each media segment type, the attachment kinds
// other than its own that it carries as a QQ user sees them: a voice
// message plays music as well as speech, and an image a GIF animation. A
// sticker needs no entry: it is an image of sub type 1.
var segmentCarries = map[string][]platform.AttachmentKind{
	"image":  {platform.AttachAnimation},
	"record": {platform.AttachAudio},
	"video":  {platform.AttachAnimation},
}

// outboundOfSegmentsLocked reads a sent message back into an
// OutboundMessage: its text segments make Text, a reply segment
// ReplyToID, and its media segments attachments (their bytes, URL or file
// ID from the file parameter). An image is a photo, or a sticker with
// sub type 1; a record is a voice note and a video a video, unless the
// send (noted by sending) asked for another kind the segment carries
// (segmentCarries), which QQ then shows as what the bot sent: a record
// sent for an audio file reads as the audio file. p.mu is held.
func (p *obPeer) outboundOfSegmentsLocked(m Message) platform.OutboundMessage {
	out := platform.OutboundMessage{Text: m.Text(), ReplyToID: m.ReplyTo()}
	for _, s := range m {
		var at platform.Attachment
		switch s.Type {
		case "image":
			at.Kind = platform.AttachPhoto
			if s.Data["subType"] == "1" || s.Data["sub_type"] == "1" {
				at.Kind = platform.AttachSticker
			}
		case "record":
			at.Kind = platform.AttachVoice
		case "video":
			at.Kind = platform.AttachVideo
		default:
			continue
		}
		file := s.Data["file"]
		if b64, ok := strings.CutPrefix(file, "base64://"); ok {
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				p.errs = append(p.errs, fmt.Sprintf("%s segment with bad base64: %v", s.Type, err))
			}
			at.Data = data
		} else if strings.Contains(file, "://") {
			at.URL = file
		} else {
			at.FileID = file
		}
		if kind, ok := p.kinds[string(at.Data)+at.URL+at.FileID]; ok && slices.Contains(segmentCarries[s.Type], kind) {
			at.Kind = kind
		}
		out.Attachments = append(out.Attachments, at)
	}
	return out
}
