package webchat

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// Bounds of a tab's connection.
const (
	// lingerTime and lingerBytes bound linger.
	lingerTime  = time.Second
	lingerBytes = 1 << 20

	// sendBuffer is the kernel send buffer (SO_SNDBUF) asked for each
	// connection; Linux doubles it for its bookkeeping. Left alone,
	// Linux grows it up to net.ipv4.tcp_wmem's 4 MiB for a tab that does
	// not read, so the whole of a large history left user space, where
	// QueueBytes and WriteTimeout bound it, for the kernel, where nothing
	// did: 200 such tabs of a room with a 3 MiB history held 590 MiB.
	sendBuffer = 64 << 10

	// writeChunk is the most a tab's writer hands its socket at once:
	// each piece of a frame gets a WriteTimeout deadline of its own.
	writeChunk = 32 << 10
)

// outFrame is one frame queued for a tab: its encoded bytes, or a history
// frame that the writer puts together as it writes it.
type outFrame struct {
	data []byte
	hist *historyFrame
}

// size returns the bytes of the frame.
func (f outFrame) size() int64 {
	if f.hist != nil {
		return int64(f.hist.size)
	}
	return int64(len(f.data))
}

// conn is one open tab: a WebSocket with one reader (the HTTP handler's
// goroutine) and one writer goroutine, which alone writes data frames, in
// the order they were queued on out.
type conn struct {
	a      *Adapter
	ws     *websocket.Conn
	tcp    *net.TCPConn // the TCP connection under ws, or nil if unknown
	remote string
	out    chan outFrame // frames to write, bounded by Config.QueueSize
	queued atomic.Int64  // bytes of the frames on out and being written, bounded by Config.QueueBytes
	done   chan struct{} // closed by shut: the writer stops

	shutOnce  sync.Once
	closeCode int    // set by shut before done is closed
	closeText string // set by shut before done is closed
	abrupt    bool   // set by shut: close at once, without flushing out

	// fileKey is the key the tab fetches its chat's files with (see
	// serveFile), valid while the tab is open.
	fileKey string
	// fileDeadline is the read deadline of the file frame being read,
	// zero when none is; only the reader (and the pong handler it runs)
	// uses it.
	fileDeadline time.Time

	// Session state, guarded by a.mu.
	chat *chatState // nil until hello
	user platform.User
}

// shut stops the connection. A graceful shut lets the writer flush the
// queued frames and send a close frame with code and text; an abrupt one
// closes the socket at once, which also unblocks a writer stuck on a slow
// peer. Only the first call has an effect; it never blocks.
func (c *conn) shut(code int, text string, abrupt bool) {
	c.shutOnce.Do(func() {
		c.closeCode, c.closeText, c.abrupt = code, text, abrupt
		close(c.done)
		if abrupt {
			c.ws.Close()
		}
	})
}

// enqueueLocked queues a frame for the writer without blocking and reports
// whether it fitted: the queue has room for one more frame (QueueSize) and
// for its bytes (QueueBytes), or is empty. The caller holds a.mu, which
// orders the frames of all conns of a chat the same way.
//
// INVARIANT: queued is at most max(QueueBytes, the largest frame queued).
// Only enqueueLocked adds to it, under a.mu, and the writer only
// subtracts, so the check and the add cannot be overtaken.
func (c *conn) enqueueLocked(f outFrame) bool {
	n := f.size()
	if q := c.queued.Load(); q > 0 && q+n > int64(c.a.cfg.QueueBytes) {
		return false
	}
	c.queued.Add(n)
	select {
	case c.out <- f:
		return true
	default:
		c.queued.Add(-n)
		return false
	}
}

// written takes a frame the writer has written, or failed to write, off
// the queued bytes.
func (c *conn) written(f outFrame) { c.queued.Add(-f.size()) }

