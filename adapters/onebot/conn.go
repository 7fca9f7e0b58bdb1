package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/heraldbot/herald/platform"
)

// Reasons a connection is closed by the adapter.
var (
	errShutdown = errors.New("adapter shutting down")
	errReplaced = errors.New("replaced by a new connection of the same bot")
)

// conn is one WebSocket connection to a OneBot implementation (one bot
// account), carrying events in and actions out (the Universal role).
//
// Goroutines: serve runs the reader in the caller's goroutine and starts
// exactly one writer goroutine, the only code that writes data frames and
// pings (gorilla allows one concurrent writer; Close and WriteControl, used
// by close, may run concurrently with it). serve returns only after the
// writer has stopped. close may be called from any goroutine, any number of
// times.
type conn struct {
	a      *Adapter
	ws     *websocket.Conn
	log    *zap.Logger
	remote string
	since  time.Time

	selfID    atomic.Int64 // 0 until known (forward mode, before the first event)
	heartbeat atomic.Int64 // the last heartbeat's interval, in nanoseconds

	out       chan []byte   // frames for the writer; unbuffered
	done      chan struct{} // closed by close
	closeOnce sync.Once
	closeErr  error // why; written before done is closed

	mu      sync.Mutex
	pending map[string]chan actionResponse // by echo
}

func newConn(a *Adapter, ws *websocket.Conn, remote string, selfID int64) *conn {
	c := &conn{
		a:       a,
		ws:      ws,
		log:     a.log.With(zap.String("remote", remote)),
		remote:  remote,
		since:   time.Now(),
		out:     make(chan []byte),
		done:    make(chan struct{}),
		pending: make(map[string]chan actionResponse),
	}
	c.selfID.Store(selfID)
	return c
}

// serve runs the connection until it closes: the reader here, the writer
// in a goroutine it waits for. Every pending action fails when it returns.
func (c *conn) serve() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	err := c.readLoop()
	c.close(err)
	wg.Wait()
	c.log.Info("onebot: connection closed", zap.Int64("self_id", c.selfID.Load()), zap.NamedError("reason", c.closeErr))
}

// close closes the connection once, for reason: pending actions fail with
// ErrConnectionLost, the reader and writer stop.
func (c *conn) close(reason error) {
	c.closeOnce.Do(func() {
		c.closeErr = c.a.red.Error(reason) // logged, and in pending sends' errors
		close(c.done)
		code, text := websocket.CloseGoingAway, "shutting down"
		if errors.Is(reason, errReplaced) {
			code, text = websocket.ClosePolicyViolation, "replaced by a new connection"
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text),
			time.Now().Add(min(c.a.cfg.WriteTimeout, time.Second)))
		_ = c.ws.Close()
	})
}

// closed reports whether close has been called.
func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) readDeadline() time.Time {
	return time.Now().Add(2 * c.a.cfg.PingInterval)
}

func (c *conn) readLoop() error {
	c.ws.SetReadLimit(c.a.cfg.ReadLimit)
	keepAlive := c.a.cfg.PingInterval > 0
	if keepAlive {
		_ = c.ws.SetReadDeadline(c.readDeadline())
		c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(c.readDeadline()) })
	}
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if keepAlive {
			_ = c.ws.SetReadDeadline(c.readDeadline())
		}
		c.handleFrame(data)
	}
}

func (c *conn) writeLoop() {
	var ping <-chan time.Time
	if c.a.cfg.PingInterval > 0 {
		t := time.NewTicker(c.a.cfg.PingInterval)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case <-c.done:
			return
		case frame := <-c.out:
			_ = c.ws.SetWriteDeadline(time.Now().Add(c.a.cfg.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				c.close(fmt.Errorf("write: %w", err))
				return
			}
		case <-ping:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.a.cfg.WriteTimeout)); err != nil {
				c.close(fmt.Errorf("ping: %w", err))
				return
			}
		}
	}
}

