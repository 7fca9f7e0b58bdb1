package webchat_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestIdleFloodDoesNotShutOutTabs holds three times the server's cap of
// connections open, idle after loading the page or never sending a
// request, and checks that the page still loads, a tab still connects,
// sends a message and gets the bot's reply, the server never holds more
// than its cap, and the idle connections are the ones it closed to make
// room.
func TestIdleFloodDoesNotShutOutTabs(t *testing.T) {
	// A WriteTimeout longer than the wait below: connections that never
	// send a request must be closed to make room, not for being slow.
	a, bot := start(t, webchat.Config{MaxConnections: 4, WriteTimeout: time.Minute})
	limit := webchat.ServerConnCap(a)
	flood := 3 * limit
	var (
		conns   []net.Conn
		closed  = make(chan struct{}, flood)
		readers sync.WaitGroup
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		readers.Wait()
	}()
	for i := range flood {
		c, err := net.Dial("tcp", a.Addr())
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		conns = append(conns, c)
		br := bufio.NewReader(c)
		if i%2 == 0 {
			// Load the page on a keep-alive connection, then stay idle.
			c.SetDeadline(time.Now().Add(ioTimeout))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", a.Addr())
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("page on flood connection %d: %v", i, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			c.SetDeadline(time.Time{})
		}
		readers.Go(func() {
			io.Copy(io.Discard, br) // until the server closes it
			closed <- struct{}{}
		})
	}

	pageClient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: ioTimeout}
	resp, err := pageClient.Get(a.URL())
	if err != nil {
		t.Fatalf("loading the page during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page during the flood: %s", resp.Status)
	}
	c := connect(t, a, hello{})
	c.say(t, "/ping")
	if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("tab during the flood got %q; want the echo and pong", got)
	}
	bot.checkNoErrors(t)

	// The server accepted every connection in turn, the tab's last, so by
	// now it has closed all but limit-1 of the flood.
	deadline := time.After(ioTimeout / 2)
	for range flood - limit + 1 {
		select {
		case <-closed:
		case <-deadline:
			t.Fatalf("after %v, fewer than %d of %d idle connections closed; the server holds them", ioTimeout/2, flood-limit+1, flood)
		}
	}
	open, evicted := webchat.ServerConns(a)
	if open > limit || evicted < uint64(flood-limit+1) {
		t.Errorf("server holds %d connections (cap %d), evicted %d", open, limit, evicted)
	}
	c.say(t, "/ping")
	if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("tab after the flood got %q", got)
	}
}

// bigText is the text of the messages that make a large history.
var bigText = strings.Repeat("x", 30<<10)

// fillRoom has the bot send the room chat messages of bigText until its
// history holds about size bytes, for the tab reader, which must be in
// the room and whose frames arrive on got; it returns how many it sent.
func fillRoom(t *testing.T, a *webchat.Adapter, room string, size int, got <-chan frame) int {
	t.Helper()
	n := size / len(bigText)
	for i := range n {
		if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
			Target: platform.Chat{ID: webchat.RoomChatID(room)}, Message: platform.TextMessage(bigText)}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if f := <-got; f.Message == nil || f.Message.Text != bigText {
			t.Fatalf("reader got %+v", f)
		}
	}
	return n
}

// readFrames reads ws's frames onto the returned channel until the
// connection fails, and then closes it.
func readFrames(ws *websocket.Conn) <-chan frame {
	got := make(chan frame, 16)
	ws.SetReadDeadline(time.Time{})
	go func() {
		defer close(got)
		for {
			var f frame
			if err := ws.ReadJSON(&f); err != nil {
				return
			}
			got <- f
		}
	}()
	return got
}