// serveWS upgrades a request to a WebSocket and serves it until it closes.
func (a *Adapter) serveWS(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	switch {
	case !a.active:
		a.mu.Unlock()
		http.Error(w, "webchat: the chat is not running", http.StatusServiceUnavailable)
		return
	case len(a.open)+a.pending >= a.cfg.MaxConnections:
		// The refusal's goroutine is waited for like a tab's.
		a.conns.Add(1)
		a.mu.Unlock()
		defer a.conns.Done()
		a.refuseTab(w, r)
		return
	}
	a.pending++
	// Add happens under mu while active, and Run sets active to false under
	// mu before it waits, so no Add races with the Wait.
	a.conns.Add(1)
	a.mu.Unlock()
	defer a.conns.Done()

	ws, err := a.upgrader.Upgrade(w, r, nil)
	var tcp *net.TCPConn
	if err == nil {
		if tcp = a.tcpConnOf(ws.NetConn()); tcp != nil {
			tcp.SetWriteBuffer(sendBuffer)
		}
	}
	a.mu.Lock()
	a.pending--
	if err != nil { // the upgrader has answered the request
		a.mu.Unlock()
		return
	}
	if !a.active {
		a.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"),
			time.Now().Add(a.cfg.WriteTimeout))
		ws.Close()
		return
	}
	c := &conn{
		a:       a,
		ws:      ws,
		tcp:     tcp,
		remote:  r.RemoteAddr,
		out:     make(chan outFrame, a.cfg.QueueSize),
		done:    make(chan struct{}),
		fileKey: randomID(),
	}
	a.open[c] = struct{}{}
	a.fileKeys[c.fileKey] = c
	a.mu.Unlock()
	a.log.Debug("webchat: tab connected", zap.String("remote", c.remote))
	c.serve()
}

// refuseTab refuses a tab over MaxConnections: it answers the WebSocket
// request with a WebSocket that it closes at once with status 1013 (try
// again later) and a reason, which a page's script sees, where a refusal
// by HTTP status would look like a bot that cannot be reached. It then
// waits, at most lingerTime, for the tab to answer the close, so that
// closing the socket does not reset the connection and lose the close
// frame.
func (a *Adapter) refuseTab(w http.ResponseWriter, r *http.Request) {
	ws, err := a.upgrader.Upgrade(w, r, nil)
	if err != nil { // the upgrader has answered the request
		return
	}
	defer ws.Close()
	a.rlog.Warn("webchat: tab refused: too many open tabs",
		zap.Int("max", a.cfg.MaxConnections), zap.String("remote", r.RemoteAddr))
	text := fmt.Sprintf("too many open tabs (at most %d); close some", a.cfg.MaxConnections)
	if err := ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, text),
		time.Now().Add(a.cfg.WriteTimeout)); err != nil {
		return
	}
	ws.SetReadLimit(a.cfg.ReadLimit)
	ws.SetReadDeadline(time.Now().Add(lingerTime))
	for {
		if _, _, err := ws.NextReader(); err != nil {
			return
		}
	}
}

// discardIfTimeout calls discard if err is a write's timeout, and reports
// whether it was.
func (c *conn) discardIfTimeout(err error) bool {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		c.discard()
		return true
	}
	return false
}

// discard makes the coming close of the tab's socket discard what its
// kernel buffers still hold, and reset the connection: for a tab that
// stopped taking its data, whose close frame could not get through
// anyway. A graceful close would leave the kernel trying, for minutes, to
// deliver up to the whole send buffer to a peer that does not read.
func (c *conn) discard() {
	if c.tcp != nil {
		c.tcp.SetLinger(0)
	}
}

// serve runs the connection: it starts the writer, reads frames until the
// connection fails or is shut, then leaves the chat and waits for the
// writer.
func (c *conn) serve() {
	var writer sync.WaitGroup
	writer.Go(c.writeLoop)
	defer writer.Wait()
	defer c.a.leave(c)

	cfg := &c.a.cfg
	c.ws.SetReadLimit(cfg.readLimit())
	c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
	c.ws.SetPongHandler(func(string) error {
		if !c.fileDeadline.IsZero() {
			// A pong does not extend the time a file frame has.
			return c.ws.SetReadDeadline(c.fileDeadline)
		}
		return c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
	})
	for {
		in, err := c.readFrame()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
		ok := c.serveFrame(in)
		if in.large {
			in.up.release() // unless the file was kept
			c.a.releaseSlot()
		}
		if !ok {
			return
		}
	}
}

// serveFrame decodes and handles one frame, or answers it with an error
// frame; it reports false when it closed the connection, for a frame over
// ReadLimit that is not a file.
func (c *conn) serveFrame(in inFrame) bool {
	switch {
	case in.tooBig:
		c.overReadLimit(true)
		return false
	case in.large && (in.perr != nil || in.frame.Type != frameFile):
		c.overReadLimit(in.unread)
		return false
	case in.large:
		c.file(in.frame, in.up, in.over)
		return true
	case in.typ != websocket.TextMessage:
		fe := badFrame("binary frames are not supported; send JSON text")
		c.a.rlog.Debug("webchat: bad frame", zap.String("remote", c.remote), zap.Error(fe))
		c.sendError(fe)
		return true
	}
	f, err := decodeClientFrame(in.data)
	if err != nil {
		var fe *frameError
		errors.As(err, &fe)
		c.a.rlog.Debug("webchat: bad frame", zap.String("remote", c.remote), zap.Error(err))
		c.sendError(fe)
		return true
	}
	c.handle(f)
	return true
}