// rateLog writes a line about one frame through the adapter's rate-limited
// log (see Config.Logger), with the connection's remote address and self
// ID: a peer can send any number of frames, and one line each would let
// it flood the log.
func (c *conn) rateLog(level zapcore.Level, msg string, fields ...zap.Field) {
	fields = append(fields, zap.String("remote", c.remote), zap.Int64("self_id", c.selfID.Load()))
	switch level {
	case zapcore.DebugLevel:
		c.a.rl.Debug(msg, fields...)
	case zapcore.InfoLevel:
		c.a.rl.Info(msg, fields...)
	default:
		c.a.rl.Warn(msg, fields...)
	}
}

// clip shortens a string a peer sent for a log line.
func clip(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// excerpt returns the start of a frame for a log line.
func (c *conn) excerpt(data []byte) string {
	const n = 200
	s := string(data)
	if len(data) > n {
		s = string(data[:n]) + "…"
	}
	return c.a.red.String(s)
}

// handleFrame routes one inbound frame: an event (it has post_type) or an
// action response (it has echo or status). Anything else is logged (rate
// limited) and skipped; the connection stays up.
func (c *conn) handleFrame(data []byte) {
	var probe struct {
		PostType json.RawMessage `json:"post_type"`
		Echo     json.RawMessage `json:"echo"`
		Status   json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		c.rateLog(zapcore.WarnLevel, "onebot: malformed frame skipped", zap.Error(c.a.red.Error(err)), zap.String("frame", c.excerpt(data)))
		return
	}
	switch {
	case probe.PostType != nil:
		c.handleEvent(data)
	case probe.Echo != nil || probe.Status != nil:
		c.handleResponse(data)
	default:
		c.rateLog(zapcore.WarnLevel, "onebot: malformed frame skipped", zap.String("error", "neither an event nor an action response"), zap.String("frame", c.excerpt(data)))
	}
}

func (c *conn) handleEvent(data []byte) {
	ev, err := DecodeEvent(data)
	if err != nil {
		c.rateLog(zapcore.WarnLevel, "onebot: malformed frame skipped", zap.Error(c.a.red.Error(err)), zap.String("frame", c.excerpt(data)))
		return
	}
	c.learnSelfID(ev.SelfID)
	if ev.PostType == PostMetaEvent {
		switch ev.MetaEventType {
		case "heartbeat":
			c.heartbeat.Store(int64(time.Duration(ev.Interval) * time.Millisecond))
			c.rateLog(zapcore.DebugLevel, "onebot: heartbeat", zap.Int64("interval_ms", ev.Interval))
		case "lifecycle":
			c.rateLog(zapcore.InfoLevel, "onebot: lifecycle", zap.String("sub_type", clip(ev.SubType)))
		default:
			c.rateLog(zapcore.DebugLevel, "onebot: meta event skipped", zap.String("meta_event_type", clip(ev.MetaEventType)))
		}
		return
	}
	out, ok := toPlatform(c.a.Name(), ev, c.selfID.Load(), c.a.nextSeq())
	if ok {
		c.a.deliver(out)
	}
}

// learnSelfID takes the bot's self ID from an event. A reverse connection
// knows it from X-Self-ID; a forward connection learns it from the first
// event that carries one (the lifecycle connect event, normally) and is then
// registered under it so Send can route to it.
func (c *conn) learnSelfID(id int64) {
	if id <= 0 {
		return
	}
	cur := c.selfID.Load()
	if cur == id {
		return
	}
	if cur != 0 {
		c.rateLog(zapcore.WarnLevel, "onebot: event self_id differs from the connection's", zap.Int64("event_self_id", id))
		return
	}
	learned, old := c.a.identify(c, id)
	if !learned {
		return
	}
	c.log.Info("onebot: bot identified", zap.Int64("self_id", id))
	if old != nil {
		old.close(errReplaced)
	}
}

// actionRequest is an action frame.
type actionRequest struct {
	Action string `json:"action"`
	Params any    `json:"params"`
	Echo   string `json:"echo"`
}

// actionResponse is a decoded response frame.
type actionResponse struct {
	Status  string
	RetCode int64
	Data    json.RawMessage
	Message string
}

func (c *conn) handleResponse(data []byte) {
	var w struct {
		Status  flexString      `json:"status"`
		RetCode flexInt         `json:"retcode"`
		Data    json.RawMessage `json:"data"`
		Msg     flexString      `json:"msg"`
		Wording flexString      `json:"wording"`
		Echo    json.RawMessage `json:"echo"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		c.rateLog(zapcore.WarnLevel, "onebot: malformed frame skipped", zap.Error(c.a.red.Error(err)), zap.String("frame", c.excerpt(data)))
		return
	}
	echo := jsonText(w.Echo)
	c.mu.Lock()
	ch, ok := c.pending[echo]
	delete(c.pending, echo)
	c.mu.Unlock()
	if !ok {
		c.rateLog(zapcore.DebugLevel, "onebot: response for no pending action (late or unknown echo)", zap.String("echo", clip(echo)))
		return
	}
	msg := string(w.Wording)
	if msg == "" {
		msg = string(w.Msg)
	}
	ch <- actionResponse{Status: string(w.Status), RetCode: int64(w.RetCode), Data: w.Data, Message: msg} // buffered, never blocks
}

// call sends an action and waits for its response, for ActionTimeout, ctx's
// end or the connection's loss, whichever comes first. Many calls may be in
// flight at once; responses are matched by echo. The frame counts as
// written once the writer has taken it: the writer writes each frame as
// soon as it takes it, so a connection lost after that may have carried
// it. A failure before the frame was written certainly sent nothing; one
// after it matches platform.ErrMaybeDelivered.
func (c *conn) call(ctx context.Context, action string, params any) (actionResponse, error) {
	echo := strconv.FormatUint(c.a.echo.Add(1), 10)
	frame, err := json.Marshal(actionRequest{Action: action, Params: params, Echo: echo})
	if err != nil {
		return actionResponse{}, fmt.Errorf("onebot: %s: encode: %w", action, err)
	}
	ch := make(chan actionResponse, 1)
	c.mu.Lock()
	c.pending[echo] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, echo)
		c.mu.Unlock()
	}()

	timeout := c.a.cfg.ActionTimeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case c.out <- frame:
	case <-c.done:
		return actionResponse{}, c.lostError(action, false)
	case <-ctx.Done():
		return actionResponse{}, fmt.Errorf("onebot: %s: %w", action, ctx.Err())
	case <-timer.C:
		// Not written: the writer was stuck for the whole timeout. Nothing
		// was sent, so this is an ordinary retryable error.
		return actionResponse{}, fmt.Errorf("onebot: %s: connection could not write within %v", action, timeout)
	}
	// Written: from here on every failure leaves it open whether the
	// implementation sent the message, and matches ErrMaybeDelivered. A
	// response that arrived as the wait ended wins.
	var fail error
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		fail = c.lostError(action, true)
	case <-ctx.Done():
		// Often a per-attempt timeout (the Timeout sender middleware)
		// shorter than ActionTimeout: as ambiguous as ErrActionTimeout.
		fail = platform.MaybeDelivered(fmt.Errorf("onebot: %s: %w (the message may have been delivered)", action, ctx.Err()))
	case <-timer.C:
		fail = &timeoutError{action: action, after: timeout}
	}
	select {
	case r := <-ch:
		return r, nil
	default:
		return actionResponse{}, fail
	}
}

// lostError is ErrConnectionLost with the close reason, for an action
// whose frame was handed to the writer (written) or not; call it only after
// done is closed.
func (c *conn) lostError(action string, written bool) error {
	return &lostError{action: action, reason: c.closeErr, written: written}
}