// liveHeap returns the bytes of live heap objects.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestNeverReadingTabsHoldLittle, in fake time over pipes (no kernel
// buffers at all): tabs that fetch a 3 MiB room history and never read
// hold little memory in the adapter (the history they are sent is the
// chat's, not a copy each), are closed exactly WriteTimeout after their
// writer's first blocked write, and another tab of the room keeps getting
// its messages meanwhile.
func TestNeverReadingTabsHoldLittle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			tabs         = 20
			writeTimeout = 5 * time.Second
		)
		a, ps, stop := runInBubble(t, webchat.Config{MaxConnections: tabs + 1, WriteTimeout: writeTimeout,
			PingInterval: 30 * time.Minute, PongWait: time.Hour}, func(platform.Event) error { return nil })
		reader := ps.dial(t)
		if err := reader.WriteJSON(map[string]string{"type": "hello", "room": "big"}); err != nil {
			t.Fatal(err)
		}
		got := readFrames(reader)
		if f := <-got; f.Type != "history" {
			t.Fatalf("reader got %+v", f)
		}
		n := fillRoom(t, a, "big", 3<<20, got)

		before := liveHeap()
		stuck := make([]*websocket.Conn, tabs)
		for i := range stuck {
			stuck[i] = ps.dial(t)
			if err := stuck[i].WriteJSON(map[string]string{"type": "hello", "room": "big"}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // every stuck tab's writer is blocked in its history
		if held := int64(liveHeap()) - int64(before); held > tabs*(256<<10) {
			t.Errorf("%d tabs that do not read hold %d KiB of heap (the history is %d KiB); want at most 256 KiB each",
				tabs, held>>10, n*len(bigText)>>10)
		}

		if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
			Target: platform.Chat{ID: webchat.RoomChatID("big")}, Message: platform.TextMessage("still here")}); err != nil {
			t.Fatal(err)
		}
		if f := <-got; f.Message == nil || f.Message.Text != "still here" {
			t.Fatalf("reader got %+v", f)
		}

		time.Sleep(writeTimeout - time.Millisecond)
		synctest.Wait()
		if open := webchat.OpenTabs(a); open != tabs+1 {
			t.Fatalf("%d tabs open before WriteTimeout passed; want %d", open, tabs+1)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if open := webchat.OpenTabs(a); open != 1 {
			t.Fatalf("%d tabs open once WriteTimeout passed; want only the reader", open)
		}

		if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
			Target: platform.Chat{ID: webchat.RoomChatID("big")}, Message: platform.TextMessage("after")}); err != nil {
			t.Fatal(err)
		}
		if f := <-got; f.Message == nil || f.Message.Text != "after" {
			t.Fatalf("reader got %+v", f)
		}
		stop()
		for range got {
		}
		reader.Close()
		for _, ws := range stuck {
			ws.Close()
		}
	})
}

// trickleConn is a tab's end of a connection that reads at most per bytes
// every every.
type trickleConn struct {
	net.Conn
	per, left int
	every     time.Duration
}

func (c *trickleConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		time.Sleep(c.every)
		c.left = c.per
	}
	n, err := c.Conn.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// TestSlowTabGetsLongHistory: a tab that takes its 3 MiB history slowly
// but steadily — 40 KiB every 3 s, so the whole takes minutes — gets all
// of it and stays connected: WriteTimeout bounds each chunk, not the
// whole frame, and pings go out between chunks, so the tab's pongs keep
// it within PongWait.
func TestSlowTabGetsLongHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, ps, stop := runInBubble(t, webchat.Config{WriteTimeout: 5 * time.Second,
			PingInterval: 10 * time.Second, PongWait: 25 * time.Second}, func(platform.Event) error { return nil })
		reader := ps.dial(t)
		if err := reader.WriteJSON(map[string]string{"type": "hello", "room": "big"}); err != nil {
			t.Fatal(err)
		}
		got := readFrames(reader)
		<-got
		n := fillRoom(t, a, "big", 3<<20, got)

		d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
			return &trickleConn{Conn: ps.Conn(), per: 40 << 10, every: 3 * time.Second}, nil
		}}
		slow, _, err := d.Dial("ws://webchat.test/ws", http.Header{"Origin": {"http://webchat.test"}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := slow.WriteJSON(map[string]string{"type": "hello", "room": "big"}); err != nil {
			t.Fatal(err)
		}
		var h frame
		if err := slow.ReadJSON(&h); err != nil {
			t.Fatalf("slow tab after %v: %v", time.Since(start), err)
		}
		if h.Type != "history" || len(h.Messages) != n {
			t.Fatalf("slow tab got a %s frame of %d messages; want the history of %d", h.Type, len(h.Messages), n)
		}
		if took := time.Since(start); took < time.Minute {
			t.Fatalf("the history took %v; the test means it to take minutes", took)
		}
		if open := webchat.OpenTabs(a); open != 2 {
			t.Errorf("%d tabs open; want the reader and the slow tab", open)
		}
		stop()
		for range got {
		}
		reader.Close()
		slow.Close()
	})
}