// readFailed shuts the connection after a read error. It takes the tab
// out of its chat first, so that by the time the tab sees its connection
// end, a send to a chat it was the last tab of fails with ErrNoConnection,
// and nothing more is queued after a close frame the library has sent.
func (c *conn) readFailed(err error) {
	c.a.mu.Lock()
	c.a.dropLocked(c)
	c.a.mu.Unlock()
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		// The library has sent close 1009 already. Closing the socket
		// while the rest of the big frame is unread would reset the
		// connection and could destroy that close frame before the tab
		// reads it, so discard what the tab still sends for a moment.
		c.a.rlog.Info("webchat: tab sent a frame over the read limit; closing it",
			zap.String("remote", c.remote), zap.Int64("limit", c.a.cfg.ReadLimit))
		c.linger()
	case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived):
		c.a.log.Debug("webchat: tab closed", zap.String("remote", c.remote))
	default:
		c.a.rlog.Debug("webchat: connection lost", zap.String("remote", c.remote), zap.Error(err))
	}
	c.shut(websocket.CloseNormalClosure, "", true)
}

// linger reads and discards what the peer still sends, for at most
// lingerTime and lingerBytes, so that closing the socket afterwards does
// not reset the connection and lose the close frame already sent.
func (c *conn) linger() {
	nc := c.ws.NetConn()
	nc.SetReadDeadline(time.Now().Add(lingerTime))
	io.Copy(io.Discard, io.LimitReader(nc, lingerBytes))
}

// writeLoop is the connection's only writer of data frames: it writes the
// queued frames in order and pings every PingInterval, until shut or a
// write fails. It closes the socket when it returns, which ends the reader.
func (c *conn) writeLoop() {
	defer c.ws.Close()
	cfg := &c.a.cfg
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case f := <-c.out:
			err := c.write(f, time.Time{}, ping.C)
			c.written(f)
			if err != nil {
				c.writeFailed(err)
				return
			}
		case <-ping.C:
			if err := c.ping(); err != nil {
				c.writeFailed(err)
				return
			}
		case <-c.done:
			if c.abrupt {
				return
			}
			deadline := time.Now().Add(cfg.WriteTimeout)
		flush:
			for {
				select {
				case f := <-c.out:
					err := c.write(f, deadline, nil)
					c.written(f)
					if err != nil {
						c.discardIfTimeout(err)
						return
					}
				default:
					break flush
				}
			}
			c.discardIfTimeout(c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(c.closeCode, c.closeText), deadline))
			return
		}
	}
}

// write writes f as one text message, handing the socket at most
// writeChunk bytes at a time. Each chunk gets a deadline WriteTimeout from
// the moment it is handed over, so that a tab is closed when it stops
// taking its data, not for needing more than WriteTimeout for a long
// history that it takes steadily; a non-zero deadline (the flush at
// shutdown) bounds the whole write instead. Between chunks it sends the
// pings that fall due on ping (nil for none), so that a tab receiving a
// long history keeps answering pings within PongWait.
func (c *conn) write(f outFrame, deadline time.Time, ping <-chan time.Time) error {
	setDeadline := func() {
		if deadline.IsZero() {
			c.ws.SetWriteDeadline(time.Now().Add(c.a.cfg.WriteTimeout))
		} else {
			c.ws.SetWriteDeadline(deadline)
		}
	}
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	put := func(p []byte) error {
		for len(p) > 0 {
			n := min(len(p), writeChunk)
			setDeadline()
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
			select {
			case <-ping:
				if err := c.ping(); err != nil {
					return err
				}
			default:
			}
		}
		return nil
	}
	if f.hist != nil {
		err = f.hist.each(put)
	} else {
		err = put(f.data)
	}
	if err != nil {
		return err
	}
	setDeadline()
	return w.Close() // writes what the writer still buffers
}

// ping sends a ping, bounded by WriteTimeout.
func (c *conn) ping() error {
	return c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.a.cfg.WriteTimeout))
}

// writeFailed takes the tab out of its chat, so that sends stop queueing
// for it, and closes its socket. A write that timed out means the tab
// stopped taking its data (it does not read, or its network is gone).
func (c *conn) writeFailed(err error) {
	c.a.mu.Lock()
	c.a.dropLocked(c)
	c.a.mu.Unlock()
	if c.discardIfTimeout(err) {
		c.a.rlog.Warn("webchat: tab stopped taking its data (a write waited WriteTimeout); closed it (it reconnects and reloads the history)",
			zap.String("remote", c.remote), zap.Duration("write_timeout", c.a.cfg.WriteTimeout))
	} else {
		c.a.rlog.Debug("webchat: write to tab failed", zap.String("remote", c.remote), zap.Error(err))
	}
	c.shut(websocket.CloseAbnormalClosure, "", true)
}

// leave removes c from the adapter and its chat and shuts it.
func (a *Adapter) leave(c *conn) {
	a.mu.Lock()
	a.dropLocked(c)
	a.mu.Unlock()
	c.shut(websocket.CloseNormalClosure, "", true)
	a.log.Debug("webchat: tab disconnected", zap.String("remote", c.remote))
}

// dropLocked removes c from the adapter and its chat; no frame is queued on
// it afterwards.
func (a *Adapter) dropLocked(c *conn) {
	delete(a.open, c)
	delete(a.fileKeys, c.fileKey)
	if c.chat != nil {
		delete(c.chat.conns, c)
	}
}

// slowLocked disconnects a tab whose queue is full (QueueSize frames or
// QueueBytes bytes).
func (a *Adapter) slowLocked(c *conn) {
	a.dropLocked(c)
	// No close frame: the socket is likely full, and mu is held.
	c.discard()
	c.shut(websocket.ClosePolicyViolation, "too slow", true)
	a.rlog.Warn("webchat: tab cannot keep up; disconnected it (it will reconnect and reload the history)",
		zap.String("remote", c.remote), zap.Int("queued_frames", len(c.out)), zap.Int64("queued_bytes", c.queued.Load()),
		zap.Int("queue_size", a.cfg.QueueSize), zap.Int("queue_bytes", a.cfg.QueueBytes))
}

// fanoutLocked queues frame for every tab of ch, disconnecting tabs whose
// queue is full, and returns how many tabs took it.
func (a *Adapter) fanoutLocked(ch *chatState, frame []byte) int {
	n := 0
	for c := range ch.conns {
		if c.enqueueLocked(outFrame{data: frame}) {
			n++
		} else {
			a.slowLocked(c)
		}
	}
	return n
}

// sendError queues an error frame for c.
func (c *conn) sendError(fe *frameError) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	c.errorLocked(fe.Code, fe.Text, fe.Ref)
}

// handle acts on one valid frame.
func (c *conn) handle(f clientFrame) {
	switch f.Type {
	case frameHello:
		c.hello(f)
	case frameMessage:
		c.message(f.Text, f.Ref)
	case frameCallback:
		c.callback(f.Data, f.MessageID, f.Ref)
	case frameName:
		c.rename(f.Name, f.Ref)
	case frameFile:
		c.file(f, nil, false)
	}
}

// rename changes the display name of the tab's user for later events.
func (c *conn) rename(name, ref string) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	if c.notJoinedLocked(ref) {
		return
	}
	c.user.Name = orDefault(name, defaultName)
}

// notJoinedLocked reports whether the tab has not sent hello yet, and if so
// tells it, answering the frame with the given ref.
func (c *conn) notJoinedLocked(ref string) bool {
	if c.chat != nil {
		return false
	}
	c.errorLocked(codeNotJoined, "send hello first", ref)
	return true
}

// errorLocked queues an error frame for c, answering the frame with the
// given ref ("" for none).
func (c *conn) errorLocked(code, text, ref string) {
	if !c.enqueueLocked(outFrame{data: encodeError(code, text, ref)}) {
		c.a.slowLocked(c)
	}
}

// hello joins the tab to its chat and sends it the chat's history. The
// history is queued and the tab added to the chat under one lock, so the
// tab gets every later message of the chat exactly once.
func (c *conn) hello(f clientFrame) {
	a := c.a
	chat := platform.Chat{ID: f.ChatID, Type: platform.ChatPrivate}
	if f.Room != "" {
		chat = platform.Chat{ID: RoomChatID(f.Room), Type: platform.ChatGroup, Title: f.Room}
	} else if chat.ID == "" {
		chat.ID = randomID()
	}
	user := platform.User{ID: f.UserID, Name: orDefault(f.Name, defaultName)}
	if user.ID == "" {
		user.ID = randomID()
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if c.chat != nil {
		c.errorLocked(codeAlreadyJoined, "hello may be sent once", f.Ref)
		return
	}
	if _, ok := a.open[c]; !ok { // shut meanwhile
		return
	}
	ch := a.chats.joinLocked(chat)
	msgs := make([][]byte, ch.history.len())
	for i := range msgs {
		msgs[i] = ch.history.at(i).msg
	}
	hist := newHistoryFrame(historyHead{
		Chat:      wireChat{ID: ch.chat.ID, Type: string(ch.chat.Type), Title: ch.chat.Title},
		User:      wireUser{ID: user.ID, Name: user.Name},
		Bot:       wireUser{ID: botUserID, Name: a.cfg.BotName},
		MaxText:   maxTextBytes,
		MaxUpload: a.maxUpload(),
		Keyboard:  ch.keyboard,
		FileKey:   c.fileKey,
	}, msgs)
	if !c.enqueueLocked(outFrame{hist: hist}) {
		a.slowLocked(c)
		return
	}
	ch.conns[c] = struct{}{}
	c.chat, c.user = ch, user
	a.log.Debug("webchat: tab joined", zap.String("remote", c.remote),
		zap.String("chat", ch.chat.ID), zap.String("user", user.ID))
}

// message passes a user's message to the bot and echoes it to every tab
// of the chat. The event is queued and the echo fanned out under one lock,
// so events and echoes have one order.
func (c *conn) message(text, ref string) {
	a := c.a
	id := a.nextMessageID()
	t := time.Now()

	a.mu.Lock()
	defer a.mu.Unlock()
	if c.notJoinedLocked(ref) {
		return
	}
	ch, user := c.chat, c.user
	msg, err := marshal(wireMessage{ID: id, From: wireUser{ID: user.ID, Name: user.Name}, Text: text, Time: t})
	if err != nil { // unreachable: strings and a current time always encode
		a.log.Error("webchat: encoding a message", zap.Error(err))
		return
	}
	ev := platform.Event{
		Platform:  DefaultName,
		Kind:      platform.EventMessage,
		Chat:      ch.chat,
		From:      user,
		Text:      text,
		MessageID: id,
		Time:      t,
	}
	if !a.queueEventLocked(c, ev, ref) {
		return
	}
	a.chats.pushLocked(ch, entry{id: id, msg: msg})
	a.fanoutLocked(ch, encodeMessageFrame(frameEcho, msg))
}

// callback passes a button press to the bot, if the button is one the bot
// sent in a message still kept in the chat's history.
func (c *conn) callback(data, messageID, ref string) {
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.notJoinedLocked(ref) {
		return
	}
	if e := c.chat.find(messageID); e == nil || !e.hasButton(data) {
		c.errorLocked(codeUnknownButton, "this button is no longer available", ref)
		return
	}
	queryID := a.presses.addLocked(c, messageID)
	if !a.queueEventLocked(c, platform.Event{
		Platform:  DefaultName,
		Kind:      platform.EventCallback,
		Chat:      c.chat.chat,
		From:      c.user,
		Text:      data,
		MessageID: messageID,
		QueryID:   queryID,
		Time:      time.Now(),
	}, ref) {
		a.presses.takeLocked(queryID)
	}
}

// queueEventLocked gives ev an ID and queues it for Run, or tells the tab,
// answering the frame with the given ref, that the bot is busy or
// stopping. It reports whether ev was queued.
func (a *Adapter) queueEventLocked(c *conn, ev platform.Event, ref string) bool {
	if !a.taking() {
		c.errorLocked(codeStopping, "the bot is shutting down and takes no more messages", ref)
		return false
	}
	ev.ID = a.nextEventIDLocked()
	select {
	case a.events <- ev:
		return true
	default:
		a.eventID-- // not used; keep IDs consecutive
		a.rlog.Warn("webchat: event buffer full; refused a tab's frame", zap.Int("buffer", a.cfg.EventBuffer))
		c.errorLocked(codeBusy, "the bot is busy; your message was not delivered, try again", ref)
		return false
	}
}

// randomID returns a new random chat or user ID (128 bits, hex).
func randomID() string { return rand.Text() }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
